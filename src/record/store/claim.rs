//! Which controller works in a run. On SQLite the run lock file beside the database already
//! says it (one run per file at a time). On PostgreSQL several controllers share the database,
//! so a run is claimed with a session advisory lock on a connection of its own: held while the
//! controller lives, released by the server when its connection ends, so a run whose controller
//! died can be resumed by another, and a live one never is.

use super::{DbAt, Store};
use anyhow::{Context as _, Result};
use sqlx::AnyConnection;
use sqlx::Connection as _;

/// The advisory lock space polymorph's run claims live in (the first of the two lock keys).
const RUN_LOCKS: i32 = 0x706d_7275; // "pmru"

/// A claim on a run, held until dropped.
pub struct RunClaim {
    _conn: Option<AnyConnection>,
}

impl Store {
    /// Claims run `run_id` for this process; `None` when another live controller holds it.
    pub async fn claim_run(&self, run_id: i64) -> Result<Option<RunClaim>> {
        let DbAt::Postgres(url) = &self.at else {
            return Ok(Some(RunClaim { _conn: None }));
        };
        let mut conn = AnyConnection::connect(url)
            .await
            .with_context(|| format!("connecting to {}", self.at.shown()))?;
        let key = i32::try_from(run_id).context("run id beyond the advisory lock keys")?;
        let got: bool = sqlx::query_scalar("SELECT pg_try_advisory_lock($1, $2)")
            .bind(RUN_LOCKS)
            .bind(key)
            .fetch_one(&mut conn)
            .await?;
        Ok(got.then_some(RunClaim { _conn: Some(conn) }))
    }
}
