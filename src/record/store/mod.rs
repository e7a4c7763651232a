//! The history database: SQLite (a file, the default) or PostgreSQL (`--db postgres://...`,
//! shared by several controllers), both through sqlx's `Any` driver, so every query below is
//! written once in the SQL the two share. Embedded append-only migrations per backend (the same
//! numbers, the same tables and views). Each evaluation is written in one transaction with its
//! candidate, samples and ledger entry, so a run killed at any moment leaves either all of an
//! evaluation or none of it.

mod candidates;
mod claim;
mod entries;
mod open;
mod quarantine;
mod query;
mod readonly;
mod rows;
mod runs;
mod schedules;

pub use candidates::Superseded;
pub use claim::RunClaim;
pub use quarantine::QuarantinedRow;
pub use rows::*;

use anyhow::Result;
use sqlx::AnyPool;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long a writer waits for another process's transaction before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// Now, as the database stores times: RFC 3339 UTC to the second.
pub fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// Where the history lives, as `--db` names it: a PostgreSQL URL, or else an SQLite file.
#[derive(Debug, Clone, PartialEq)]
pub enum DbAt {
    Sqlite(PathBuf),
    Postgres(String),
}

impl DbAt {
    pub fn parse(db: &Path) -> DbAt {
        match db.to_str() {
            Some(s) if s.starts_with("postgres://") || s.starts_with("postgresql://") => {
                DbAt::Postgres(s.to_string())
            }
            _ => DbAt::Sqlite(db.to_path_buf()),
        }
    }

    /// The database as messages name it (a URL without its password).
    pub fn shown(&self) -> String {
        match self {
            DbAt::Sqlite(p) => p.display().to_string(),
            DbAt::Postgres(url) => {
                let (scheme, rest) = url.split_once("://").unwrap_or(("postgres", url));
                match rest.split_once('@') {
                    Some((auth, host)) if auth.contains(':') => {
                        let user = auth.split(':').next().unwrap_or_default();
                        format!("{scheme}://{user}:***@{host}")
                    }
                    _ => url.clone(),
                }
            }
        }
    }
}

#[derive(Clone)]
pub struct Store {
    pool: AnyPool,
    at: DbAt,
}

impl Store {
    /// Opens (creating if missing) the database `db` names and brings its schema up to date.
    pub async fn open(db: &Path) -> Result<Store> {
        let at = DbAt::parse(db);
        let pool = match &at {
            DbAt::Sqlite(path) => open::sqlite(path).await?,
            DbAt::Postgres(url) => open::postgres(url, &at.shown()).await?,
        };
        Ok(Store { pool, at })
    }

    /// `open` for the commands that read what runs recorded (`history`, `show`, `best`,
    /// `query`, `review`): an SQLite file that is not there is an error naming it, not a new
    /// empty database (a mistyped `--db` would otherwise read as "no runs yet").
    pub async fn open_existing(db: &Path) -> Result<Store> {
        if let DbAt::Sqlite(path) = DbAt::parse(db)
            && !path.exists()
        {
            anyhow::bail!(
                "no runs database at {}: `polymorph run` creates one there; --db or POLYMORPH_DB names another",
                path.display()
            );
        }
        Store::open(db).await
    }

    /// Another handle on the same database with connections of its own (for another runtime:
    /// connections belong to the runtime that opened them).
    pub async fn reopen(&self) -> Result<Store> {
        let db = match &self.at {
            DbAt::Sqlite(p) => p.clone(),
            DbAt::Postgres(url) => PathBuf::from(url),
        };
        Store::open(&db).await
    }

    /// Whether the database is PostgreSQL (shared by controllers that coordinate through it).
    pub fn is_shared(&self) -> bool {
        matches!(self.at, DbAt::Postgres(_))
    }

    /// Closes every connection (so another process may open the file exclusively).
    pub async fn close(self) {
        self.pool.close().await;
    }

    /// A write transaction: several steps that land together or not at all.
    pub async fn begin(&self) -> Result<Tx> {
        Ok(Tx {
            tx: self.write_tx().await?,
            shared: self.is_shared(),
        })
    }

