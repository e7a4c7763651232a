//! The command line: clap types only. Doc comments are the help text.

use clap::{Args, Parser, Subcommand};
use polymorph::engine::Strategy;
use polymorph::engine::remote::{Target, VerifyOn};
use polymorph::measure::Verdict;
use polymorph::record::ProposerChoice;
use std::path::PathBuf;

/// Environment variable naming the default runs.db.
pub const ENV_DB: &str = "POLYMORPH_DB";
/// Environment variable naming the default ledger.
pub const ENV_LEDGER: &str = "POLYMORPH_LEDGER";

/// polymorph makes inference kernels and serving configs faster, and proves it: candidates are
/// built in a sandbox, checked, benchmarked against the incumbent with paired statistics, and
/// only verified improvements are committed to a git ledger.
///
/// Exit codes: 0 success, 2 error (bad input, a failed run), 130 interrupted (Ctrl-C or SIGTERM;
/// run the same command again to resume).
#[derive(Debug, Parser)]
#[command(name = "polymorph", version)]
pub struct Cli {
    /// The SQLite history of every run and candidate, or a postgres:// URL [default: runs.db;
    /// runs.sim.db for `run --simulate`]
    #[arg(long, global = true, env = ENV_DB)]
    db: Option<PathBuf>,
    /// The git ledger of accepted entries (a bare repository; `git -C ledger log --all`)
    /// [default: ledger; ledger.sim for `run --simulate`]
    #[arg(long, global = true, env = ENV_LEDGER)]
    ledger: Option<PathBuf>,
    #[command(subcommand)]
    pub command: Command,
}

impl Cli {
    /// The database: as given (flag or environment), or runs.db.
    pub fn db(&self) -> PathBuf {
        self.db.clone().unwrap_or_else(|| "runs.db".into())
    }

    /// The ledger: as given (flag or environment), or `ledger`.
    pub fn ledger(&self) -> PathBuf {
        self.ledger.clone().unwrap_or_else(|| "ledger".into())
    }

    /// Where a simulated run records, unless told: apart from measured results, so that
    /// nothing replayed is ever read as measured where measured runs are kept.
    pub fn simulated_db_and_ledger(&self) -> (PathBuf, PathBuf, bool) {
        let told = self.db.is_some() || self.ledger.is_some();
        (
            self.db.clone().unwrap_or_else(|| "runs.sim.db".into()),
            self.ledger.clone().unwrap_or_else(|| "ledger.sim".into()),
            told,
        )
    }
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Optimize a task: propose, verify, benchmark and commit verified improvements.
    Run(RunArgs),
    /// Validate a task, then build, test and benchmark its starting source and its hand-tuned
    /// baseline side by side.
    Check(CheckArgs),
    /// Runs and their outcomes.
    History(HistoryArgs),
    /// One candidate (a number), ledger entry (e12) or commit (hex prefix): diff, samples, verdict.
    Show(ShowArgs),
    /// Accepted entries waiting for review, oldest first.
    Review(ReviewArgs),
    /// Approve a ledger entry (e.g. e7) after reading its diff and numbers; or release a
    /// quarantined candidate (its number, with --note saying why its gain is real) into the ledger.
    Approve(ApproveArgs),
    /// Reject a ledger entry: a revert commit restores the best entry left on its branch, and
    /// every later entry of the branch (built on this one) is rejected with it. A quarantined
    /// candidate (its number) is dismissed.
    Reject(RejectArgs),
    /// An entry as a patch against the task as given, for `git am` or `git apply`.
    Export(ExportArgs),
    /// The current best entry of a task for a context: what a deployment should use.
    Best(BestArgs),
    /// The task's context on this machine now: its id and what went into it.
    Context(ContextArgs),
    /// Install what a task's commands need once, with network access, so that they run
    /// offline: the pinned Python packages of its [python] requirements.
    Setup(SetupArgs),
    /// Measure every assignment of a task's [params] (and the task as given and its hand-tuned
    /// baseline) into a cache that `run --simulate` replays instead of running the task.
    Record(RecordArgs),
    /// Make a Kernel Tuner cache file (with its T1 description, when there is one) a task and a
    /// cache that `run --simulate` replays: samples from half of each configuration's repeats,
    /// its truth from the other half (the first repeat, a warm-up, in neither).
    Import(ImportArgs),
    /// Scheduled runs, executed by `polymorph daemon`.
    Schedule {
        #[command(subcommand)]
        action: ScheduleAction,
    },
    /// A local review page: runs, the metric over candidates, entries with side-by-side diffs,
    /// approve and reject buttons.
    Serve(ServeArgs),
    /// Run due schedules until SIGTERM or Ctrl-C; a schedule whose task's context changed
    /// (workload, hardware, toolchain, model, harness) is due at once. One daemon per database.
    Daemon(DaemonArgs),
    /// Read-only SQL over runs.db (docs/commands.md names the tables); writes are refused.
    Query(QueryArgs),
    /// The node side of a remote target (`run --target`): reads one job on stdin, answers on
    /// stdout. Started by ssh or srun, not by hand.
    #[command(hide = true)]
    Worker,
}

