//! The record: runs.db (sqlx), the git ledger (git2), human review and the lock files beside
//! the database. The only place either library is named; imports `measure` only.

pub mod kinds;
pub mod ledger;
pub mod lock;
mod origin;
pub mod quarantine;
pub mod review;
pub mod store;

pub use kinds::{
    ChangeKind, EntryKind, ProposerChoice, ProposerKind, ReviewState, RunProposer, RunStatus, Stage,
};
pub use ledger::{CommitId, Ledger};
pub use lock::LockFile;
pub use store::Store;
