//! `polymorph query`: read-only SQL over runs.db, as a table or JSON.

use super::output::{cell, print_json};
use crate::cli::{Cli, QueryArgs};
use anyhow::Result;
use polymorph::record::Store;
use serde_json::Value;

pub async fn query(cli: &Cli, a: QueryArgs) -> Result<()> {
    let store = Store::open_existing(&cli.db()).await?;
    let (columns, rows) = store.query_readonly(&a.sql).await?;
    let json = a.json;
    if json {
        let objs: Vec<Value> = rows
            .iter()
            .map(|r| Value::Object(columns.iter().cloned().zip(r.iter().cloned()).collect()))
            .collect();
        return print_json(&objs);
    }
    println!("{}", columns.join("\t"));
    for r in rows {
        let cells: Vec<String> = r.iter().map(|v| cell(v, "NULL")).collect();
        println!("{}", cells.join("\t"));
    }
    Ok(())
}