impl Command {
    /// Whether the command only reads and prints, so that a reader of its output going away
    /// (`| head`) may end it. Every other command talks to child processes through pipes
    /// (ssh, srun, the sandbox, a model server), and a pipe to a child that died must be an
    /// error it reports, not a signal that kills it mid-run.
    pub fn only_prints(&self) -> bool {
        matches!(
            self,
            Command::History(_)
                | Command::Show(_)
                | Command::Review(_)
                | Command::Export(_)
                | Command::Best(_)
                | Command::Query(_)
        )
    }
}

#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// Directory holding task.toml.
    pub task_dir: PathBuf,
    /// auto (search when the task has [params]), search, agent, or replay:FILE (JSON Lines).
    #[arg(long, default_value = "auto")]
    pub proposer: ProposerChoice,
    /// Candidates to evaluate in this run [default: the task's `[run] budget`, else 40].
    #[arg(long)]
    pub budget: Option<usize>,
    /// Seed for the search proposer (random when omitted; recorded in runs.db).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Use this workload file instead of the task's [context] workload.
    #[arg(long)]
    pub workload: Option<PathBuf>,
    /// In a context never tuned, do not start from the bests of neighbouring contexts.
    #[arg(long)]
    pub no_warm_start: bool,
    /// The agent's model (default: POLYMORPH_MODEL). The endpoint comes from
    /// OPENAI_BASE_URL and the key from OPENAI_API_KEY, never from a flag.
    #[arg(long)]
    pub model: Option<String>,
    /// tools (OpenAI tool calling), text (SEARCH/REPLACE blocks, for servers without tools),
    /// whole-file (whole files in fenced blocks) or focused (one change, built and tested at
    /// once, and one repair: for small models). A conversation that goes nowhere falls back to
    /// focused by itself, and later proposals start there.
    #[arg(long, default_value = "tools")]
    pub agent_protocol: String,
    /// Seconds a model request may wait for its first token before it is abandoned and retried
    /// (a cold prompt on a CPU server takes a minute or more).
    #[arg(long, default_value_t = 120)]
    pub request_timeout: u64,
    /// Seconds a streamed reply may pause before the server counts as hung and the request is
    /// retried.
    #[arg(long, default_value_t = 60)]
    pub idle_timeout: u64,
    /// Wall-clock minutes one agent proposal may take (requests and builds); a conversation cut
    /// by it submits the last version that built and passed.
    #[arg(long, default_value_t = 10.0)]
    pub proposal_minutes: f64,
    /// The model's context window in tokens, when the server's /v1/models does not say: a
    /// small window gets a compact first prompt (files and history trimmed to fit).
    #[arg(long)]
    pub context_window: Option<u64>,
    /// Model tokens (prompt + completion) the agent may spend in this run.
    #[arg(long, default_value_t = 2_000_000)]
    pub token_budget: u64,
    /// Agent conversations in flight at once (benchmarks still run one at a time).
    #[arg(long, default_value_t = 1)]
    pub agent_concurrency: usize,
    /// How search chooses assignments: tpe (a tree-structured Parzen estimator over every
    /// measurement in the context), model (an additive surrogate fitted to the same), hill
    /// (local moves around the incumbent) or random.
    #[arg(long, default_value = "tpe")]
    pub strategy: Strategy,
    /// Replay this measurement cache (from `polymorph record`) instead of building, testing
    /// and benchmarking: strategies compared in seconds, in a context of the cache's own.
    #[arg(long, value_name = "CACHE")]
    pub simulate: Option<PathBuf>,
    #[command(flatten)]
    pub remote: TargetArgs,
    /// Print the result as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

