//! The driver of the LLM coding agent: its settings (OPENAI_BASE_URL, OPENAI_API_KEY,
//! POLYMORPH_MODEL and flags), the prompts (prompts/*.txt, overridable per task), and the
//! scratch tree the agent edits, whose build-and-test runs through the same sandbox as every
//! evaluation. What the agent submits is then verified like any other candidate.

use crate::context::Workload;
use crate::evaluate::Harness;
use crate::task::Task;
use agent::llm::{self, Limits, ModelClient, Prompts, Protocol, ToolHost};
use agent::{AgentError, Proposal, ProposalContext, ProposedChange, Proposer};
use anyhow::{Result, bail};
use sandbox::{CancelFlag, FileTree, RelPath, Runner};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// Environment variables, as every OpenAI-compatible client names them.
pub const ENV_BASE_URL: &str = "OPENAI_BASE_URL";
pub const ENV_API_KEY: &str = "OPENAI_API_KEY";
pub const ENV_MODEL: &str = "POLYMORPH_MODEL";

/// Model used when none is named: any server maps or rejects it with a clear message.
const DEFAULT_MODEL: &str = "gpt-4o-mini";
/// Base URL when only a key is configured.
const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
/// Part of a build or test failure shown to the model: the first errors matter most.
const FEEDBACK_CAP: usize = 3_000;
/// Largest file the agent may write into its scratch tree (the sandbox's cap too).
const MAX_WRITE_BYTES: usize = 1 << 20;

const SYSTEM_TOOLS: &str = include_str!("../prompts/system.txt");
const SYSTEM_TEXT: &str = include_str!("../prompts/system_text.txt");
const TASK: &str = include_str!("../prompts/task.txt");
const FEEDBACK: &str = include_str!("../prompts/feedback.txt");

#[derive(Debug, Clone)]
pub struct AgentSettings {
    pub base_url: String,
    pub api_key: Option<String>,
    pub model: String,
    pub protocol: Protocol,
    pub request_timeout: Duration,
    pub max_turns: usize,
    pub max_tokens_per_proposal: u64,
    /// Tokens for the whole run; the agent stops proposing past it.
    pub token_budget: u64,
    pub temperature: f64,
}

impl AgentSettings {
    /// Whether an endpoint is configured in the environment (what `--proposer auto` checks).
    pub fn configured() -> bool {
        [ENV_BASE_URL, ENV_API_KEY]
            .iter()
            .any(|k| std::env::var(k).is_ok_and(|v| !v.is_empty()))
    }

    pub fn from_env(
        model: Option<String>,
        protocol: &str,
        request_timeout_s: u64,
        token_budget: u64,
    ) -> Result<Self> {
        let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        let base_url = env(ENV_BASE_URL).unwrap_or_else(|| DEFAULT_BASE_URL.to_string());
        let protocol = match protocol {
            "tools" => Protocol::Tools,
            "text" => Protocol::Text,
            other => bail!("--agent-protocol {other:?}: expected tools or text"),
        };
        if request_timeout_s == 0 {
            bail!("--request-timeout must be at least 1 second");
        }
        Ok(AgentSettings {
            base_url,
            api_key: env(ENV_API_KEY),
            model: model
                .or_else(|| env(ENV_MODEL))
                .unwrap_or_else(|| DEFAULT_MODEL.to_string()),
            protocol,
            request_timeout: Duration::from_secs(request_timeout_s),
            max_turns: 24,
            max_tokens_per_proposal: 200_000,
            token_budget,
            temperature: 0.2,
        })
    }
}

/// A prompt: the task's own `prompts/NAME` if it has one, else the built-in file.
fn prompt(task: &Task, name: &str, builtin: &str) -> String {
    std::fs::read_to_string(task.dir.join("prompts").join(name))
        .unwrap_or_else(|_| builtin.to_string())
}

fn render(template: &str, vars: &[(&str, String)]) -> String {
    vars.iter().fold(template.to_string(), |t, (k, v)| {
        t.replace(&format!("{{{{{k}}}}}"), v)
    })
}

/// The scratch tree the agent edits.
struct Scratch<'a> {
    task: &'a Task,
    source: &'a FileTree,
    runner: &'a Runner,
    cancel: CancelFlag,
    workload: Option<&'a Workload>,
    tree: FileTree,
    original: BTreeMap<String, String>,
    process_time: Duration,
}

