//! The sandbox: builds a fresh tree per candidate, verifies a proposed change before anything
//! runs (editable paths only, no escapes, size caps), applies it, guards harness-owned files by
//! hash, and runs commands with an empty stdin, a scrubbed environment, a timeout that kills the
//! whole process group, capped output and, where `bwrap` exists, no network and a read-only root.
//!
//! It knows nothing about models or proposers: a change arrives as text and file contents.

mod cgroup;
mod change;
mod error;
mod exec;
mod hide;
mod isolation;
mod params;
mod patch;
mod path;
mod reap;
mod seccomp;
mod snapshot;
mod status;
mod symbols;
mod text;
mod workspace;

pub use change::{Change, Edit, Limits, VerifiedChange, verify_change};
pub use error::SandboxError;
pub use exec::{CancelFlag, CommandSpec, ExitKind, Outcome, Runner, TreeAccess};
pub use isolation::Isolation;
pub use params::{
    ParamFormat, param_scalar, param_token, parse_params, render_params, rewrite_params,
};
pub use patch::{FilePatch, parse_unified_diff};
pub use path::RelPath;
pub use reap::reap_orphans;
pub use snapshot::Snapshot;
pub use symbols::{defined_globals, foreign_globals};
pub use text::{hidden_character, shown};
pub use workspace::{FileTree, Manifest, Workspace, sha256_hex};
