//! `polymorph setup`: installs what a task's commands need, once, outside the sandbox (where
//! the package registry is reachable), so that every later command runs offline.

use crate::cli::SetupArgs;
use anyhow::{Result, bail};
use polymorph::task::Task;

pub fn setup(a: &SetupArgs) -> Result<()> {
    let task = Task::load(&a.task_dir)?;
    let Some(py) = &task.python else {
        println!(
            "task {} needs nothing installed: it has no [python] section",
            task.name
        );
        return Ok(());
    };
    if py.ready() && !a.force {
        println!(
            "task {}: its Python environment is complete at {}",
            task.name,
            py.dir.display()
        );
        return Ok(());
    }
    if a.check {
        bail!(
            "task {}: its Python environment at {} is not complete: run `polymorph setup {}`",
            task.name,
            py.dir.display(),
            a.task_dir.display()
        );
    }
    eprintln!(
        "task {}: installing {} into {} ...",
        task.name,
        py.pins.join(", "),
        py.dir.display()
    );
    py.install(&a.python)?;
    println!(
        "task {}: its Python environment is ready at {}",
        task.name,
        py.dir.display()
    );
    Ok(())
}