fn trim_feedback(text: &str) -> String {
    // Compiler errors first, then the tail: what a person would look at.
    let important: Vec<&str> = text
        .lines()
        .filter(|l| {
            ["error", "Error", "FAIL", "warning"]
                .iter()
                .any(|k| l.contains(k))
        })
        .collect();
    let mut out = important.join("\n");
    if out.len() < FEEDBACK_CAP / 2 {
        let tail: String = text
            .chars()
            .rev()
            .take(FEEDBACK_CAP / 2)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        out.push_str("\n...\n");
        out.push_str(&tail);
    }
    out.chars().take(FEEDBACK_CAP).collect()
}

#[async_trait::async_trait]
impl ToolHost for Scratch<'_> {
    fn list_files(&self) -> Vec<String> {
        self.tree.iter().map(|(p, _)| p.to_string()).collect()
    }

    fn read_file(&self, path: &str) -> Result<String, String> {
        let p = RelPath::new(path).map_err(|e| e.to_string())?;
        let bytes = self
            .tree
            .get(&p)
            .ok_or_else(|| format!("no file {path}; list_files shows what exists"))?;
        String::from_utf8(bytes.to_vec()).map_err(|_| format!("{path} is not text"))
    }

    fn write_file(&mut self, path: &str, content: &str) -> Result<(), String> {
        let p = RelPath::new(path).map_err(|e| e.to_string())?;
        if !self.task.is_editable(&p) {
            return Err(format!(
                "{path} is protected: only {} may change",
                self.task.editable_globs.join(", ")
            ));
        }
        if content.len() > MAX_WRITE_BYTES || content.contains('\0') {
            return Err(format!(
                "{path}: content must be text under {MAX_WRITE_BYTES} bytes"
            ));
        }
        self.tree.insert(p, content.as_bytes().to_vec());
        Ok(())
    }

    async fn build_and_test(&mut self) -> String {
        let started = Instant::now();
        let tree = self.tree.clone();
        let result = tokio::task::block_in_place(|| {
            let mut h = Harness::new(
                self.task,
                self.source,
                self.runner,
                self.cancel.clone(),
                self.workload,
            )
            .map_err(|e| format!("{e:#}"))?;
            h.prepare(tree)
                .map(|_| ())
                .map_err(|f| format!("{}\n{}", f.reason, f.log.unwrap_or_default()))
        });
        self.process_time += started.elapsed();
        match result {
            Ok(()) => "ok: it builds and the correctness test passes".to_string(),
            Err(e) => trim_feedback(&e),
        }
    }

    fn changed_files(&self) -> BTreeMap<String, String> {
        self.tree
            .iter()
            .filter(|(p, _)| self.task.is_editable(p))
            .map(|(p, b)| (p.to_string(), String::from_utf8_lossy(b).into_owned()))
            .filter(|(p, c)| self.original.get(p) != Some(c))
            .collect()
    }
}

pub struct AgentProposer<'a> {
    settings: AgentSettings,
    client: ModelClient,
    task: &'a Task,
    source: &'a FileTree,
    runner: &'a Runner,
    cancel: CancelFlag,
    workload: Option<&'a Workload>,
    context: String,
    used_tokens: u64,
    label: String,
}

impl<'a> AgentProposer<'a> {
    pub fn new(
        settings: AgentSettings,
        task: &'a Task,
        source: &'a FileTree,
        runner: &'a Runner,
        cancel: CancelFlag,
        workload: Option<&'a Workload>,
        context: String,
    ) -> Result<Self> {
        let client = ModelClient::new(
            &settings.base_url,
            settings.api_key.as_deref(),
            &settings.model,
            settings.request_timeout,
        )?;
        let label = format!("agent({})", settings.model);
        Ok(AgentProposer {
            settings,
            client,
            task,
            source,
            runner,
            cancel,
            workload,
            context,
            used_tokens: 0,
            label,
        })
    }

