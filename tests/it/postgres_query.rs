//! `polymorph query` on PostgreSQL: every column type readable, and no write, however hidden,
//! gets past the server: one prepared statement in a `READ ONLY` transaction of its own.

use super::common::Env;
use super::postgres::{cluster, json, refused};

#[test]
fn query_on_postgres_reads_any_type_and_no_hidden_statement_writes() {
    let Some(pg) = cluster() else { return };
    let url = &pg.default_url();
    let env = Env::new();
    // Types the store never uses come back readable too.
    let typed = json(
        &env,
        url,
        &["query", "SELECT 1.5::numeric AS n, now() IS NOT NULL AS t"],
    );
    assert_eq!(typed[0]["n"], 1.5, "{typed}");
    assert_eq!(typed[0]["t"], true, "{typed}");

    assert!(refused(&env, url, "DELETE FROM runs").contains("query is read-only"));
    // These pass the word gate; the server refuses them: the read-only transaction, and
    // SELECT INTO where the statement stands (a subquery).
    let err = refused(
        &env,
        url,
        "SELECT nextval(pg_get_serial_sequence('runs', 'id'))",
    );
    assert!(
        err.contains("query is read-only: the statement tried to write"),
        "{err}"
    );
    let err = refused(&env, url, "SELECT * INTO stolen FROM runs");
    assert!(err.contains("INTO is not allowed here"), "{err}");
    // A second statement hidden from the word gate in an E'...' literal (the gate reads `\'`
    // as no end of the string): the server takes one prepared statement, never several, and a
    // SELECT stands inside a subquery, where a `;` does not even parse.
    let trick = r"SELECT E'\'' ; COMMIT; BEGIN READ WRITE; CREATE TABLE pwned (x int); COMMIT; --'";
    let err = refused(&env, url, trick);
    assert!(err.contains("syntax error at or near \";\""), "{err}");
    let err = refused(&env, url, &format!("EXPLAIN {trick}"));
    assert!(err.contains("query runs one statement"), "{err}");
    let pwned = json(
        &env,
        url,
        &[
            "query",
            "SELECT to_regclass('pwned') IS NULL AS absent -- trailing",
        ],
    );
    assert_eq!(pwned[0]["absent"], true, "{pwned}");
    let plan = json(&env, url, &["query", "EXPLAIN SELECT * FROM runs;"]);
    assert!(plan[0]["QUERY PLAN"].as_str().is_some(), "{plan}");
}