    /// Starts a transaction that will write. On SQLite it takes the write lock first (`BEGIN
    /// IMMEDIATE`, waiting for another writer up to the busy timeout): a plain `BEGIN` that reads
    /// and then writes fails at once with "database is locked" when another connection (a run
    /// beside it on the same runs.db) committed in between, since waiting cannot make its read
    /// current again.
    async fn write_tx(&self) -> Result<sqlx::Transaction<'static, sqlx::Any>> {
        Ok(match self.at {
            DbAt::Sqlite(_) => self.pool.begin_with("BEGIN IMMEDIATE").await?,
            DbAt::Postgres(_) => self.pool.begin().await?,
        })
    }
}

/// An open write transaction (see `Store::begin`); dropped without `commit`, nothing of it is
/// written.
pub struct Tx {
    tx: sqlx::Transaction<'static, sqlx::Any>,
    shared: bool,
}

impl Tx {
    pub async fn commit(self) -> Result<()> {
        Ok(self.tx.commit().await?)
    }
}

/// A nullable DOUBLE PRECISION parameter. sqlx's `Any` driver (0.9) sends a NULL `f64` to
/// PostgreSQL as a `float4`, and once the statement was prepared with a `float8` there that
/// fails ("incorrect binary data format"); this sends NULL as the same type as a value.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Real(pub Option<f64>);

impl sqlx::Type<sqlx::Any> for Real {
    fn type_info() -> sqlx::any::AnyTypeInfo {
        <f64 as sqlx::Type<sqlx::Any>>::type_info()
    }
}

impl sqlx::Encode<'_, sqlx::Any> for Real {
    fn encode_by_ref(
        &self,
        buf: &mut <sqlx::Any as sqlx::Database>::ArgumentBuffer,
    ) -> Result<sqlx::encode::IsNull, sqlx::error::BoxDynError> {
        match self.0 {
            Some(v) => <f64 as sqlx::Encode<'_, sqlx::Any>>::encode_by_ref(&v, buf),
            // The driver turns an `f32` null into an `f64` one (and an `f64` null into `f32`).
            None => <Option<f32> as sqlx::Encode<'_, sqlx::Any>>::encode_by_ref(&None, buf),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn db_is_postgres_by_url_and_messages_hide_its_password() {
        let pg = DbAt::parse(Path::new("postgresql://ann:s3cret@db.lab:5432/polymorph"));
        assert_eq!(pg.shown(), "postgresql://ann:***@db.lab:5432/polymorph");
        let plain = DbAt::parse(Path::new("postgres://ann@db.lab/polymorph"));
        assert_eq!(plain.shown(), "postgres://ann@db.lab/polymorph");
        assert_eq!(
            DbAt::parse(Path::new("postgres.db")),
            DbAt::Sqlite("postgres.db".into())
        );
    }

    /// Two runs side by side on one runs.db: one records an evaluation (reads the incumbent,
    /// then inserts) while the other commits a write between its read and its insert. Both
    /// land; the first waits for nothing, the second for the first's commit.
    #[tokio::test]
    async fn a_write_transaction_survives_a_writer_beside_it() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("runs.db");
        let a = Store::open(&db).await.unwrap();
        let b = Store::open(&db).await.unwrap();
        sqlx::query("CREATE TABLE t (x INTEGER)")
            .execute(&a.pool)
            .await
            .unwrap();
        let mut tx = a.begin().await.unwrap();
        let before: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM t")
            .fetch_one(&mut *tx.tx)
            .await
            .unwrap();
        let beside = tokio::spawn(async move {
            sqlx::query("INSERT INTO t VALUES (2)")
                .execute(&b.pool)
                .await
        });
        tokio::time::sleep(Duration::from_millis(300)).await;
        sqlx::query("INSERT INTO t VALUES (1)")
            .execute(&mut *tx.tx)
            .await
            .expect("the transaction's write after its read");
        tx.commit().await.unwrap();
        beside
            .await
            .unwrap()
            .expect("the write beside it, once the first committed");
        let rows: Vec<i64> = sqlx::query_scalar("SELECT x FROM t ORDER BY x")
            .fetch_all(&a.pool)
            .await
            .unwrap();
        assert_eq!((before, rows), (0, vec![1, 2]));
    }
}