/// Where a run's (or a schedule's runs') evaluations happen.
#[derive(Debug, Clone, Args)]
pub struct TargetArgs {
    /// Where evaluations run: local (here, the default), ssh://[user@]host[:port] (one remote
    /// box), slurm or slurm:PARTITION (a job step per evaluation through srun). Repeat it to use
    /// several targets; results are the nodes' context's, and targets of different contexts (a
    /// mixed cluster) each get their own run and branch, side by side.
    #[arg(long = "target", value_name = "TARGET")]
    pub targets: Vec<Target>,
    /// The polymorph binary on remote targets' nodes.
    #[arg(long, default_value = "polymorph", value_name = "PATH")]
    pub worker: String,
    /// The ssh program and its options, for ssh:// targets.
    #[arg(long, env = "POLYMORPH_SSH_COMMAND", default_value = "ssh")]
    pub ssh_command: String,
    /// An srun option for the slurm target (repeatable): --slurm-arg=--partition=gpu
    /// --slurm-arg=--account=perf --slurm-arg=--time=30. A task requiring nvidia-gpu adds
    /// --gres=gpu:1 itself.
    #[arg(long = "slurm-arg", value_name = "OPTION", allow_hyphen_values = true)]
    pub slurm_args: Vec<String>,
    /// Candidates in flight at once on remote targets, each its own job: builds and tests run
    /// in parallel, benchmarks take turns on each node (one lock per node).
    #[arg(long, default_value_t = 1)]
    pub jobs: usize,
    /// Where a candidate a remote series accepted is confirmed by a fresh series before it is
    /// committed: other-node (a second target; the default with two or more), controller
    /// (here; this machine must be able to run the task) or same-node (the default with one
    /// target, which is then trusted with its samples).
    #[arg(long, value_name = "WHERE")]
    pub verify_on: Option<VerifyOn>,
}

#[derive(Debug, Clone, Args)]
pub struct RecordArgs {
    /// Directory holding task.toml.
    pub task_dir: PathBuf,
    /// The cache file (JSON) to write; an unfinished one is resumed.
    #[arg(long)]
    pub out: PathBuf,
    /// Bench processes per tree.
    #[arg(long, default_value_t = 5)]
    pub samples: usize,
    /// Use this workload file instead of the task's [context] workload.
    #[arg(long)]
    pub workload: Option<PathBuf>,
}

#[derive(Debug, Clone, Args)]
pub struct ImportArgs {
    /// Kernel Tuner's cache file (JSON, or gzip-compressed JSON), objective `time`.
    pub cache: PathBuf,
    /// The kernel's T1 tuning description: its defaults become the start, its conditions
    /// `[params.constraints]`. Without it the first measured configuration is the start and
    /// every declared combination is allowed (one the cache lacks fails in the replay).
    #[arg(long)]
    pub t1: Option<PathBuf>,
    /// The folder to write (task.toml, params.h, cache.json); it must not exist or be empty.
    #[arg(long)]
    pub out: PathBuf,
}

#[derive(Debug, Clone, Args)]
pub struct CheckArgs {
    pub task_dir: PathBuf,
    /// Interleaved benchmark rounds per tree.
    #[arg(long, default_value_t = 3)]
    pub rounds: usize,
    /// Also measure this ledger entry (e.g. e7, or a commit prefix), its editable files on
    /// this task; repeat to compare several, e.g. the bests of two workloads.
    #[arg(long = "entry")]
    pub entries: Vec<String>,
    #[arg(long)]
    pub workload: Option<PathBuf>,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, Args)]
pub struct HistoryArgs {
    /// Only runs of this task (its name).
    #[arg(long)]
    pub task: Option<String>,
    /// Only runs in this context.
    #[arg(long)]
    pub context: Option<String>,
    /// Only runs started since: a date (2026-11-30, or RFC 3339) or an age (12h, 7d).
    #[arg(long)]
    pub since: Option<String>,
    /// Only runs with at least one candidate of this verdict: accepted, rejected, held (a
    /// contender of the search's race, kept after its screen), failed or quarantined.
    #[arg(long)]
    pub verdict: Option<Verdict>,
    /// Also draw the shown runs' best-so-far curve and every candidate's gain into this SVG file.
    #[arg(long)]
    pub plot: Option<PathBuf>,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, Args)]
