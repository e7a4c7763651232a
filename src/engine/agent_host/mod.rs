//! The driver of the LLM coding agent: its settings (OPENAI_BASE_URL, OPENAI_API_KEY,
//! POLYMORPH_MODEL and flags), the prompts (prompts/*.txt, overridable per task), and the
//! scratch tree the agent edits, whose build-and-test runs through the same sandbox as every
//! evaluation. What the agent submits is then verified like any other candidate.

mod fold;
mod prompts;
mod scratch;
mod settings;

pub use settings::{AgentSettings, ENV_API_KEY, ENV_BASE_URL, ENV_MODEL, keep_api_key};

use crate::task::{Task, Workload};
use anyhow::Result;
use fold::Folds;
use prompts::prompts;
use proposers::llm::{self, Limits, ModelClient, Prompts, Protocol};
use proposers::{AgentError, Proposal, ProposalContext, ProposedChange, Proposer};
use sandbox::{CancelFlag, FileTree, RelPath, Runner};
use scratch::{Scratch, Shared};
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

/// The fewest tokens a reply may use: a whole small file, which a server's own default (often
/// 512 tokens) cuts short.
const MIN_REPLY_TOKENS: u64 = 1024;
/// Tokens of prose and markup allowed around the files written whole.
const REPLY_MARGIN: u64 = 256;
/// Characters a token, for sizing a reply of code: fewer than tokenizers manage on C
/// (Qwen2.5's took 2.7 on matmul-c's kernel.c), so a whole file is never cut short.
const CODE_CHARS_PER_TOKEN: u64 = 2;

/// Tokens one reply may use, on a server whose context window is known (a local server, whose
/// own default is short): what the largest edit can need, every editable file written whole,
/// and never more than half the window. A reply that runs on past that is a model rambling,
/// not an edit, and costs minutes on a CPU server.
fn reply_cap(files: &BTreeMap<String, String>, window: u64) -> u64 {
    let all: u64 = files.values().map(|f| f.len() as u64).sum();
    (all / CODE_CHARS_PER_TOKEN + REPLY_MARGIN)
        .max(MIN_REPLY_TOKENS)
        .min(window / 2)
}
/// One conversation, started in `protocol`: a scratch copy of the incumbent, the model, and
/// what came of it, with the protocol the conversation ended in.
async fn converse(
    shared: Arc<Shared>,
    ctx: Arc<ProposalContext>,
    prompts: Arc<Prompts>,
    folds: Arc<Folds>,
    (max_tokens, window): (u64, Option<u64>),
    protocol: Protocol,
) -> Result<(Proposal, Protocol), AgentError> {
    let mut tree = shared.source.clone();
    for (p, c) in &ctx.incumbent_files {
        if let Ok(p) = RelPath::new(p) {
            tree.insert(p, c.as_bytes().to_vec());
        }
    }
    let mut scratch = Scratch {
        shared: Arc::clone(&shared),
        space: shared.task.space_of(&tree),
        current: ctx.incumbent_params.clone(),
        tree,
        original: ctx.incumbent_files.clone(),
        process_time: Duration::ZERO,
        folds: Arc::clone(&folds),
    };
    // The files as the model sees them, which is what it writes back whole.
    let shown: BTreeMap<String, String> = ctx
        .incumbent_files
        .iter()
        .map(|(p, c)| (p.clone(), folds.fold(p, c)))
        .collect();
    let st = &shared.settings;
    let limits = Limits {
        max_turns: st.max_turns,
        max_tokens,
        temperature: st.temperature,
        reply_tokens: window.map(|w| reply_cap(&shown, w)),
        wall: st.proposal_time,
        window,
    };
    let with_params = shared.task.params.is_some();
    let outcome = llm::propose(
        &shared.client,
        st.api_key.as_deref(),
        &mut scratch,
        &prompts,
        protocol,
        &limits,
        with_params,
        &shared.cancel,
    )
    .await
    .map_err(|e| AgentError::Model(e.to_string()))?;
    let mut usage = outcome.usage;
    usage.process_ms = scratch.process_time.as_millis() as u64;
    let ended_in = outcome.protocol;
    // A conversation that ends without a submission is still recorded, as an empty change.
    let (change, note) = match outcome.change {
        Some(c) if outcome.ended == "submitted" => (c, outcome.rationale),
        Some(c) => (c, format!("{} ({})", outcome.rationale, outcome.ended)),
        None => (
            ProposedChange::Files(BTreeMap::new()),
            format!("the agent did not submit: {}", outcome.ended),
        ),
    };
    let proposal = Proposal {
        change,
        note: Some(note).filter(|n| !n.is_empty()),
        origin: proposers::Origin::Agent {
            model: st.model.clone(),
        },
        usage: Some(usage),
        screen_only: false,
    };
    Ok((proposal, ended_in))
}

