//! `polymorph query`: one statement that passes the read-only gate, on a read-only connection,
//! rows as JSON values. SQLite opens the file read-only; PostgreSQL runs it as one prepared
//! statement in a `READ ONLY` transaction of its own, with a statement timeout.

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
    if msg.contains("cannot insert multiple commands") {
        anyhow::anyhow!("query runs one statement: the server found several ({msg})")
    } else if msg.contains("readonly") || msg.contains("read-only transaction") {
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

/// What the user's statement becomes on PostgreSQL: each row rendered as JSON by the server
/// (`row_to_json` keeps the columns' order and renders every type: numeric, timestamps, JSON),
/// so no type needs decoding here. EXPLAIN cannot stand in a subquery and runs as it is.
fn pg_statement(sql: &str) -> (String, bool) {
    let body = sql
        .trim()
        .trim_end_matches(|c: char| c == ';' || c.is_whitespace());
    let explain = body
        .split_whitespace()
        .next()
        .is_some_and(|w| w.eq_ignore_ascii_case("EXPLAIN"));
    if explain {
        return (body.to_string(), false);
    }
    // The newline ends a trailing `--` comment before the subquery closes.
    (
        format!("SELECT row_to_json(polymorph_q)::text FROM (\n{body}\n) AS polymorph_q"),
        true,
    )
}

/// One row's `row_to_json` text as columns and values, in the statement's column order.
struct JsonRow(Vec<(String, Value)>);

impl<'de> serde::Deserialize<'de> for JsonRow {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Fields;
        impl<'de> serde::de::Visitor<'de> for Fields {
            type Value = JsonRow;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a row as a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut m: A,
            ) -> Result<JsonRow, A::Error> {
                let mut out = Vec::new();
                while let Some(kv) = m.next_entry::<String, Value>()? {
                    out.push(kv);
                }
                Ok(JsonRow(out))
            }
        }
        d.deserialize_map(Fields)
    }
}

/// Opens its own `READ ONLY` transaction and sends the statement through the extended protocol,
/// whose one prepared statement cannot carry a second: a `COMMIT; BEGIN READ WRITE; ...` hidden
/// from the word gate (inside an `E'...'` literal, say) is refused by the server, and nothing
/// the statement does can end the transaction it runs in. The transaction is rolled back.
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
    sqlx::raw_sql("BEGIN TRANSACTION READ ONLY")
        .execute(&mut conn)
        .await?;
    let (statement, as_json) = pg_statement(sql);
    let rows: Vec<PgRow> = sqlx::query(sqlx::AssertSqlSafe(statement))
        .persistent(false)
        .fetch_all(&mut conn)
        .await
        .map_err(failed)?;
    sqlx::raw_sql("ROLLBACK").execute(&mut conn).await?;
    conn.close().await?;
    if !as_json {
        // EXPLAIN's one column is text (or JSON, sent as its text).
        return table(&rows, |row, i| {
            let raw = row.try_get_raw(i)?;
            let text =
                std::str::from_utf8(raw.as_bytes().map_err(|e| anyhow::anyhow!("query: {e}"))?)?;
            Ok(Value::from(text))
        });
    }
    let mut columns = Vec::new();
    let mut out = Vec::with_capacity(rows.len());
    for row in &rows {
        let text: String = row.try_get(0)?;
        let JsonRow(cells) = serde_json::from_str(&text)
            .with_context(|| format!("query: the server's row is not JSON: {text}"))?;
        if columns.is_empty() {
            columns = cells.iter().map(|(k, _)| k.clone()).collect();
        }
        out.push(cells.into_iter().map(|(_, v)| v).collect());
    }
    Ok((columns, out))
}
