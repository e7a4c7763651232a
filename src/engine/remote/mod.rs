//! Remote targets: evaluations on other machines through an existing engine (ssh to one box,
//! Slurm job steps on a cluster), each node running `polymorph worker` under the same sandbox
//! rules. The controller keeps the store and the ledger and judges every verdict itself from
//! the raw samples a node sends back.

pub mod pool;
pub mod target;
pub mod wire;

pub use pool::{NoTargetLeft, Pick, Pool, TargetId};
pub use target::{Remote, RemoteSpec, Target, TargetOptions, VerifyOn};
