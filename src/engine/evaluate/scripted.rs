//! A scripted stand-in for the spin fixture's processes, for tests of the evaluator and the
//! loop against the `Processes` seam: a tree's speed follows its `PAD_PERMILLE` (fewer wasted
//! steps, more steps per second), and its build or test fails on cue.

use super::{Benched, Blame, Failure, Processes, RoundSeed};
use crate::measure::Sample;
use crate::record::Stage;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use sandbox::{FileTree, RelPath};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

/// What the scripted processes do for a tree, read from its params.h.
pub struct Scripted {
    rng: ChaCha8Rng,
    /// How far one bench may stray from the tree's speed (a log ratio, uniform either way).
    noise: f64,
    /// Each case's speed for a `PAD_PERMILLE`.
    landscape: fn(f64) -> Vec<(&'static str, f64)>,
    /// A `PAD_PERMILLE` whose benches the sandbox cannot start (`sandbox_down_for`).
    down: Option<f64>,
}

/// The spin task itself: one case, fewer wasted steps per thousand, more steps per second.
fn spin(pad: f64) -> Vec<(&'static str, f64)> {
    vec![("chain", 1000.0 / (1000.0 + pad))]
}

impl Scripted {
    pub fn new(seed: u64, noise: f64) -> Self {
        Scripted::with_landscape(seed, noise, spin)
    }

    /// Benches whose cases follow `landscape` instead of the spin task's one case.
    pub fn with_landscape(
        seed: u64,
        noise: f64,
        landscape: fn(f64) -> Vec<(&'static str, f64)>,
    ) -> Self {
        Scripted {
            rng: ChaCha8Rng::seed_from_u64(seed),
            noise,
            landscape,
            down: None,
        }
    }

    /// The sandbox cannot start the benches of a tree with this `PAD_PERMILLE`: the machine's
    /// failure, not the tree's.
    pub fn sandbox_down_for(mut self, pad: f64) -> Self {
        self.down = Some(pad);
        self
    }
}

/// The spin task's `PAD_PERMILLE` in a tree: the last word of its params.h.
fn pad(tree: &FileTree) -> Option<f64> {
    let text = tree.get(&RelPath::new("params.h").ok()?)?;
    let text = String::from_utf8_lossy(text);
    text.split_whitespace().last()?.parse().ok()
}

impl Processes for Scripted {
    /// Fails on an `#error` in kernel.c; a `TAMPER` there makes the build rewrite the
    /// harness's bench.c, as a malicious build could.
    fn build(&mut self, tree: &FileTree, dir: &Path) -> Result<(), Failure> {
        let kernel =
            RelPath::new("kernel.c").map_err(|e| Failure::new(Stage::Build, e.to_string()))?;
        let text = String::from_utf8_lossy(tree.get(&kernel).unwrap_or_default()).into_owned();
        if text.contains("#error") {
            return Err(Failure::new(Stage::Build, "build failed: #error"));
        }
        if text.contains("TAMPER") {
            std::fs::write(dir.join("bench.c"), "int main(void) { return 0; }\n")
                .map_err(|e| Failure::new(Stage::Build, e.to_string()))?;
        }
        Ok(())
    }

    fn test(&mut self, tree: &FileTree, _dir: &Path, stage: Stage) -> Result<(), Failure> {
        // A pad of 1 computes the wrong answer, but only once it has been benchmarked.
        match (pad(tree), stage) {
            (Some(1.0), Stage::Retest) => Err(Failure::new(stage, "incorrect after benchmarking")),
            _ => Ok(()),
        }
    }

    fn bench(&mut self, tree: &FileTree, _dir: &Path, _: RoundSeed) -> Result<Benched, Failure> {
        if self.down.is_some() && pad(tree) == self.down {
            return Err(Failure {
                blame: Blame::Harness,
                ..Failure::new(
                    Stage::Bench,
                    "could not run `./bench`: the sandbox could not start the command (bwrap: Can't create file at runs.db-wal)",
                )
            });
        }
        let jitter = (self.rng.random::<f64>() - 0.5) * 2.0 * self.noise;
        let cases: BTreeMap<String, f64> = (self.landscape)(pad(tree).unwrap_or(50.0))
            .into_iter()
            .map(|(c, speed)| (c.to_string(), speed * jitter.exp()))
            .collect();
        Ok(Benched {
            sample: Sample {
                cases,
                limit: None,
                state: None,
            },
            seconds: Duration::from_millis(10),
            unverified: Vec::new(),
        })
    }

    fn take_process_time(&mut self) -> Duration {
        Duration::ZERO
    }

    fn frozen_after_build(&self) -> bool {
        true
    }
}
