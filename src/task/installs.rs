//! What `polymorph setup` installs for a task, once, outside the sandbox: its pinned Python
//! packages and its locked Node.js packages. `setup` installs them; a run, `check` and
//! `context` refuse to start until each is complete, saying what to run.

use super::{NodeEnv, PythonEnv, Task};
use std::path::Path;

/// One environment a task's commands need installed.
pub enum Install<'a> {
    Python(&'a PythonEnv),
    Node(&'a NodeEnv),
}

impl Install<'_> {
    /// "Python packages", "Node.js packages".
    pub fn what(&self) -> &'static str {
        match self {
            Install::Python(_) => "Python packages",
            Install::Node(_) => "Node.js packages",
        }
    }

    pub fn pins(&self) -> &[String] {
        match self {
            Install::Python(p) => &p.pins,
            Install::Node(n) => &n.pins,
        }
    }

    pub fn dir(&self) -> &Path {
        match self {
            Install::Python(p) => &p.dir,
            Install::Node(n) => &n.dir,
        }
    }

    /// Complete, as a finished installation leaves it.
    pub fn ready(&self) -> bool {
        match self {
            Install::Python(p) => p.ready(),
            Install::Node(n) => n.ready(),
        }
    }
}

impl Task {
    /// What the task's `[python]` and `[node]` sections ask to be installed, in that order.
    pub fn installs(&self) -> Vec<Install<'_>> {
        let python = self.python.iter().map(Install::Python);
        python.chain(self.node.iter().map(Install::Node)).collect()
    }
}
