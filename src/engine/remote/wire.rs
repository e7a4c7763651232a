//! What travels between a controller and a worker: one job as one JSON line on the worker's
//! stdin, one reply as one marked JSON line on its stdout. Trees travel whole (file bytes in
//! base64); samples travel raw, so the controller re-derives every verdict from them itself.

use crate::measure::Sample;
use crate::record::Stage;
use anyhow::{Context as _, Result, bail};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use sandbox::{FileTree, RelPath};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The marker in front of the reply line: whatever else a node prints (a login banner, srun's
/// notices, a library's warning) cannot be taken for a reply.
pub const REPLY_MARKER: &str = "POLYMORPH-REPLY ";

/// Bumped whenever a job or a reply changes shape or meaning.
pub const PROTOCOL: u32 = 2;
/// This build of polymorph: a node must run the same one, so its harness and judge settings
/// mean what the controller's do.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// A file tree: path -> (executable, base64 bytes).
#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
pub struct WireTree(BTreeMap<String, (bool, String)>);

impl From<&FileTree> for WireTree {
    fn from(tree: &FileTree) -> Self {
        WireTree(
            tree.iter()
                .map(|(p, b)| (p.to_string(), (tree.is_executable(p), STANDARD.encode(b))))
                .collect(),
        )
    }
}

impl WireTree {
    pub fn to_tree(&self) -> Result<FileTree> {
        let mut tree = FileTree::default();
        for (path, (exec, data)) in &self.0 {
            let p = RelPath::new(path)?;
            let bytes = STANDARD
                .decode(data)
                .with_context(|| format!("{path}: not base64"))?;
            tree.insert(p.clone(), bytes);
            tree.set_executable(&p, *exec);
        }
        Ok(tree)
    }
}

/// The workload a job measures: a file of the task's tree, or one from elsewhere (its bytes,
/// and the label the controller's context names it by).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum WireWorkload {
    InTree {
        path: String,
        label: String,
    },
    External {
        label: String,
        file_name: String,
        data: String,
    },
}

impl WireWorkload {
    pub fn external(label: &str, file_name: &str, bytes: &[u8]) -> Self {
        WireWorkload::External {
            label: label.to_string(),
            file_name: file_name.to_string(),
            data: STANDARD.encode(bytes),
        }
    }

    pub fn external_bytes(data: &str) -> Result<Vec<u8>> {
        STANDARD.decode(data).context("workload: not base64")
    }
}

/// One job for a worker.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Job {
    pub protocol: u32,
    pub version: String,
    /// The task's directory name (the task is loaded from a directory of that name).
    pub task_dir_name: String,
    /// The task directory as the controller read it.
    pub source: WireTree,
    pub workload: Option<WireWorkload>,
    pub op: Op,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Op {
    /// Only the node's context.
    Probe,
    /// Build and test each tree, then `rounds` interleaved bench samples of each.
    Measure { trees: Vec<WireTree>, rounds: usize },
    /// Build and test both, then benchmark them interleaved until the task's judge decides,
    /// and test the candidate again if it is accepted. `reference` is the hand-tuned score,
    /// `floor` each case's log gain of the incumbent over the floor (the judge's per-case guard).
    Evaluate {
        incumbent: WireTree,
        candidate: WireTree,
        reference: Option<f64>,
        floor: BTreeMap<String, f64>,
    },
}

impl Op {
    pub fn name(&self) -> &'static str {
        match self {
            Op::Probe => "probe",
            Op::Measure { .. } => "measure",
            Op::Evaluate { .. } => "evaluate",
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct WireSample {
    pub cases: BTreeMap<String, f64>,
    pub limit: Option<f64>,
    pub state: Option<String>,
}

impl From<&Sample> for WireSample {
    fn from(s: &Sample) -> Self {
        WireSample {
            cases: s.cases.clone(),
            limit: s.limit,
            state: s.state.clone(),
        }
    }
}

impl From<WireSample> for Sample {
    fn from(s: WireSample) -> Self {
        Sample {
            cases: s.cases,
            limit: s.limit,
            state: s.state,
        }
    }
}

/// What an evaluation on a node came to. The verdict is not sent: the controller's judge
/// decides from `pairs`. `failure` is (stage, reason, log) when the candidate failed.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WireEvaluation {
    pub pairs: Vec<(WireSample, WireSample)>,
    pub failure: Option<(Stage, String, Option<String>)>,
    pub bench_seconds: f64,
    pub process_seconds: f64,
    pub cancelled: bool,
    /// Why the node's sandbox, not the candidate, ended the evaluation (absent from workers
    /// older than this field: none).
    #[serde(default)]
    pub harness_fault: Option<String>,
}

/// A worker's answer: where it ran, the context it probed there, and the result.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Reply {
    pub node: String,
    /// How task commands are confined there: "bwrap", or "none (why)".
    pub sandbox: String,
    pub context_id: String,
    pub fingerprint: serde_json::Value,
    pub result: Outcome,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Outcome {
    Probed,
    Measured(Vec<Vec<WireSample>>),
    Evaluated(WireEvaluation),
    /// The task cannot run there (requirements missing, the start does not pass, ...): an
    /// answer about the task, not a fault of the node.
    TaskError(String),
}

impl Reply {
    /// Why the node's sandbox could not run a command of the candidate's evaluation (a fault of
    /// the node, not an outcome of the candidate), if that is how it ended.
    pub fn harness_fault(&self) -> Option<&str> {
        match &self.result {
            Outcome::Evaluated(w) => w.harness_fault.as_deref(),
            _ => None,
        }
    }
}

/// The reply in a worker's stdout: the last marked line.
pub fn find_reply(stdout: &str) -> Result<Reply> {
    let Some(line) = stdout
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix(REPLY_MARKER))
    else {
        bail!("no reply from the worker");
    };
    serde_json::from_str(line).context("the worker's reply is not valid")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trees_round_trip_with_executable_bits_and_binary_bytes() {
        let mut t = FileTree::default();
        let run = RelPath::new("bin/run.sh").unwrap();
        t.insert(run.clone(), b"#!/bin/sh\n".to_vec());
        t.set_executable(&run, true);
        t.insert(RelPath::new("data.bin").unwrap(), vec![0, 255, 10, 13]);
        let json = serde_json::to_string(&WireTree::from(&t)).unwrap();
        let back: WireTree = serde_json::from_str(&json).unwrap();
        assert_eq!(back.to_tree().unwrap(), t);
    }

    #[test]
    fn a_tree_escaping_its_root_is_refused() {
        let bad = WireTree(BTreeMap::from([("../x".into(), (false, String::new()))]));
        assert!(bad.to_tree().is_err());
    }

    #[test]
    fn the_reply_is_the_last_marked_line_whatever_surrounds_it() {
        let reply = Reply {
            node: "n1".into(),
            sandbox: "bwrap".into(),
            context_id: "abc".into(),
            fingerprint: serde_json::json!({}),
            result: Outcome::Probed,
        };
        let out = format!(
            "Welcome to n1\n{REPLY_MARKER}{{broken\n{REPLY_MARKER}{}\nbye\n",
            serde_json::to_string(&reply).unwrap()
        );
        assert_eq!(find_reply(&out).unwrap().context_id, "abc");
        assert!(find_reply("nothing here\n").is_err());
        assert!(find_reply(&format!("{REPLY_MARKER}{{\n")).is_err());
    }
}
