//! The replay proposer: candidates from a JSON Lines file, one a line (`{"diff": ...}`,
//! `{"files": {...}}` or `{"params": {...}}`, optional `"note"`). The whole file is checked
//! when it is opened, so a bad line is reported with its number before anything runs.

use crate::{AgentError, Origin, Proposal, ProposalContext, ProposedChange, Proposer};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Line {
    diff: Option<String>,
    files: Option<BTreeMap<String, String>>,
    params: Option<crate::Params>,
    note: Option<String>,
}

pub struct ReplayProposer {
    items: Vec<Proposal>,
    next: usize,
}

impl ReplayProposer {
    pub fn open(path: &Path) -> Result<Self, AgentError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| AgentError::Io {
            file: file.clone(),
            source,
        })?;
        Self::parse(&file, &text)
    }

    pub fn parse(file: &str, text: &str) -> Result<Self, AgentError> {
        let name = Path::new(file)
            .file_name()
            .map_or(file.to_string(), |n| n.to_string_lossy().into_owned());
        let mut items = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let line = i + 1;
            let err = |why: String| AgentError::Replay {
                file: file.to_string(),
                line,
                why,
            };
            if raw.trim().is_empty() {
                continue;
            }
            let parsed: Line = serde_json::from_str(raw).map_err(|e| err(e.to_string()))?;
            let change = match (parsed.diff, parsed.files, parsed.params) {
                (Some(d), None, None) => ProposedChange::Diff(d),
                (None, Some(f), None) => ProposedChange::Files(f),
                (None, None, Some(p)) => ProposedChange::Params(p),
                _ => {
                    return Err(err(
                        "needs exactly one of \"diff\", \"files\" or \"params\"".into(),
                    ));
                }
            };
            items.push(Proposal {
                change,
                note: parsed.note,
                origin: Origin::Replay {
                    file: name.to_string(),
                    line,
                },
                usage: None,
                screen_only: false,
            });
        }
        if items.is_empty() {
            return Err(AgentError::Replay {
                file: file.to_string(),
                line: 0,
                why: "no candidates in the file".into(),
            });
        }
        Ok(ReplayProposer { items, next: 0 })
    }

    /// Skips the first `n` candidates (already evaluated by an interrupted run being resumed).
    pub fn skip(&mut self, n: usize) {
        self.next = self.next.saturating_add(n).min(self.items.len());
    }
}

#[async_trait::async_trait]
impl Proposer for ReplayProposer {
    fn name(&self) -> &str {
        "replay"
    }

    async fn next(&mut self, _ctx: &ProposalContext) -> Result<Option<Proposal>, AgentError> {
        let item = self.items.get(self.next).cloned();
        self.next += 1;
        Ok(item)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn reads_each_kind_and_reports_bad_lines() {
        let ok = "{\"diff\": \"--- a\"}\n\n{\"files\": {\"k.c\": \"x\"}, \"note\": \"n\"}\n{\"params\": {\"T\": 4}}\n";
        let mut r = ReplayProposer::parse("c.jsonl", ok).unwrap_or_else(|e| panic!("{e}"));
        r.skip(1);
        let p = r.next(&ProposalContext::default()).await.ok().flatten();
        assert_eq!(
            p.map(|p| (p.origin.to_string(), p.note)),
            Some(("replay:c.jsonl:3".to_string(), Some("n".to_string())))
        );
        for (bad, want) in [
            ("{\"diff\": 1}", "c.jsonl:1"),
            ("{\"x\": 1}", "unknown field"),
            ("{}", "exactly one"),
            ("", "no candidates"),
        ] {
            let e = ReplayProposer::parse("c.jsonl", bad)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(e.contains(want), "{bad}: {e}");
        }
    }
}
