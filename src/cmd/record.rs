//! `polymorph record`: a task's whole parameter space measured into a simulation cache; and
//! `polymorph import`: one measured by Kernel Tuner made such a cache.

use crate::cli::{ImportArgs, RecordArgs};
use anyhow::{Result, bail};
use polymorph::engine::runner;
use polymorph::engine::simulate::{import, record};
use polymorph::task::resolve;
use sandbox::CancelFlag;

pub fn record(a: &RecordArgs, cancel: CancelFlag) -> Result<()> {
    if a.samples == 0 {
        bail!("--samples must be at least 1");
    }
    let r = resolve(&a.task_dir, a.workload.as_deref())?;
    r.check_requirements()?;
    let runner = runner(&[]);
    eprintln!(
        "recording {} ({}) into {}: {} bench processes per tree, isolation: {}",
        r.task.name,
        r.fingerprint.workload,
        a.out.display(),
        a.samples,
        runner.isolation().describe()
    );
    let done = record::record(&r, &runner, cancel, a.samples, &a.out, true)?;
    println!(
        "{}: {} trees ({} measured now, {} failed to build or test) in {:.0} s",
        a.out.display(),
        done.trees,
        done.newly_measured,
        done.failed,
        done.seconds
    );
    Ok(())
}

pub fn import(a: &ImportArgs) -> Result<()> {
    let done = import::import(&a.cache, a.t1.as_deref(), &a.out)?;
    let start = if done.start_is_default {
        "the T1 defaults"
    } else {
        "the first measured configuration (no T1 defaults measured)"
    };
    println!(
        "{}: task {} with {} configurations ({} failed when Kernel Tuner ran them), {} constraints, starting from {start} {}",
        done.task_dir.display(),
        done.name,
        done.measured,
        done.failed,
        done.constraints,
        proposers::params_key(&done.start)
    );
    println!(
        "replay it: polymorph run {} --simulate {}",
        done.task_dir.display(),
        done.cache.display()
    );
    Ok(())
}
