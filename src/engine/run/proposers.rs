//! Choosing a run's proposer: `auto` resolved to search or the agent, a replay file made
//! absolute (a resumed run reads the same file), and the proposer built for the run.

use super::options::{RunOptions, Strategy};
use crate::engine::agent_host::{AgentProposer, AgentSettings, ENV_API_KEY, ENV_BASE_URL};
use crate::measure::Direction;
use crate::record::{ProposerChoice, RunProposer};
use crate::task::{Fingerprint, Resolved, Task};
use anyhow::{Context as _, Result, bail};
use proposers::{Goal, ModelProposer, Proposer, ReplayProposer, SearchProposer, TpeProposer};
use sandbox::{CancelFlag, Runner};

/// The proposer a run uses for `choice`; fails with what to do when none fits the task.
pub fn resolve_proposer(
    choice: &ProposerChoice,
    task: &Task,
    agent: Option<&AgentSettings>,
) -> Result<RunProposer> {
    Ok(match choice {
        ProposerChoice::Auto if agent.is_some() && AgentSettings::configured() => {
            RunProposer::Agent
        }
        ProposerChoice::Auto | ProposerChoice::Given(RunProposer::Search) => {
            if task.params.is_none() {
                bail!(
                    "no proposer for {}: the task declares no [params] for search and no model endpoint is configured \
                     ({ENV_BASE_URL} / {ENV_API_KEY}); use --proposer agent with an endpoint, or --proposer replay:FILE",
                    task.name,
                );
            }
            RunProposer::Search
        }
        ProposerChoice::Given(RunProposer::Agent) => {
            if agent.is_none() {
                bail!("--proposer agent needs the agent's settings");
            }
            RunProposer::Agent
        }
        ProposerChoice::Given(RunProposer::Replay(f)) => RunProposer::Replay(
            f.canonicalize()
                .with_context(|| format!("replay file {} not found", f.display()))?,
        ),
    })
}

/// The hardware, toolchain, workload and model, in one line for the agent's prompt.
fn describe_context(f: &Fingerprint) -> String {
    let or_dash = |s: &str| {
        if s.is_empty() {
            "-".to_string()
        } else {
            s.to_string()
        }
    };
    format!(
        "CPU {} ({} cores); GPUs: {}; toolchain: {}; workload: {}; model: {}",
        f.cpu_model,
        f.cpu_cores,
        if f.gpus.is_empty() {
            "none".to_string()
        } else {
            f.gpus.join(", ")
        },
        f.toolchain.join(", "),
        or_dash(&f.workload),
        or_dash(&f.model),
    )
}

/// The proposer for a run; `done` candidates were already evaluated by an earlier attempt.
pub fn make_proposer<'a>(
    proposer: &RunProposer,
    r: &'a Resolved,
    runner: &'a Runner,
    cancel: CancelFlag,
    seed: u64,
    done: usize,
    opts: &RunOptions,
) -> Result<Box<dyn Proposer + 'a>> {
    let (agent, strategy) = (opts.agent.as_ref(), opts.strategy);
    let task = &r.task;
    match proposer {
        RunProposer::Replay(file) => {
            // Replay candidates are consumed in order: skip those already evaluated.
            let mut p = ReplayProposer::open(file)?;
            p.skip(done);
            Ok(Box::new(p))
        }
        RunProposer::Agent => {
            let settings = agent.context("the agent's settings are missing")?.clone();
            Ok(Box::new(AgentProposer::new(
                settings,
                task,
                &r.source,
                runner,
                cancel,
                r.workload.as_ref(),
                (describe_context(&r.fingerprint), r.context_id.clone()),
            )?))
        }
        RunProposer::Search => {
            let spec = task.params.as_ref().context("task has no [params]")?;
            let goal = Goal {
                maximize: task.metric.direction == Direction::Maximize,
                min_gain: task.metric.min_gain,
                case_tolerance: task.metric.case_tolerance,
                weights: task.metric.weights.as_map().clone(),
            };
            // The strategy is made again, on the enlarged space, when the incumbent adds knobs.
            let build: proposers::Build = Box::new(move |space| match strategy {
                Strategy::Model => Box::new(ModelProposer::new(space, seed, goal.clone())),
                Strategy::Tpe => Box::new(TpeProposer::new(space, seed, goal.clone())),
                Strategy::Hill => Box::new(SearchProposer::new(space, seed)),
                Strategy::Random => Box::new(SearchProposer::random(space, seed)),
            });
            Ok(Box::new(proposers::Widening::new(
                spec.values.clone(),
                spec.constraints.clone(),
                build,
            )?))
        }
    }
}
