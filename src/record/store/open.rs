//! Opening the database: an SQLite file (WAL, foreign keys, created on first use) or a
//! PostgreSQL database; refusing one that holds somebody else's tables; bringing the schema up
//! to date with that backend's migrations; then the `Any` pool every query goes through.

use super::BUSY_TIMEOUT;
use anyhow::{Context as _, Result, bail};
use sqlx::AnyPool;
use sqlx::ConnectOptions as _;
use sqlx::Connection as _;
use sqlx::any::AnyPoolOptions;
use sqlx::migrate::Migrator;
use sqlx::postgres::PgConnectOptions;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions};
use std::path::Path;
use std::time::Duration;

static SQLITE: Migrator = sqlx::migrate!("./migrations/sqlite");
static POSTGRES: Migrator = sqlx::migrate!("./migrations/postgres");

/// How long opening a PostgreSQL connection may take before the command fails.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(20);

/// Refuses a database whose tables are not polymorph's.
fn check_tables(tables: &[String], shown: &str) -> Result<()> {
    if !tables.is_empty() && !tables.iter().any(|t| t == "_sqlx_migrations") {
        bail!(
            "{shown} is not a polymorph database (it has other tables: {}); pass --db elsewhere",
            tables.join(", ")
        );
    }
    Ok(())
}

