//! `polymorph worker`: the node side of a remote target. It reads one job line from stdin,
//! writes the task it was sent into a private directory, resolves it here (this node's
//! context), runs the job through the same harness and sandbox as a local run, and prints one
//! reply line. Its stdin closing (the controller gone, the connection dropped) cancels the job.

use crate::engine::evaluate::{Built, Harness};
use crate::engine::remote::wire::{
    Job, Op, Outcome, PROTOCOL, REPLY_MARKER, Reply, VERSION, WireEvaluation, WireSample,
    WireWorkload,
};
use crate::measure::Judge;
use crate::task::{Resolved, Task, Workload, resolve::resolve_with};
use anyhow::{Context as _, Result, bail};
use sandbox::{CancelFlag, Isolation};
use std::io::{BufRead as _, Read as _, Write as _};
use std::path::Path;
use std::sync::atomic::Ordering;

/// This node's host name, as a person would name it.
pub fn node_name() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for its whole length; gethostname writes at most that much.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return "unknown".into();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

/// Serves one job from stdin; the reply goes to stdout. Errors are about the job itself (it
/// could not be read or set up); the controller treats them as faults of this node.
pub fn serve(cancel: CancelFlag) -> Result<()> {
    let mut line = String::new();
    let mut stdin = std::io::stdin().lock();
    stdin.read_line(&mut line).context("reading the job")?;
    if line.trim().is_empty() {
        bail!("no job on stdin");
    }
    let raw: serde_json::Value = serde_json::from_str(&line).context("the job is not JSON")?;
    drop(stdin);
    let (protocol, version) = (raw["protocol"].as_u64(), raw["version"].as_str());
    if protocol != Some(u64::from(PROTOCOL)) || version != Some(VERSION) {
        // Answered, not failed: another node would say the same; the run must stop.
        let reply = Reply {
            node: node_name(),
            sandbox: String::new(),
            context_id: String::new(),
            fingerprint: serde_json::Value::Null,
            result: Outcome::TaskError(format!(
                "polymorph there is {VERSION} (protocol {PROTOCOL}), this controller is {} (protocol {}): install the same version on the nodes",
                version.unwrap_or("?"),
                protocol.map_or("?".into(), |p| p.to_string())
            )),
        };
        println!("{REPLY_MARKER}{}", serde_json::to_string(&reply)?);
        return Ok(());
    }
    let job: Job = serde_json::from_value(raw).context("the job is not valid")?;
    // Anything after the job line is ignored; end of input means the controller is gone.
    let watch = cancel.clone();
    std::thread::spawn(move || {
        let mut sink = [0u8; 256];
        let mut stdin = std::io::stdin();
        while matches!(stdin.read(&mut sink), Ok(n) if n > 0) {}
        watch.store(true, Ordering::SeqCst);
    });
    let reply = run_job(&job, cancel.clone())?;
    if cancel.load(Ordering::SeqCst) {
        // Stopped by a signal (a cancelled job) or by the controller going away: whatever was
        // measured is incomplete, and no reply is the only honest answer.
        bail!("cancelled before the job was done");
    }
    let mut out = std::io::stdout().lock();
    writeln!(out, "{REPLY_MARKER}{}", serde_json::to_string(&reply)?)?;
    out.flush()?;
    Ok(())
}

/// Writes the job's task into a private directory and resolves it on this node.
fn resolve_job(job: &Job, root: &Path) -> Result<Resolved> {
    let name = &job.task_dir_name;
    if name.is_empty() || name.contains('/') || name.starts_with('.') {
        bail!("bad task directory name {name:?}");
    }
    let dir = root.join(name);
    std::fs::create_dir_all(&dir)?;
    job.source.to_tree()?.write_to(&dir)?;
    let task = Task::load(&dir)?;
    let workload = match &job.workload {
        None => None,
        Some(WireWorkload::InTree { path, label }) => Some(Workload {
            path: task.dir.join(sandbox::RelPath::new(path)?.to_string()),
            label: label.clone(),
        }),
        Some(WireWorkload::External {
            label,
            file_name,
            data,
        }) => {
            let file = root
                .join("workload")
                .join(sandbox::RelPath::new(file_name)?.to_string());
            std::fs::create_dir_all(file.parent().unwrap_or(root))?;
            std::fs::write(&file, WireWorkload::external_bytes(data)?)?;
            Some(Workload {
                path: file,
                label: label.clone(),
            })
        }
    };
    resolve_with(task, workload)
}

