//! `polymorph record`: a task's whole parameter space measured into a simulation cache.

use crate::cli::RecordArgs;
use anyhow::{Result, bail};
use polymorph::engine::runner;
use polymorph::engine::simulate::record;
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