pub(super) async fn sqlite(path: &Path) -> Result<AnyPool> {
    sqlx::any::install_default_drivers();
    let path = std::path::absolute(path)?;
    if let Some(parent) = path.parent() {
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
        .filename(&path)
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .foreign_keys(true)
        .busy_timeout(BUSY_TIMEOUT);
    let native = SqlitePoolOptions::new()
        .max_connections(1)
        .connect_with(opts.clone())
        .await
        .with_context(|| format!("opening {} (is it an SQLite database?)", path.display()))?;
    let tables: Vec<String> = sqlx::query_scalar(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'",
    )
    .fetch_all(&native)
    .await
    .with_context(|| format!("{} is not an SQLite database", path.display()))?;
    check_tables(&tables, &path.display().to_string())?;
    SQLITE
        .run(&native)
        .await
        .with_context(|| format!("migrating {}", path.display()))?;
    native.close().await;
    drop(lock);
    // The journal mode stays in the file; foreign keys and the busy timeout are per connection.
    let url = opts.to_url_lossy();
    let busy = format!("PRAGMA busy_timeout = {}", BUSY_TIMEOUT.as_millis());
    // Connections are kept for the store's life: SQLite removes its -wal and -shm files when
    // the last one closes, and a run's sandbox hides whichever of them exist at each command's
    // start, so they should not come and go under it.
    AnyPoolOptions::new()
        .max_connections(4)
        .min_connections(1)
        .idle_timeout(None)
        .max_lifetime(None)
        .after_connect(move |conn, _| {
            let busy = busy.clone();
            Box::pin(async move {
                sqlx::query(sqlx::AssertSqlSafe(busy))
                    .execute(&mut *conn)
                    .await?;
                sqlx::query("PRAGMA foreign_keys = ON")
                    .execute(&mut *conn)
                    .await?;
                Ok(())
            })
        })
        .connect(url.as_str())
        .await
        .with_context(|| format!("opening {}", path.display()))
}

pub(super) async fn postgres(url: &str, shown: &str) -> Result<AnyPool> {
    sqlx::any::install_default_drivers();
    // One plain connection first: its error says why (refused, unknown host, bad password)
    // where a pool would only time out.
    let opts: PgConnectOptions = url
        .parse()
        .with_context(|| format!("{shown} is not a PostgreSQL URL"))?;
    let mut conn = tokio::time::timeout(CONNECT_TIMEOUT, opts.connect())
        .await
        .map_err(|_| anyhow::anyhow!("connecting to {shown}: no answer in {CONNECT_TIMEOUT:?}"))?
        .with_context(|| format!("connecting to {shown}"))?;
    let tables: Vec<String> = sqlx::query_scalar(
        "SELECT table_name::text FROM information_schema.tables WHERE table_schema = current_schema()",
    )
    .fetch_all(&mut conn)
    .await
    .with_context(|| format!("reading the tables of {shown}"))?;
    check_tables(&tables, shown)?;
    // Controllers starting at once on a new database: one migrates, the others wait for it
    // (sqlx's migrator takes PostgreSQL's advisory lock).
    POSTGRES
        .run(&mut conn)
        .await
        .with_context(|| format!("migrating {shown}"))?;
    conn.close().await?;
    AnyPoolOptions::new()
        .max_connections(4)
        .acquire_timeout(CONNECT_TIMEOUT)
        .connect(url)
        .await
        .with_context(|| format!("connecting to {shown}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqlx::sqlite::SqliteConnection;

    /// The migrations up to (not including) the one whose description names `what`.
    fn before(set: &Migrator, what: &str) -> Migrator {
        let mut m = Migrator::DEFAULT;
        m.migrations = set
            .iter()
            .take_while(|m| !m.description.contains(what))
            .cloned()
            .collect::<Vec<_>>()
            .into();
        m
    }

    #[tokio::test]
    async fn held_contenders_recorded_as_rejected_become_held_and_the_counts_follow() {
        let mut conn = SqliteConnection::connect("sqlite::memory:").await.unwrap();
        before(&SQLITE, "held verdict")
            .run(&mut conn)
            .await
            .unwrap();
        sqlx::raw_sql(
            "INSERT INTO runs (id, task, task_dir, context_id, proposer, budget, seed, status, started_at)
                 VALUES (1, 't', '.', 'c', 'search', 3, 1, 'finished', 'now');
             INSERT INTO candidates (id, run_id, seq, task, context_id, proposer, origin, kind, payload, created_at)
                 VALUES (1, 1, 1, 't', 'c', 'search', 'o', 'params', '{}', 'now'),
                        (2, 1, 2, 't', 'c', 'search', 'o', 'params', '{}', 'now');
             INSERT INTO evaluations (candidate_id, verdict, reason, stage, created_at)
                 VALUES (1, 'rejected', 'held after screening: +30.0% over the incumbent', 'judge', 'now'),
                        (2, 'rejected', 'slower in screening', 'judge', 'now');",
        )
        .execute(&mut conn)
        .await
        .unwrap();
        SQLITE.run(&mut conn).await.unwrap();
        let verdicts: Vec<String> =
            sqlx::query_scalar("SELECT verdict FROM candidate_results ORDER BY candidate")
                .fetch_all(&mut conn)
                .await
                .unwrap();
        assert_eq!(verdicts, ["held", "rejected"]);
        let counts = "SELECT n_rejected, n_held FROM runs WHERE id = 1";
        let got: (i64, i64) = sqlx::query_as(counts).fetch_one(&mut conn).await.unwrap();
        assert_eq!(got, (1, 1));
        // New rows are counted by their verdict, not by their reason.
        sqlx::raw_sql(
            "INSERT INTO candidates (id, run_id, seq, task, context_id, proposer, origin, kind, payload, created_at)
                 VALUES (3, 1, 3, 't', 'c', 'search', 'o', 'params', '{}', 'now');
             INSERT INTO evaluations (candidate_id, verdict, reason, stage, created_at)
                 VALUES (3, 'held', 'any words', 'judge', 'now');",
        )
        .execute(&mut conn)
        .await
        .unwrap();
        let got: (i64, i64) = sqlx::query_as(counts).fetch_one(&mut conn).await.unwrap();
        assert_eq!(got, (1, 2));
        let held: i64 = sqlx::query_scalar("SELECT held FROM proposer_stats")
            .fetch_one(&mut conn)
            .await
            .unwrap();
        assert_eq!(held, 2);
    }
}
