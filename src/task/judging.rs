//! `[judge]` of task.toml: how many pairs the judge may look at, at which confidence, and the
//! floor no case may end below.

use crate::measure::JudgeSettings;
use crate::measure::objective::Floor;
use anyhow::{Result, bail};
use serde::Deserialize;
use std::path::Path;

/// Fewest benchmark pairs before any verdict: with 6 pairs the signed-rank interval can reach 95%.
const DEFAULT_MIN_PAIRS: usize = 6;
/// Pairs after which a candidate with no sign of the gain is dropped (see `JudgeSettings`).
const DEFAULT_SCREEN_PAIRS: usize = 2;
/// Most benchmark pairs before an unclear candidate is rejected as inconclusive.
const DEFAULT_MAX_PAIRS: usize = 20;
/// Confidence of the judge's intervals when a task names none.
const DEFAULT_CONFIDENCE: f64 = 0.95;

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawJudge {
    screen_pairs: Option<usize>,
    min_pairs: Option<usize>,
    max_pairs: Option<usize>,
    confidence: Option<f64>,
    floor: Option<String>,
}

/// `[judge]`: 6 <= min_pairs <= max_pairs <= 200, a confidence level in [0.5, 1), and a floor
/// the task has (`hand_tuned` needs a hand-tuned baseline).
pub(super) fn judge(file: &Path, raw: RawJudge, has_hand_tuned: bool) -> Result<JudgeSettings> {
    let f = file.display();
    let judge = JudgeSettings {
        screen_pairs: raw.screen_pairs.unwrap_or(DEFAULT_SCREEN_PAIRS),
        min_pairs: raw.min_pairs.unwrap_or(DEFAULT_MIN_PAIRS),
        max_pairs: raw.max_pairs.unwrap_or(DEFAULT_MAX_PAIRS),
        confidence: raw.confidence.unwrap_or(DEFAULT_CONFIDENCE),
        floor: match raw.floor {
            None => Floor::Start,
            Some(f) => f.parse().map_err(|e: String| {
                anyhow::anyhow!("{f}: judge.floor: {e}", f = file.display())
            })?,
        },
        rule: Default::default(),
    };
    if judge.floor == Floor::HandTuned && !has_hand_tuned {
        bail!(
            "{f}: judge.floor = \"hand_tuned\" needs a hand-tuned baseline ([baselines] hand_tuned)"
        );
    }
    if judge.min_pairs < 6 || judge.max_pairs < judge.min_pairs || judge.max_pairs > 200 {
        bail!(
            "{f}: judge.min_pairs = {}, judge.max_pairs = {}: need 6 <= min_pairs <= max_pairs <= 200",
            judge.min_pairs,
            judge.max_pairs
        );
    }
    if judge.screen_pairs >= judge.min_pairs {
        bail!(
            "{f}: judge.screen_pairs = {}: screening must end before min_pairs ({}); 0 turns it off",
            judge.screen_pairs,
            judge.min_pairs
        );
    }
    if !(0.5..1.0).contains(&judge.confidence) {
        bail!(
            "{f}: judge.confidence = {}: expected a level in [0.5, 1), e.g. 0.95",
            judge.confidence
        );
    }
    Ok(judge)
}
