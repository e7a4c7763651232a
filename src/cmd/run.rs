//! `polymorph run`: the loop on a task, and its summary.

use super::output::{fmt_score, print_json};
use crate::cli::{Cli, RunArgs, TargetArgs};
use anyhow::{Result, bail};
use polymorph::engine::agent_host::AgentSettings;
use polymorph::engine::remote::{RemoteSpec, Target, TargetOptions, VerifyOn};
use polymorph::engine::{RunOptions, RunReport, runner};
use polymorph::record::store::SIMULATED;
use polymorph::record::{LockFile, ProposerChoice, RunProposer, Store};
use sandbox::{CancelFlag, Isolation, Runner};
use std::path::Path;

/// Candidates a run evaluates when neither `--budget` nor the task's `[run] budget` says.
const DEFAULT_BUDGET: usize = 40;

pub async fn run(cli: &Cli, a: RunArgs, cancel: CancelFlag) -> Result<()> {
    if a.budget == Some(0) {
        bail!("--budget must be at least 1");
    }
    // A task that does not load is refused before anything is created: no database, no lock.
    let task = polymorph::task::Task::load(&a.task_dir)?;
    let budget = a.budget.or(task.budget).unwrap_or(DEFAULT_BUDGET);
    let targets = targets(&a.remote)?;
    let agent = match a.proposer {
        ProposerChoice::Auto | ProposerChoice::Given(RunProposer::Agent) => {
            let mut settings = AgentSettings::from_env(
                a.model,
                &a.agent_protocol,
                a.request_timeout,
                a.token_budget,
                a.agent_concurrency,
            )?;
            settings.context_window = a.context_window;
            if !(a.proposal_minutes.is_finite() && a.proposal_minutes > 0.0) {
                bail!("--proposal-minutes must be a positive number of minutes");
            }
            settings.proposal_time = std::time::Duration::from_secs_f64(a.proposal_minutes * 60.0);
            if a.idle_timeout == 0 {
                bail!("--idle-timeout must be at least 1 second");
            }
            settings.idle_timeout = std::time::Duration::from_secs(a.idle_timeout);
            Some(settings)
        }
        ProposerChoice::Given(_) => None,
    };
    let opts = RunOptions {
        proposer: a.proposer,
        budget,
        seed: a.seed,
        workload: a.workload,
        progress: true,
        warm_start: !a.no_warm_start,
        agent,
        simulate: a.simulate,
        strategy: a.strategy,
        targets: targets.map(|t| (t.targets, t.options)),
    };
    let (db, ledger) = match opts.simulate {
        None => (cli.db(), cli.ledger()),
        Some(_) => {
            let (db, ledger, told) = cli.simulated_db_and_ledger();
            if !told {
                eprintln!(
                    "simulated: recorded in {} and {}, apart from measured runs (--db and --ledger choose others)",
                    db.display(),
                    ledger.display()
                );
            }
            (db, ledger)
        }
    };
    let _lock = LockFile::run(&db)?;
    let store = Store::open(&db).await?;
    // With remote targets no task process runs here, unless confirmations do.
    let runner = match &opts.targets {
        Some((_, o)) if o.verify_on != Some(VerifyOn::Controller) => {
            Runner::new(Isolation::Plain("evaluations run on remote targets".into()))
        }
        _ => runner(&[&db, &ledger]),
    };
    let reports =
        polymorph::engine::run(&store, &ledger, &a.task_dir, &opts, &runner, cancel).await?;
    match reports.as_slice() {
        [one] => print_run(one, &ledger, a.json),
        // Several contexts (a mixed cluster): a list of reports, one per context.
        several if a.json => print_json(&several),
        several => several
            .iter()
            .try_for_each(|r| print_run(r, &ledger, false)),
    }
}

