//! The incumbent's standing against the floor (`[judge] floor`), case by case: what the judge's
//! per-case guard adds to a candidate's gain over the incumbent to know where that case would
//! end against the floor. Measured at the start of each run (the floor and the incumbent,
//! interleaved), carried forward by each accepted candidate's own per-case estimate, and
//! measured again when another controller moves the incumbent.

use super::report::REFERENCE_ROUNDS;
use crate::engine::evaluate::Evaluator;
use crate::measure::metric::case_gains;
use crate::measure::objective::Floor;
use crate::measure::{Sample, median};
use crate::task::Resolved;
use anyhow::{Context as _, Result};
use std::collections::BTreeMap;

/// Each case's log gain of the incumbent over the floor; empty when the floor is the incumbent.
#[derive(Debug, Clone, Default)]
pub struct Standing(pub BTreeMap<String, f64>);

impl Standing {
    /// Measures the incumbent (the evaluator's) against the task's floor.
    pub fn measure(r: &Resolved, exec: &mut Evaluator<'_>) -> Result<Standing> {
        let floor = match r.task.judge.floor {
            Floor::Incumbent => return Ok(Standing::default()),
            Floor::Start => r.source.clone(),
            Floor::HandTuned => r
                .hand_tuned
                .clone()
                .context("judge.floor = \"hand_tuned\" but the task has no hand-tuned baseline")?,
        };
        let incumbent = exec.incumbent_tree().clone();
        if incumbent == floor {
            return Ok(Standing::default());
        }
        let samples = exec.measure(
            vec![("the floor", floor), ("the incumbent", incumbent)],
            REFERENCE_ROUNDS,
        )?;
        let pairs: Vec<(Sample, Sample)> = samples[0]
            .iter()
            .cloned()
            .zip(samples[1].iter().cloned())
            .collect();
        Ok(Standing::of_pairs(r, &pairs))
    }

    /// The per-case median gain of the second of each pair over the first.
    fn of_pairs(r: &Resolved, pairs: &[(Sample, Sample)]) -> Standing {
        let Some((first, _)) = pairs.first() else {
            return Standing::default();
        };
        let dir = r.task.metric.direction;
        Standing(
            first
                .cases
                .keys()
                .map(|c| {
                    let gains: Vec<f64> = case_gains(dir, pairs, c).collect();
                    (c.clone(), median(&gains))
                })
                .collect(),
        )
    }

    /// An accepted candidate becomes the incumbent: each case moves by its estimate in the
    /// pairs that judged it.
    pub fn accept(&mut self, r: &Resolved, pairs: &[(Sample, Sample)]) {
        if r.task.judge.floor == Floor::Incumbent {
            return;
        }
        for (case, g) in Standing::of_pairs(r, pairs).0 {
            *self.0.entry(case).or_insert(0.0) += g;
        }
    }
}
