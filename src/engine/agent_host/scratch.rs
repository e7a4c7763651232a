//! The agent's scratch tree: a copy of the incumbent one conversation edits, whose files the
//! model reads and writes through the host (editable files only) and whose build-and-test runs
//! through the same sandbox as every evaluation.

use super::fold::Folds;
use super::settings::AgentSettings;
use crate::engine::evaluate::Harness;
use crate::task::{Task, Workload};
use proposers::llm::{BuildReport, ModelClient, ToolHost};
use proposers::{ParamSpace, Params};
use sandbox::{CancelFlag, FileTree, RelPath, Runner};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Part of a build or test failure shown to the model: the first errors matter most.
const FEEDBACK_CAP: usize = 3_000;
/// Largest file the agent may write into its scratch tree (the sandbox's cap too).
const MAX_WRITE_BYTES: usize = 1 << 20;
/// Editable files up to this size in all are shown whole, so a model can fall back to
/// answering with whole files.
const WHOLE_FILES_MAX: usize = 24 * 1024;

/// What every conversation of the agent shares: the task, where its commands run, the client.
pub(super) struct Shared {
    pub settings: AgentSettings,
    pub client: ModelClient,
    pub task: Task,
    pub source: FileTree,
    pub runner: Runner,
    pub cancel: CancelFlag,
    pub workload: Option<Workload>,
    pub context: String,
    pub context_id: String,
}

/// The scratch tree one conversation edits.
pub(super) struct Scratch {
    pub shared: Arc<Shared>,
    /// The incumbent's parameter space (knobs it added included), which an assignment is
    /// checked against; why there is none, for a task without `[params]`.
    pub space: Result<ParamSpace, String>,
    /// The incumbent's assignment: proposed again, it would be no change at all.
    pub current: Option<Params>,
    pub tree: FileTree,
    pub original: BTreeMap<String, String>,
    pub process_time: Duration,
    /// Branches the incumbent's parameters do not compile, shown folded to the model.
    pub folds: Arc<Folds>,
}

fn trim_feedback(text: &str) -> String {
    // Compiler errors first, then the tail: what a person would look at.
    let important: Vec<&str> = text
        .lines()
        .filter(|l| {
            ["error", "Error", "FAIL", "warning"]
                .iter()
                .any(|k| l.contains(k))
        })
        .collect();
    let mut out = important.join("\n");
    if out.len() < FEEDBACK_CAP / 2 {
        let tail: String = text
            .chars()
            .rev()
            .take(FEEDBACK_CAP / 2)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        out.push_str("\n...\n");
        out.push_str(&tail);
    }
    out.chars().take(FEEDBACK_CAP).collect()
}

#[async_trait::async_trait]
impl ToolHost for Scratch {
    fn list_files(&self) -> Vec<String> {
        self.tree.iter().map(|(p, _)| p.to_string()).collect()
    }

    fn read_file(&self, path: &str) -> Result<String, String> {
        let p = RelPath::new(path).map_err(|e| e.to_string())?;
        let bytes = self
            .tree
            .get(&p)
            .ok_or_else(|| format!("no file {path}; list_files shows what exists"))?;
        let text = String::from_utf8(bytes.to_vec()).map_err(|_| format!("{path} is not text"))?;
        Ok(self.folds.fold(path, &text))
    }

    fn write_file(&mut self, path: &str, content: &str) -> Result<(), String> {
        let p = RelPath::new(path).map_err(|e| e.to_string())?;
        let task = &self.shared.task;
        if !task.is_editable(&p) {
            return Err(format!(
                "{path} is protected: only {} may change",
                task.editable_globs.join(", ")
            ));
        }
        if content.len() > MAX_WRITE_BYTES || content.contains('\0') {
            return Err(format!(
                "{path}: content must be text under {MAX_WRITE_BYTES} bytes"
            ));
        }
        let content = self.folds.unfold(path, content)?;
        self.tree.insert(p, content.into_bytes());
        Ok(())
    }

    async fn build_and_test(&mut self) -> BuildReport {
        let started = Instant::now();
        let tree = self.tree.clone();
        let sh = &self.shared;
        let result = tokio::task::block_in_place(|| {
            let mut h = Harness::new(
                &sh.task,
                &sh.source,
                &sh.runner,
                sh.cancel.clone(),
                sh.workload.as_ref(),
                &sh.context_id,
            )
            .map_err(|e| format!("{e:#}"))?;
            h.prepare(tree)
                .map(|_| ())
                .map_err(|f| format!("{}\n{}", f.reason, f.log.unwrap_or_default()))
        });
        self.process_time += started.elapsed();
        match result {
            Ok(()) => BuildReport {
                passed: true,
                text: "ok: it builds and the correctness test passes".to_string(),
            },
            Err(e) => BuildReport {
                passed: false,
                text: trim_feedback(&e),
            },
        }
    }

    fn check_params(&self, params: &Params) -> Result<(), String> {
        let space = self.space.as_ref().map_err(Clone::clone)?;
        if self.current.as_ref() == Some(params) {
            return Err("they are the current values: change at least one of them".into());
        }
        space.invalid(params).map_or(Ok(()), Err)
    }

    fn param_space(&self) -> Option<&ParamSpace> {
        self.space.as_ref().ok()
    }

    fn is_editable(&self, path: &str) -> bool {
        RelPath::new(path).is_ok_and(|p| self.shared.task.is_editable(&p))
    }

    fn editable_files(&self) -> Option<BTreeMap<String, String>> {
        let files: BTreeMap<String, String> = self
            .tree
            .iter()
            .filter(|(p, _)| self.shared.task.is_editable(p))
            .map(|(p, b)| {
                let path = p.to_string();
                let text = self.folds.fold(&path, &String::from_utf8_lossy(b));
                (path, text)
            })
            .collect();
        let total: usize = files.values().map(String::len).sum();
        (total <= WHOLE_FILES_MAX).then_some(files)
    }

    fn changed_files(&self) -> BTreeMap<String, String> {
        self.tree
            .iter()
            .filter(|(p, _)| self.shared.task.is_editable(p))
            .map(|(p, b)| (p.to_string(), String::from_utf8_lossy(b).into_owned()))
            .filter(|(p, c)| self.original.get(p) != Some(c))
            .collect()
    }
}
