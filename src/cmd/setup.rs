//! `polymorph setup`: installs what a task's commands need (its pinned Python packages, its
//! locked Node.js packages), once, outside the sandbox (where the package registry is
//! reachable), so that every later command runs offline.

use crate::cli::SetupArgs;
use anyhow::{Result, bail};
use polymorph::task::{Install, Task};

pub fn setup(a: &SetupArgs) -> Result<()> {
    let task = Task::load(&a.task_dir)?;
    let installs = task.installs();
    if installs.is_empty() {
        println!(
            "task {} needs nothing installed: it has no [python] or [node] section",
            task.name
        );
        return Ok(());
    }
    for i in &installs {
        let (name, dir, what) = (&task.name, i.dir().display(), i.what());
        if i.ready() && !a.force {
            println!("task {name}: its {what} are complete at {dir}");
            continue;
        }
        if a.check {
            bail!(
                "task {name}: its {what} are not complete (at {dir}): run `polymorph setup {}`",
                a.task_dir.display()
            );
        }
        eprintln!(
            "task {name}: installing {} into {dir} ...",
            i.pins().join(", ")
        );
        match i {
            Install::Python(py) => py.install(&a.python)?,
            Install::Node(node) => node.install(&a.npm)?,
        }
        println!("task {name}: its {what} are ready at {dir}");
    }
    Ok(())
}
