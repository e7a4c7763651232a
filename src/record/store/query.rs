//! `polymorph query`: one statement that passes the read-only gate, on a read-only connection,
//! rows as JSON values.

use super::readonly::check_read_only;
use super::{BUSY_TIMEOUT, Store};
use anyhow::Result;
use serde_json::Value;
use sqlx::sqlite::{SqliteConnectOptions, SqlitePoolOptions, SqliteRow};
use sqlx::{Column, Row, TypeInfo, ValueRef};

impl Store {
    /// Runs one read-only statement on a separate read-only connection; rows as JSON objects.
    pub async fn query_readonly(&self, sql: &str) -> Result<(Vec<String>, Vec<Vec<Value>>)> {
        check_read_only(sql)?;
        let opts = SqliteConnectOptions::new()
            .filename(&self.path)
            .read_only(true)
            .busy_timeout(BUSY_TIMEOUT);
        let pool = SqlitePoolOptions::new()
            .max_connections(1)
            .connect_with(opts)
            .await?;
        let rows: Vec<SqliteRow> = sqlx::query(sqlx::AssertSqlSafe(sql.to_string()))
            .fetch_all(&pool)
            .await
            .map_err(|e| {
                let msg = e.to_string();
                if msg.contains("readonly") {
                    anyhow::anyhow!("query is read-only: the statement tried to write ({msg})")
                } else {
                    anyhow::anyhow!("query failed: {msg}")
                }
            })?;
        pool.close().await;
        let columns: Vec<String> = rows
            .first()
            .map(|r| r.columns().iter().map(|c| c.name().to_string()).collect())
            .unwrap_or_default();
        let mut out = Vec::with_capacity(rows.len());
        for row in &rows {
            let mut vals = Vec::with_capacity(columns.len());
            for i in 0..row.columns().len() {
                let raw = row.try_get_raw(i)?;
                let v = if raw.is_null() {
                    Value::Null
                } else {
                    match raw.type_info().name() {
                        "INTEGER" => Value::from(row.try_get::<i64, _>(i)?),
                        "REAL" => Value::from(row.try_get::<f64, _>(i)?),
                        "BLOB" => {
                            Value::from(format!("<{} bytes>", row.try_get::<Vec<u8>, _>(i)?.len()))
                        }
                        _ => Value::from(row.try_get::<String, _>(i)?),
                    }
                };
                vals.push(v);
            }
            out.push(vals);
        }
        Ok((columns, out))
    }
}
