//! runs.db: SQLite through sqlx (WAL, foreign keys, embedded append-only migrations). Each
//! evaluation is written in one transaction with its candidate, samples and ledger entry, so a
//! run killed at any moment leaves either all of an evaluation or none of it.

mod candidates;
mod entries;
mod quarantine;
mod query;
mod readonly;
mod rows;
mod runs;
mod schedules;

pub use quarantine::QuarantinedRow;
pub use rows::*;

use anyhow::{Context as _, Result, bail};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions};
use std::path::Path;
use std::time::Duration;

/// How long a writer waits for another process's transaction before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");

/// Now, as runs.db stores times: RFC 3339 UTC to the second.
pub fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

#[derive(Clone)]
pub struct Store {
    pool: SqlitePool,
    path: std::path::PathBuf,
}

impl Store {
    /// Opens (creating if missing) runs.db at `path` and brings its schema up to date.
    pub async fn open(path: &Path) -> Result<Store> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("creating {}", parent.display()))?;
        }
        // Two processes opening a new runs.db at once (a run starting while `query` polls it)
        // must not both create its tables: the check and the migration happen under this lock.
        let lock_path = format!("{}.migrate.lock", path.display());
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .with_context(|| format!("opening {lock_path}"))?;
        lock.lock()
            .with_context(|| format!("locking {lock_path}"))?;
        let opts = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .foreign_keys(true)
            .busy_timeout(BUSY_TIMEOUT);
        let pool = SqlitePoolOptions::new()
            .max_connections(4)
            .connect_with(opts)
            .await
            .with_context(|| format!("opening {} (is it an SQLite database?)", path.display()))?;
        let tables: Vec<String> = sqlx::query_scalar(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'",
        )
        .fetch_all(&pool)
        .await
        .with_context(|| format!("{} is not an SQLite database", path.display()))?;
        if !tables.is_empty() && !tables.iter().any(|t| t == "_sqlx_migrations") {
            bail!(
                "{} is not a polymorph database (it has other tables: {}); pass --db elsewhere",
                path.display(),
                tables.join(", ")
            );
        }
        MIGRATOR
            .run(&pool)
            .await
            .with_context(|| format!("migrating {}", path.display()))?;
        drop(lock);
        Ok(Store {
            pool,
            path: path.to_path_buf(),
        })
    }

    /// Closes every connection (so another process may open the file exclusively).
    pub async fn close(self) {
        self.pool.close().await;
    }

    /// A write transaction: several steps that land together or not at all.
    pub async fn begin(&self) -> Result<Tx> {
        Ok(Tx(self.pool.begin().await?))
    }
}

/// An open write transaction on runs.db (see `Store::begin`); dropped without `commit`, nothing
/// of it is written.
pub struct Tx(sqlx::Transaction<'static, sqlx::Sqlite>);

impl Tx {
    pub async fn commit(self) -> Result<()> {
        Ok(self.0.commit().await?)
    }
}