fn run_job(job: &Job, cancel: CancelFlag) -> Result<Reply> {
    let root = tempfile::Builder::new()
        .prefix("polymorph-worker-")
        .tempdir()?;
    let r = resolve_job(job, root.path())?;
    let runner = crate::engine::runner(&[]);
    let sandbox = match runner.isolation() {
        Isolation::Bwrap { .. } => "bwrap".to_string(),
        Isolation::Plain(why) => format!("none ({why})"),
    };
    let reply = |result| Reply {
        node: node_name(),
        sandbox: sandbox.clone(),
        context_id: r.context_id.clone(),
        fingerprint: serde_json::to_value(&r.fingerprint).unwrap_or_default(),
        result,
    };
    if let Err(e) = r.check_requirements() {
        return Ok(reply(Outcome::TaskError(format!("{e:#}"))));
    }
    let mut h = Harness::of(&r, &runner, cancel)?;
    let result = match &job.op {
        Op::Probe => Outcome::Probed,
        Op::Measure { trees, rounds } => measure(&mut h, trees, *rounds)?,
        Op::Evaluate {
            incumbent,
            candidate,
            reference,
            floor,
        } => {
            let judge = Judge {
                metric: &r.task.metric,
                settings: &r.task.judge,
                reference: *reference,
                spread: None,
                floor,
            };
            match h.prepare(incumbent.to_tree()?) {
                Err(f) => Outcome::TaskError(format!(
                    "the incumbent does not pass on {}: {}",
                    node_name(),
                    f.reason
                )),
                Ok(inc) => evaluate(&mut h, &inc, candidate.to_tree()?, &judge),
            }
        }
    };
    Ok(reply(result))
}

fn measure(
    h: &mut Harness<'_>,
    trees: &[crate::engine::remote::wire::WireTree],
    rounds: usize,
) -> Result<Outcome> {
    let mut built: Vec<Built> = Vec::new();
    for (i, t) in trees.iter().enumerate() {
        match h.prepare(t.to_tree()?) {
            Ok(b) => built.push(b),
            Err(f) => {
                return Ok(Outcome::TaskError(format!(
                    "tree {} of {} does not pass on {}: {}",
                    i + 1,
                    trees.len(),
                    node_name(),
                    f.reason
                )));
            }
        }
    }
    let refs: Vec<&Built> = built.iter().collect();
    let samples = h.measure(&refs, rounds)?;
    Ok(Outcome::Measured(
        samples
            .iter()
            .map(|s| s.iter().map(WireSample::from).collect())
            .collect(),
    ))
}

fn evaluate(
    h: &mut Harness<'_>,
    incumbent: &Built,
    candidate: sandbox::FileTree,
    judge: &Judge<'_>,
) -> Outcome {
    // The incumbent's build and test were this job's processes too.
    let (incumbent_process, _) = h.take_times();
    let ev = h.evaluate_tree(candidate, incumbent, judge, false);
    let failure = (ev.verdict == crate::measure::Verdict::Failed)
        .then(|| (ev.stage, ev.reason.clone(), ev.log.clone()));
    Outcome::Evaluated(WireEvaluation {
        pairs: ev
            .pairs
            .iter()
            .map(|(a, b)| (WireSample::from(a), WireSample::from(b)))
            .collect(),
        failure,
        bench_seconds: ev.bench_seconds,
        process_seconds: ev.process_seconds + incumbent_process.as_secs_f64(),
        cancelled: ev.cancelled,
        harness_fault: ev.harness_fault,
    })
}