/// Remote targets and how to reach them; `None` when every evaluation runs here.
pub(super) fn targets(a: &TargetArgs) -> Result<Option<RemoteSpec>> {
    let list = &a.targets;
    if a.jobs == 0 {
        bail!("--jobs must be at least 1");
    }
    if !a.slurm_args.is_empty() && !list.iter().any(|t| matches!(t, Target::Slurm { .. })) {
        bail!("--slurm-arg is for the slurm target: add --target slurm");
    }
    let remote = list.iter().filter(|t| **t != Target::Local).count();
    match a.verify_on {
        Some(_) if remote == 0 => {
            bail!("--verify-on is for remote targets: here every series is judged where it runs")
        }
        Some(VerifyOn::OtherNode) if remote < 2 => bail!(
            "--verify-on other-node needs two targets or more; with one, --verify-on controller confirms here"
        ),
        _ => {}
    }
    if list.iter().all(|t| *t == Target::Local) {
        if a.jobs > 1 {
            bail!(
                "--jobs runs candidates in parallel on remote targets; here they run one at a time (benchmarks would contend)"
            );
        }
        return Ok(None);
    }
    if list.contains(&Target::Local) {
        bail!(
            "--target local cannot be mixed with remote targets (name this machine as ssh://localhost)"
        );
    }
    Ok(Some(RemoteSpec {
        targets: list.to_vec(),
        options: TargetOptions {
            worker: a.worker.clone(),
            ssh_command: a.ssh_command.clone(),
            slurm_args: a.slurm_args.clone(),
            jobs: a.jobs,
            verify_on: a.verify_on,
        },
    }))
}

fn print_run(r: &RunReport, ledger: &Path, json: bool) -> Result<()> {
    if json {
        return print_json(r);
    }
    println!(
        "run {} on {} ({}), context {}: {}",
        r.run_id, r.task, r.proposer, r.context_id, r.status
    );
    if let Some(sha) = &r.simulation {
        println!("  {SIMULATED} (cache sha256 {})", &sha[..12.min(sha.len())]);
    }
    if let Some(m) = &r.message {
        println!("  {m}");
    }
    println!(
        "  {} candidates: {} accepted, {} rejected, {} held as contenders of the search's race, {} failed, {} quarantined",
        r.candidates, r.accepted, r.rejected, r.held, r.failed, r.quarantined
    );
    if let Some(m) = &r.model {
        let per = |n: usize| match n {
            0 => "-".to_string(),
            n => format!(
                "{:.1} min, {} requests, {} tokens",
                m.minutes / n as f64,
                m.requests / n as i64,
                m.tokens / n as i64
            ),
        };
        println!(
            "  model: {:.1} min waiting for replies, {} requests, {} tokens; per candidate {}; per accepted {}",
            m.minutes,
            m.requests,
            m.tokens,
            per(r.candidates),
            per(r.accepted)
        );
    }
    let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) => format!("{:.2}x", b / a),
        _ => "-".into(),
    };
    println!(
        "  {} ({} side by side at the end of the run):",
        r.metric,
        if r.simulation.is_some() {
            "replayed"
        } else {
            "measured"
        }
    );
    // Each tree's share of the machine's limit, where the bench measures one.
    let of_limit = |x: Option<f64>| match (x, &r.limit) {
        (Some(x), Some((name, l))) => Some(format!("{:.0}% of the {name} {l:.4}", x / l * 100.0)),
        _ => None,
    };
    let share = |x: Option<f64>| of_limit(x).map_or(String::new(), |s| format!("; {s}"));
    println!(
        "    start       {}{}",
        fmt_score(r.start_score),
        of_limit(r.start_score).map_or(String::new(), |s| format!("  ({s})"))
    );
    println!(
        "    best        {}  ({} the start{})",
        fmt_score(r.best_score),
        ratio(r.start_score, r.best_score),
        share(r.best_score)
    );
    if r.hand_tuned_score.is_some() {
        println!(
            "    hand-tuned  {}  (best is {} of it{})",
            fmt_score(r.hand_tuned_score),
            ratio(r.hand_tuned_score, r.best_score),
            share(r.hand_tuned_score)
        );
    }
    if let (Some(e), Some(c)) = (r.best_entry, &r.best_commit) {
        println!(
            "  best entry e{e}, commit {}: git -C {} log {}",
            &c[..12.min(c.len())],
            ledger.display(),
            r.branch
        );
    }
    Ok(())
}
