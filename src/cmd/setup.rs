//! `polymorph setup`: installs what a task's commands need (its pinned Python packages, its
//! locked Node.js packages), once, outside the sandbox (where the package registry is
//! reachable), so that every later command runs offline.

use crate::cli::SetupArgs;
use anyhow::{Result, bail};
use polymorph::task::Task;
use std::path::Path;

/// One thing a task installs: what it is called, where it goes, and how.
struct Install<'a> {
    /// "Python environment is", "Node.js packages are".
    what: &'static str,
    pins: &'a [String],
    dir: &'a Path,
    ready: bool,
    install: Box<dyn Fn() -> Result<()> + 'a>,
}

pub fn setup(a: &SetupArgs) -> Result<()> {
    let task = Task::load(&a.task_dir)?;
    let mut installs = Vec::new();
    if let Some(node) = &task.node {
        installs.push(Install {
            what: "Node.js packages are",
            pins: &node.pins,
            dir: &node.dir,
            ready: node.ready(),
            install: Box::new(|| node.install(&a.npm)),
        });
    }
    if let Some(py) = &task.python {
        installs.push(Install {
            what: "Python environment is",
            pins: &py.pins,
            dir: &py.dir,
            ready: py.ready(),
            install: Box::new(|| py.install(&a.python)),
        });
    }
    if installs.is_empty() {
        println!(
            "task {} needs nothing installed: it has no [python] or [node] section",
            task.name
        );
        return Ok(());
    }
    for i in &installs {
        let (name, dir) = (&task.name, i.dir.display());
        if i.ready && !a.force {
            println!("task {name}: its {} complete at {dir}", i.what);
            continue;
        }
        if a.check {
            bail!(
                "task {name}: its {} not complete (at {dir}): run `polymorph setup {}`",
                i.what,
                a.task_dir.display()
            );
        }
        eprintln!(
            "task {name}: installing {} into {dir} ...",
            i.pins.join(", ")
        );
        (i.install)()?;
        println!("task {name}: its {} ready at {dir}", i.what);
    }
    Ok(())
}
