//! The seam between the harness and what runs a tree's commands: the task's own processes
//! (`Spawned`), a recorded cache replayed (`simulate::Replay`), or a test's script. The harness
//! keeps everything else (the workspace, the hash checks before every command, the times), so a
//! simulated run and a test go through exactly the checks a real run does.

use super::failure::Failure;
use crate::measure::Sample;
use crate::record::Stage;
use sandbox::FileTree;
use std::path::Path;
use std::time::Duration;

/// What every bench process of one round shares (`POLYMORPH_ROUND_SEED`): the incumbent's and the
/// candidate's process of one of the judge's pairs, or every tree's process in one round of a
/// side-by-side measurement; fresh for the next round. A task that draws its workload from it
/// (a serving trace's arrivals) compares the two sides on the same draw, and many draws across
/// the pairs, so no configuration is tuned to one path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RoundSeed(pub u32);

impl RoundSeed {
    /// A new round's seed, unpredictable.
    pub fn fresh() -> Self {
        RoundSeed(rand::random())
    }
}

/// One bench process's sample and the wall time it counts as benchmarking.
pub struct Benched {
    pub sample: Sample,
    pub seconds: Duration,
    /// The cases whose metric line says its bench verified none of its timed calls' outputs
    /// (no positive `"verified"` count): what `check` warns about. None for a replay.
    pub unverified: Vec<String>,
}

/// Runs a task's build, test and bench for one tree in its workspace.
pub trait Processes {
    /// Builds `tree` in `dir`, whose harness files were just verified.
    fn build(&mut self, tree: &FileTree, dir: &Path) -> Result<(), Failure>;
    /// Runs the task's test in `dir`; `stage` is `Test`, or `Retest` after benchmarking.
    fn test(&mut self, tree: &FileTree, dir: &Path, stage: Stage) -> Result<(), Failure>;
    /// One bench process of round `round`: one sample.
    fn bench(&mut self, tree: &FileTree, dir: &Path, round: RoundSeed) -> Result<Benched, Failure>;
    /// Wall time spent in the task's processes since the last call (every command, benches
    /// included, and waiting for the bench lock); reset. A replay spends none.
    fn take_process_time(&mut self) -> Duration;
    /// Whether nothing after the build can write the tree or outlive its command (bwrap, or no
    /// process at all), so a file's stamp is proof enough that it is unchanged.
    fn frozen_after_build(&self) -> bool;
    /// Runs every command from now on under code layout `layout` (`POLYMORPH_LAYOUT` in its
    /// environment, which a task's build may use to place code otherwise), or under none. A
    /// replayed cache and a test's script have no layout to change.
    fn set_layout(&mut self, _layout: Option<u32>) {}
}
