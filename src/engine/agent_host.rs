//! The driver of the LLM coding agent: its settings (OPENAI_BASE_URL, OPENAI_API_KEY,
//! POLYMORPH_MODEL and flags), the prompts (prompts/*.txt, overridable per task), and the
//! scratch tree the agent edits, whose build-and-test runs through the same sandbox as every
//! evaluation. What the agent submits is then verified like any other candidate.

use super::harness::Harness;
use crate::measure::Direction;
use crate::task::{Task, Workload};
use agent::llm::{self, Limits, ModelClient, Prompts, Protocol, ToolHost};
use agent::{AgentError, Proposal, ProposalContext, ProposedChange, Proposer};
use anyhow::{Result, bail};
use sandbox::{CancelFlag, FileTree, RelPath, Runner};
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
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

const SYSTEM_TOOLS: &str = include_str!("../../prompts/system.txt");
const SYSTEM_TEXT: &str = include_str!("../../prompts/system_text.txt");
const TASK: &str = include_str!("../../prompts/task.txt");
const FEEDBACK: &str = include_str!("../../prompts/feedback.txt");

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
    /// Conversations run at once when the agent needs new proposals.
    pub concurrency: usize,
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
        concurrency: usize,
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
            concurrency: concurrency.max(1),
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

/// What every conversation of the agent shares: the task, where its commands run, the client.
struct Shared {
    settings: AgentSettings,
    client: ModelClient,
    task: Task,
    source: FileTree,
    runner: Runner,
    cancel: CancelFlag,
    workload: Option<Workload>,
    context: String,
}

/// The scratch tree one conversation edits.
struct Scratch {
    shared: Arc<Shared>,
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
impl ToolHost for Scratch {
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
        let task = &self.shared.task;
        if !task.is_editable(&p) {
            return Err(format!(
                "{path} is protected: only {} may change",
                task.editable_globs.join(", ")
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
        let sh = &self.shared;
        let result = tokio::task::block_in_place(|| {
            let mut h = Harness::new(
                &sh.task,
                &sh.source,
                &sh.runner,
                sh.cancel.clone(),
                sh.workload.as_ref(),
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
            .filter(|(p, _)| self.shared.task.is_editable(p))
            .map(|(p, b)| (p.to_string(), String::from_utf8_lossy(b).into_owned()))
            .filter(|(p, c)| self.original.get(p) != Some(c))
            .collect()
    }
}

/// One conversation: a scratch copy of the incumbent, the model, and what came of it.
async fn converse(
    shared: Arc<Shared>,
    ctx: Arc<ProposalContext>,
    prompts: Arc<Prompts>,
    max_tokens: u64,
) -> Result<Proposal, AgentError> {
    let mut tree = shared.source.clone();
    for (p, c) in &ctx.incumbent_files {
        if let Ok(p) = RelPath::new(p) {
            tree.insert(p, c.as_bytes().to_vec());
        }
    }
    let mut scratch = Scratch {
        shared: Arc::clone(&shared),
        tree,
        original: ctx.incumbent_files.clone(),
        process_time: Duration::ZERO,
    };
    let st = &shared.settings;
    let limits = Limits {
        max_turns: st.max_turns,
        max_tokens,
        temperature: st.temperature,
    };
    let with_params = shared.task.params.is_some();
    let outcome = llm::propose(
        &shared.client,
        st.api_key.as_deref(),
        &mut scratch,
        &prompts,
        st.protocol,
        &limits,
        with_params,
    )
    .await
    .map_err(|e| AgentError::Model(e.to_string()))?;
    let mut usage = outcome.usage;
    usage.process_ms = scratch.process_time.as_millis() as u64;
    // A conversation that ends without a submission is still recorded, as an empty change.
    let (change, note) = match outcome.change {
        Some(c) => (c, outcome.rationale),
        None => (
            ProposedChange::Files(BTreeMap::new()),
            format!("the agent did not submit: {}", outcome.ended),
        ),
    };
    Ok(Proposal {
        change,
        note: Some(note).filter(|n| !n.is_empty()),
        origin: format!("agent({})", st.model),
        usage: Some(usage),
    })
}

pub struct AgentProposer {
    shared: Arc<Shared>,
    used_tokens: u64,
    /// Proposals of the last batch not handed out yet.
    queue: VecDeque<Proposal>,
}

impl AgentProposer {
    pub fn new(
        settings: AgentSettings,
        task: &Task,
        source: &FileTree,
        runner: &Runner,
        cancel: CancelFlag,
        workload: Option<&Workload>,
        context: String,
    ) -> Result<Self> {
        let client = ModelClient::new(
            &settings.base_url,
            settings.api_key.as_deref(),
            &settings.model,
            settings.request_timeout,
        )?;
        let shared = Shared {
            settings,
            client,
            task: task.clone(),
            source: source.clone(),
            runner: runner.clone(),
            cancel,
            workload: workload.cloned(),
            context,
        };
        Ok(AgentProposer {
            shared: Arc::new(shared),
            used_tokens: 0,
            queue: VecDeque::new(),
        })
    }

    fn prompts(&self, ctx: &ProposalContext) -> Prompts {
        let t = &self.shared.task;
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
        let better = if t.metric.direction == Direction::Maximize {
            "higher"
        } else {
            "lower"
        };
        let vars = [
            ("task_name", t.name.clone()),
            ("description", t.description.clone()),
            ("metric", t.metric.name.clone()),
            (
                "direction",
                format!("{}: {better} is better", t.metric.direction.as_str()),
            ),
            ("min_gain", format!("{:.1}%", t.metric.min_gain * 100.0)),
            ("context", self.shared.context.clone()),
            ("incumbent_score", score(ctx.incumbent_score)),
            ("hand_tuned", score(ctx.reference_score)),
            ("editable", t.editable_globs.join(", ")),
            ("params", params),
            ("history", ctx.history.clone()),
            ("files", files),
        ];
        let system = match self.shared.settings.protocol {
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
        let prompts = Arc::new(self.prompts(&ctx));
        let tasks: Vec<_> = (0..n)
            .map(|_| {
                tokio::spawn(converse(
                    Arc::clone(&self.shared),
                    Arc::clone(&ctx),
                    Arc::clone(&prompts),
                    max_tokens,
                ))
            })
            .collect();
        let mut last_error = None;
        for t in tasks {
            match t.await {
                Ok(Ok(p)) => {
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
