//! What a conversation needs from its host and hands back: the tool host (the driver, which
//! owns the files and the sandbox), the rendered prompts, the protocols, the limits, and the
//! outcome of one proposal.

use crate::{ParamSpace, Params, ProposedChange, Usage};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// Set to abandon the conversation (Ctrl-C, SIGTERM): an in-flight request is dropped at once.
pub type Cancel = Arc<AtomicBool>;

/// The result of building and testing the scratch tree.
#[derive(Debug, Clone)]
pub struct BuildReport {
    pub passed: bool,
    /// A short report, errors trimmed to what matters.
    pub text: String,
}

/// What the agent can do to its scratch tree. Implemented by the driver, which owns the sandbox.
#[async_trait::async_trait]
pub trait ToolHost: Send {
    /// Editable and readable files of the scratch tree.
    fn list_files(&self) -> Vec<String>;
    fn read_file(&self, path: &str) -> Result<String, String>;
    /// Refused (with a reason for the model) for a path that is not editable.
    fn write_file(&mut self, path: &str, content: &str) -> Result<(), String>;
    /// Whether the model may change `path`.
    fn is_editable(&self, path: &str) -> bool;
    async fn build_and_test(&mut self) -> BuildReport;
    /// Editable files that differ from the incumbent.
    fn changed_files(&self) -> BTreeMap<String, String>;
    /// Why an assignment of the task's parameters is not one it allows (a value not declared,
    /// a constraint broken) or no change (the incumbent's own), for the model to correct
    /// before anything is submitted.
    fn check_params(&self, params: &Params) -> Result<(), String>;
    /// The incumbent's parameter space, `None` for a task without parameters (or one whose
    /// space could not be read, which `check_params` then says).
    fn param_space(&self) -> Option<&ParamSpace>;
    /// Every editable file with its current content (for a model that starts over in a new
    /// protocol), or `None` when they are too large to show whole.
    fn editable_files(&self) -> Option<BTreeMap<String, String>>;
}

/// The rendered prompts for one proposal.
#[derive(Debug, Clone)]
pub struct Prompts {
    pub system_tools: String,
    pub system_text: String,
    pub system_whole_file: String,
    pub task: String,
    /// Template for feedback, with `{{message}}`.
    pub feedback: String,
    /// Template for the one corrective message, with `{{why}}`.
    pub nudge: String,
    /// Template for starting over in a simpler protocol, with `{{why}}` and `{{files}}`.
    pub switch: String,
    /// The focused protocol's one system prompt.
    pub system_focused: String,
    /// Template for its repair turn, with `{{why}}` (the error) and `{{files}}` (as they are).
    pub repair: String,
    /// Its repair turn when the reply changed nothing: asks for one real change.
    pub unchanged: String,
    /// Its last request, for a task with parameters, after two replies that changed nothing or
    /// a change whose repair failed: new parameter values alone, `{{why}}` filled in when sent.
    pub params_only: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// OpenAI tool calling (calls written in the text are taken too).
    Tools,
    /// SEARCH/REPLACE blocks and BUILD / SUBMIT lines, for servers without tool calling.
    Text,
    /// The whole new content of a file in a fenced block, over several turns.
    WholeFile,
    /// One request answered by one change (blocks or a whole file), built and tested at once,
    /// and one repair turn with the error: what small models can follow.
    Focused,
}

impl Protocol {
    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::Tools => "tools",
            Protocol::Text => "text",
            Protocol::WholeFile => "whole-file",
            Protocol::Focused => "focused",
        }
    }

    /// The protocol a `--agent-protocol` name stands for.
    pub fn parse(name: &str) -> Option<Protocol> {
        [
            Protocol::Tools,
            Protocol::Text,
            Protocol::WholeFile,
            Protocol::Focused,
        ]
        .into_iter()
        .find(|p| p.as_str() == name)
    }

    /// The protocol a conversation that goes nowhere in this one falls back to: the focused
    /// one, which has no fallback of its own.
    pub(super) fn fallback(self) -> Option<Protocol> {
        (self != Protocol::Focused).then_some(Protocol::Focused)
    }
}

#[derive(Debug, Clone)]
pub struct Limits {
    pub max_turns: usize,
    /// Prompt plus completion tokens for one proposal.
    pub max_tokens: u64,
    pub temperature: f64,
    /// `max_tokens` of each reply, sent when set: local servers default to a few hundred, too
    /// few for a whole file.
    pub reply_tokens: Option<u64>,
    /// Wall-clock time one proposal may take, requests and builds together.
    pub wall: std::time::Duration,
    /// The model's context window in tokens, when known: no prompt is sent past it.
    pub window: Option<u64>,
}

/// How a proposal attempt ended.
#[derive(Debug)]
pub struct Outcome {
    /// The change submitted, if any.
    pub change: Option<ProposedChange>,
    pub rationale: String,
    /// Usage, with the protocol the change came from.
    pub usage: Usage,
    /// How it ended, for the log and the candidate's note.
    pub ended: String,
    /// The protocol the conversation was in when it ended.
    pub protocol: Protocol,
}