    fn prompts(&self, ctx: &ProposalContext) -> Prompts {
        let t = self.task;
        let score = |s: Option<f64>| {
            s.map_or("not measured yet".to_string(), |v| {
                format!("{v:.4} {}", t.metric.name)
            })
        };
        let params = match &t.params {
            Some(p) => {
                let space: Vec<String> = p
                    .values
                    .iter()
                    .map(|(k, v)| format!("{k} in {}", serde_json::Value::from(v.clone())))
                    .collect();
                let constraints: Vec<String> = p.constraints.values().cloned().collect();
                format!(
                    "{}; constraints: {}; current: {}",
                    space.join(", "),
                    if constraints.is_empty() {
                        "none".to_string()
                    } else {
                        constraints.join(" and ")
                    },
                    ctx.incumbent_params
                        .as_ref()
                        .map_or("-".to_string(), |p| serde_json::to_string(p)
                            .unwrap_or_default())
                )
            }
            None => "none (edit the code)".to_string(),
        };
        let files: String = ctx
            .incumbent_files
            .iter()
            .map(|(p, c)| format!("--- {p} ---\n{c}\n"))
            .collect();
        let vars = [
            ("task_name", t.name.clone()),
            ("description", t.description.clone()),
            ("metric", t.metric.name.clone()),
            (
                "direction",
                format!(
                    "{}, higher is {}",
                    t.metric.direction.as_str(),
                    if t.metric.direction == crate::task::Direction::Maximize {
                        "better"
                    } else {
                        "worse"
                    }
                ),
            ),
            ("min_gain", format!("{:.1}%", t.metric.min_gain * 100.0)),
            ("context", self.context.clone()),
            ("incumbent_score", score(ctx.incumbent_score)),
            ("hand_tuned", score(ctx.reference_score)),
            ("editable", t.editable_globs.join(", ")),
            ("params", params),
            ("history", ctx.history.clone()),
            ("files", files),
        ];
        let system = match self.settings.protocol {
            Protocol::Tools => prompt(t, "system.txt", SYSTEM_TOOLS),
            Protocol::Text => prompt(t, "system_text.txt", SYSTEM_TEXT),
        };
        Prompts {
            system: render(&system, &vars),
            task: render(&prompt(t, "task.txt", TASK), &vars),
            feedback: prompt(t, "feedback.txt", FEEDBACK),
        }
    }
}

#[async_trait::async_trait]
impl Proposer for AgentProposer<'_> {
    fn name(&self) -> &str {
        "agent"
    }

    fn wants_history(&self) -> bool {
        true
    }

    async fn next(&mut self, ctx: &ProposalContext) -> Result<Option<Proposal>, AgentError> {
        if self.used_tokens >= self.settings.token_budget {
            tracing::warn!(
                used = self.used_tokens,
                budget = self.settings.token_budget,
                "the run's token budget is spent"
            );
            return Ok(None);
        }
        let mut tree = self.source.clone();
        for (p, c) in &ctx.incumbent_files {
            if let Ok(p) = RelPath::new(p) {
                tree.insert(p, c.as_bytes().to_vec());
            }
        }
        let mut scratch = Scratch {
            task: self.task,
            source: self.source,
            runner: self.runner,
            cancel: self.cancel.clone(),
            workload: self.workload,
            tree,
            original: ctx.incumbent_files.clone(),
            process_time: Duration::ZERO,
        };
        let prompts = self.prompts(ctx);
        let limits = Limits {
            max_turns: self.settings.max_turns,
            max_tokens: self
                .settings
                .max_tokens_per_proposal
                .min(self.settings.token_budget - self.used_tokens),
            temperature: self.settings.temperature,
        };
        let outcome = llm::propose(
            &self.client,
            self.settings.api_key.as_deref(),
            &mut scratch,
            &prompts,
            self.settings.protocol,
            &limits,
            self.task.params.is_some(),
        )
        .await
        .map_err(|e| AgentError::Model(e.to_string()))?;
        let mut usage = outcome.usage;
        usage.process_ms = scratch.process_time.as_millis() as u64;
        self.used_tokens += usage.prompt_tokens + usage.completion_tokens;
        // A conversation that ends without a submission is still recorded, as an empty change.
        let (change, note) = match outcome.change {
            Some(c) => (c, outcome.rationale),
            None => (
                ProposedChange::Files(BTreeMap::new()),
                format!("the agent did not submit: {}", outcome.ended),
            ),
        };
        Ok(Some(Proposal {
            change,
            note: Some(note).filter(|n| !n.is_empty()),
            origin: self.label.clone(),
            usage: Some(usage),
        }))
    }
}