pub struct AgentProposer {
    shared: Arc<Shared>,
    used_tokens: u64,
    /// Proposals of the last batch not handed out yet.
    queue: VecDeque<Proposal>,
    /// The context window, once known (`Some(None)`: asked, and nobody said).
    window: Option<Option<u64>>,
    /// The protocol conversations start in: the one the last conversation ended in, so a model
    /// that could not follow tool calling does not fail at it again in every proposal.
    protocol: Protocol,
}

impl AgentProposer {
    /// `(context, context_id)`: the context as the model is told it, and its id.
    pub fn new(
        settings: AgentSettings,
        task: &Task,
        source: &FileTree,
        runner: &Runner,
        cancel: CancelFlag,
        workload: Option<&Workload>,
        (context, context_id): (String, String),
    ) -> Result<Self> {
        let client = ModelClient::new(
            &settings.base_url,
            settings.api_key.as_deref(),
            &settings.model,
            settings.request_timeout,
            settings.idle_timeout,
        )?;
        let settings_protocol = settings.protocol;
        let shared = Shared {
            settings,
            client,
            task: task.clone(),
            source: source.clone(),
            runner: runner.clone(),
            cancel,
            workload: workload.cloned(),
            context,
            context_id,
        };
        Ok(AgentProposer {
            shared: Arc::new(shared),
            used_tokens: 0,
            queue: VecDeque::new(),
            window: None,
            protocol: settings_protocol,
        })
    }
}

#[async_trait::async_trait]
impl Proposer for AgentProposer {
    fn name(&self) -> &str {
        "agent"
    }

    fn wants_history(&self) -> bool {
        true
    }

    /// Hands out the next proposal; when none is left, runs `concurrency` conversations at once
    /// from the current incumbent (benchmarks still run one at a time, in the main loop).
    async fn next(&mut self, ctx: &ProposalContext) -> Result<Option<Proposal>, AgentError> {
        if let Some(p) = self.queue.pop_front() {
            return Ok(Some(p));
        }
        let st = &self.shared.settings;
        if self.used_tokens >= st.token_budget {
            tracing::warn!(
                used = self.used_tokens,
                budget = st.token_budget,
                "the run's token budget is spent"
            );
            return Ok(None);
        }
        let n = st.concurrency.max(1);
        let max_tokens = st
            .max_tokens_per_proposal
            .min((st.token_budget - self.used_tokens) / n as u64)
            .max(1);
        let ctx = Arc::new(ctx.clone());
        if self.window.is_none() {
            let told = self.shared.settings.context_window;
            let window = match told {
                Some(w) => Some(w),
                None => self.shared.client.context_window().await,
            };
            tracing::info!(?window, "the model's context window");
            self.window = Some(window);
        }
        let folds = Arc::new(match (&self.shared.task.params, &ctx.incumbent_params) {
            (Some(spec), Some(p)) if spec.format == sandbox::ParamFormat::CDefine => {
                Folds::new(&ctx.incumbent_files, p)
            }
            _ => Folds::default(),
        });
        let prompts = Arc::new(prompts(&self.shared, &ctx, &folds, self.window.flatten()));
        let tasks: Vec<_> = (0..n)
            .map(|_| {
                tokio::spawn(converse(
                    Arc::clone(&self.shared),
                    Arc::clone(&ctx),
                    Arc::clone(&prompts),
                    Arc::clone(&folds),
                    (max_tokens, self.window.flatten()),
                    self.protocol,
                ))
            })
            .collect();
        let mut last_error = None;
        for t in tasks {
            match t.await {
                Ok(Ok((p, ended_in))) => {
                    if ended_in != self.protocol {
                        tracing::info!(
                            "the conversation ended in the {} protocol; later proposals start there",
                            ended_in.as_str()
                        );
                        self.protocol = ended_in;
                    }
                    self.used_tokens += p
                        .usage
                        .as_ref()
                        .map_or(0, |u| u.prompt_tokens + u.completion_tokens);
                    self.queue.push_back(p);
                }
                Ok(Err(e)) => {
                    tracing::warn!("an agent conversation failed: {e}");
                    last_error = Some(e);
                }
                Err(e) => {
                    last_error = Some(AgentError::Model(format!(
                        "a conversation task failed: {e}"
                    )))
                }
            }
        }
        match (self.queue.pop_front(), last_error) {
            (Some(p), _) => Ok(Some(p)),
            (None, Some(e)) => Err(e),
            (None, None) => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reply_has_room_for_every_file_and_no_more_than_half_the_window() {
        let files = |n: usize| {
            BTreeMap::from([
                ("k.c".to_string(), "x".repeat(n)),
                ("p.h".to_string(), "y".repeat(100)),
            ])
        };
        assert_eq!(reply_cap(&files(300), 8192), MIN_REPLY_TOKENS);
        assert_eq!(reply_cap(&files(4_700), 8192), 2_656);
        assert_eq!(reply_cap(&files(60_000), 8192), 4_096);
    }
}