pub struct ShowArgs {
    pub id: String,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, Args)]
pub struct ReviewArgs {
    /// Only entries of this task (its name).
    #[arg(long)]
    pub task: Option<String>,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, Args)]
pub struct ApproveArgs {
    pub id: String,
    /// Who approves (default: $USER).
    #[arg(long)]
    pub by: Option<String>,
    #[arg(long)]
    pub note: Option<String>,
}

#[derive(Debug, Clone, Args)]
pub struct RejectArgs {
    pub id: String,
    #[arg(long)]
    pub reason: String,
    /// Who rejects (default: $USER).
    #[arg(long)]
    pub by: Option<String>,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, Args)]
pub struct ExportArgs {
    pub id: String,
    /// Write the patch here instead of stdout.
    #[arg(long, short)]
    pub output: Option<PathBuf>,
}

#[derive(Debug, Clone, Args)]
pub struct BestArgs {
    /// A task directory (its current context is used) or a task name.
    pub task: String,
    /// A context id (see `history`); defaults to the task's current context.
    #[arg(long)]
    pub context: Option<String>,
    /// Write the best entry's whole tree into this directory (new or empty).
    #[arg(long)]
    pub emit: Option<PathBuf>,
    /// Only entries a reviewer approved (the task as given counts as approved): what to deploy
    /// where every change waits for review. Without it, the newest entry not rejected, which
    /// may still be pending review.
    #[arg(long)]
    pub approved: bool,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, Args)]
pub struct ContextArgs {
    pub task_dir: PathBuf,
    #[arg(long)]
    pub workload: Option<PathBuf>,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, Args)]
pub struct SetupArgs {
    /// Directory holding task.toml.
    pub task_dir: PathBuf,
    /// The Python interpreter the environment is made with.
    #[arg(long, default_value = "python3")]
    pub python: String,
    /// The npm that installs a task's locked Node.js packages.
    #[arg(long, default_value = "npm")]
    pub npm: String,
    /// Make the environment again even when it is complete.
    #[arg(long)]
    pub force: bool,
    /// Install nothing: say where the environment is and whether it is complete (exit 2 when not).
    #[arg(long, conflicts_with = "force")]
    pub check: bool,
}

#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Address to listen on: loopback unless --expose says otherwise.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: std::net::IpAddr,
    /// Listen on a non-loopback --host: anyone who can reach it reads every run, diff and
    /// figure, and can approve or reject entries once they have the page's token (which the
    /// page itself hands to whoever loads it).
    #[arg(long)]
    pub expose: bool,
    /// Port (0 picks a free one).
    #[arg(long, default_value_t = 8080)]
    pub port: u16,
}

#[derive(Debug, Clone, Args)]
pub struct DaemonArgs {
    /// How often to look at the schedules, e.g. 60s or 5m.
    #[arg(long, default_value = "60s")]
    pub tick: String,
    /// Look once, run what is due, and exit.
    #[arg(long)]
    pub once: bool,
}

#[derive(Debug, Clone, Args)]
pub struct QueryArgs {
    pub sql: String,
    #[arg(long)]
    pub json: bool,
}

// Parsed once per process: the size of the largest variant does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, Subcommand)]
pub enum ScheduleAction {
    /// Add a schedule: give exactly one of --every or --cron.
    Add {
        task_dir: PathBuf,
        /// Interval between runs: 90s, 30m, 6h, 1d.
        #[arg(long, conflicts_with = "cron", required_unless_present = "cron")]
        every: Option<String>,
        /// Five-field cron pattern in UTC, e.g. "0 3 * * *".
        #[arg(long)]
        cron: Option<String>,
        /// Candidates each run evaluates [default: the task's `[run] budget`, else 20].
        #[arg(long)]
        budget: Option<usize>,
        #[arg(long, default_value = "auto")]
        proposer: ProposerChoice,
        #[arg(long)]
        workload: Option<PathBuf>,
        #[command(flatten)]
        remote: TargetArgs,
    },
    /// List schedules with their last run.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Remove a schedule by id.
    Remove { id: i64 },
}
