//! `polymorph query`: one statement that passes the read-only gate, on a read-only connection,
//! rows as JSON values. SQLite opens the file read-only; PostgreSQL runs it in a read-only
//! transaction (`default_transaction_read_only`) with a statement timeout.

use super::readonly::check_read_only;
use super::{BUSY_TIMEOUT, DbAt, Store};
use anyhow::{Context as _, Result};
use serde_json::Value;
use sqlx::postgres::{PgConnectOptions, PgRow};
use sqlx::sqlite::{SqliteConnectOptions, SqliteRow};
use sqlx::{Column, ConnectOptions as _, Connection as _, Row, TypeInfo, ValueRef};

/// Columns and rows of a query's answer.
type Table = (Vec<String>, Vec<Vec<Value>>);

/// The error a refused write comes back as, or the database's own.
fn failed(e: sqlx::Error) -> anyhow::Error {
    let msg = e.to_string();
    if msg.contains("readonly") || msg.contains("read-only transaction") {
        anyhow::anyhow!("query is read-only: the statement tried to write ({msg})")
    } else {
        anyhow::anyhow!("query failed: {msg}")
    }
}

/// The rows as a table, each non-null cell read by `cell` (row, column index).
fn table<R: Row>(rows: &[R], cell: impl Fn(&R, usize) -> Result<Value>) -> Result<Table>
where
    usize: sqlx::ColumnIndex<R>,
{
    let columns = rows
        .first()
        .map(|r| r.columns().iter().map(|c| c.name().to_string()).collect())
        .unwrap_or_default();
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        let mut vals = Vec::with_capacity(row.columns().len());
        for i in 0..row.columns().len() {
            vals.push(if row.try_get_raw(i)?.is_null() {
                Value::Null
            } else {
                cell(row, i)?
            });
        }
        out.push(vals);
    }
    Ok((columns, out))
}

impl Store {
    /// Runs one read-only statement on a separate read-only connection; rows as JSON objects.
    pub async fn query_readonly(&self, sql: &str) -> Result<Table> {
        check_read_only(sql)?;
        match &self.at {
            DbAt::Sqlite(path) => sqlite(path, sql).await,
            DbAt::Postgres(url) => postgres(url, &self.at.shown(), sql).await,
        }
    }
}

async fn sqlite(path: &std::path::Path, sql: &str) -> Result<Table> {
    let mut conn = SqliteConnectOptions::new()
        .filename(path)
        .read_only(true)
        .busy_timeout(BUSY_TIMEOUT)
        .connect()
        .await?;
    let rows: Vec<SqliteRow> = sqlx::query(sqlx::AssertSqlSafe(sql.to_string()))
        .fetch_all(&mut conn)
        .await
        .map_err(failed)?;
    conn.close().await?;
    table(&rows, |row, i| {
        Ok(match row.try_get_raw(i)?.type_info().name() {
            "INTEGER" => Value::from(row.try_get::<i64, _>(i)?),
            "REAL" => Value::from(row.try_get::<f64, _>(i)?),
            "BLOB" => Value::from(format!("<{} bytes>", row.try_get::<Vec<u8>, _>(i)?.len())),
            _ => Value::from(row.try_get::<String, _>(i)?),
        })
    })
}

async fn postgres(url: &str, shown: &str, sql: &str) -> Result<Table> {
    let opts: PgConnectOptions = url.parse()?;
    let mut conn = opts
        .options([
            ("default_transaction_read_only", "on"),
            ("statement_timeout", "60s"),
        ])
        .connect()
        .await
        .with_context(|| format!("connecting to {shown}"))?;
    // The simple protocol answers in text, so any column type (numeric, timestamps, JSON)
    // comes back readable.
    let rows: Vec<PgRow> = sqlx::raw_sql(sqlx::AssertSqlSafe(sql.to_string()))
        .fetch_all(&mut conn)
        .await
        .map_err(failed)?;
    conn.close().await?;
    table(&rows, |row, i| {
        let raw = row.try_get_raw(i)?;
        let kind = raw.type_info().name().to_string();
        let text = raw.as_str().map_err(|e| anyhow::anyhow!("query: {e}"))?;
        Ok(match kind.as_str() {
            "INT2" | "INT4" | "INT8" => text.parse::<i64>().map_or(Value::from(text), Value::from),
            "FLOAT4" | "FLOAT8" | "NUMERIC" => {
                text.parse::<f64>().map_or(Value::from(text), Value::from)
            }
            "BOOL" => Value::from(text == "t"),
            "BYTEA" => Value::from(format!("<{} bytes>", text.len().saturating_sub(2) / 2)),
            _ => Value::from(text),
        })
    })
}
