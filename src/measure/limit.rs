//! A measurement the hardware cannot produce: a case past the machine's bound the task declares,
//! or above the limit (the speed of light) the bench measured in the same process.

use super::judge::Judge;
use super::sample::Sample;

/// How far above the limit its own process measured a case may be read as the noise of the two
/// measurements rather than a lie: on an H200 the hand-tuned add-rmsnorm kernel measured 1.006
/// of the copy bandwidth on prefill (docs/experiments/2026-12-04-cuda-task-h200.md).
const LIMIT_NOISE: f64 = 0.05;

impl Judge<'_> {
    /// Why a candidate needs a human: a case measured past the machine's bound the task
    /// declares, or above the hardware's limit that its own process measured (faster than the
    /// speed of light is a lie or a broken bench).
    pub(super) fn above_limit(&self, pairs: &[(Sample, Sample)]) -> Option<String> {
        let past_bound = self.metric.bound.as_ref().and_then(|b| {
            pairs.iter().find_map(|(_, c)| {
                let (case, v, bound) = b.past(self.metric.direction, c)?;
                Some(format!(
                    "past the machine's bound: case {case} at {v:.4} {}, where the task declares {bound:.4} the most this machine can reach; needs a human",
                    self.metric.name
                ))
            })
        });
        if past_bound.is_some() {
            return past_bound;
        }
        let name = self.metric.limit.as_deref()?;
        pairs.iter().find_map(|(_, c)| {
            let limit = c.limit?;
            let (case, v) = c.cases.iter().find(|(_, v)| **v > limit * (1.0 + LIMIT_NOISE))?;
            Some(format!(
                "measured above the hardware's limit: case {case} at {v:.4} {}, over the {limit:.4} {name} its bench measured by more than {:.0}%; needs a human",
                self.metric.name,
                LIMIT_NOISE * 100.0
            ))
        })
    }
}
