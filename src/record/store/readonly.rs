//! The gate in front of `polymorph query`: one statement that cannot write anywhere. The
//! connection is read-only too, but that does not cover everything: `VACUUM INTO` and `ATTACH`
//! write other files, a `WITH` may end in an `INSERT`, and a pragma may change settings. So the
//! statement's words (outside strings, quoted names and comments) are checked first.

use anyhow::{Result, bail};

/// Statements `query` runs.
const STARTS: [&str; 5] = ["SELECT", "WITH", "VALUES", "EXPLAIN", "PRAGMA"];

/// Words that write, or open another file, wherever they stand.
const WRITES: [&str; 17] = [
    "INSERT",
    "UPDATE",
    "DELETE",
    "ATTACH",
    "DETACH",
    "VACUUM",
    "CREATE",
    "DROP",
    "ALTER",
    "REINDEX",
    "ANALYZE",
    "BEGIN",
    "COMMIT",
    "ROLLBACK",
    "SAVEPOINT",
    "RELEASE",
    "LOAD_EXTENSION",
];

/// Pragmas that only read.
const READ_PRAGMAS: [&str; 14] = [
    "INTEGRITY_CHECK",
    "QUICK_CHECK",
    "FOREIGN_KEY_CHECK",
    "FOREIGN_KEY_LIST",
    "TABLE_INFO",
    "TABLE_XINFO",
    "TABLE_LIST",
    "INDEX_LIST",
    "INDEX_INFO",
    "INDEX_XINFO",
    "PAGE_COUNT",
    "FREELIST_COUNT",
    "USER_VERSION",
    "COMPILE_OPTIONS",
];

/// What the checker sees of a statement: its words and punctuation, outside literals.
#[derive(Debug, PartialEq)]
enum Token {
    Word(String),
    Punct(char),
}

/// Splits `sql` into words and punctuation, skipping string literals, quoted identifiers and
/// comments. An unterminated literal or comment is an error.
fn tokens(sql: &str) -> Result<Vec<Token>> {
    let chars: Vec<char> = sql.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c.is_whitespace() {
            i += 1;
        } else if c == '-' && next == Some('-') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let end = (i + 2..chars.len().saturating_sub(1))
                .find(|&j| chars[j] == '*' && chars[j + 1] == '/');
            let Some(end) = end else {
                bail!("query: unterminated comment");
            };
            i = end + 2;
        } else if let Some(close) = match c {
            '\'' => Some('\''),
            '"' => Some('"'),
            '`' => Some('`'),
            '[' => Some(']'),
            _ => None,
        } {
            // A doubled quote inside a literal is an escaped quote.
            let mut j = i + 1;
            loop {
                match chars.get(j) {
                    None => bail!("query: unterminated {c}...{close}"),
                    Some(&x) if x == close && chars.get(j + 1) == Some(&close) && close != ']' => {
                        j += 2
                    }
                    Some(&x) if x == close => break,
                    Some(_) => j += 1,
                }
            }
            i = j + 1;
        } else if c.is_alphanumeric() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            out.push(Token::Word(
                chars[start..i]
                    .iter()
                    .collect::<String>()
                    .to_ascii_uppercase(),
            ));
        } else {
            out.push(Token::Punct(c));
            i += 1;
        }
    }
    Ok(out)
}

/// Refuses anything but one statement that only reads, saying why.
pub fn check_read_only(sql: &str) -> Result<()> {
    let toks = tokens(sql)?;
    let refuse = |why: String| -> Result<()> {
        bail!(
            "query is read-only: {why}; it runs one SELECT, WITH, VALUES, EXPLAIN or read-only PRAGMA"
        )
    };
    if let Some(k) = toks.iter().position(|t| *t == Token::Punct(';'))
        && toks[k + 1..].iter().any(|t| *t != Token::Punct(';'))
    {
        return refuse("several statements".into());
    }
    let word = |t: Option<&Token>| match t {
        Some(Token::Word(w)) => Some(w.clone()),
        _ => None,
    };
    let Some(first) = word(toks.first()) else {
        return refuse("no statement".into());
    };
    if !STARTS.contains(&first.as_str()) {
        return refuse(format!("{first} is not a read"));
    }
    for (k, t) in toks.iter().enumerate() {
        let Token::Word(w) = t else { continue };
        let into_follows = word(toks.get(k + 1)).as_deref() == Some("INTO");
        if WRITES.contains(&w.as_str()) || (w == "REPLACE" && into_follows) {
            return refuse(format!("{w} can write"));
        }
    }
    if first == "PRAGMA" {
        let name = word(toks.get(1)).unwrap_or_default();
        if !READ_PRAGMAS.contains(&name.as_str()) || toks.contains(&Token::Punct('=')) {
            return refuse(format!("PRAGMA {name} is not one of the read-only pragmas"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_pass() {
        for sql in [
            "SELECT * FROM runs",
            "select replace(reason, 'DELETE', 'x') AS \"update\" FROM evaluations; ",
            "WITH w AS (SELECT 1) SELECT * FROM w -- DROP TABLE runs",
            "PRAGMA integrity_check",
            "PRAGMA table_info('runs')",
            "SELECT 'it''s; INSERT' /* ATTACH */",
        ] {
            assert!(check_read_only(sql).is_ok(), "{sql}");
        }
    }

    #[test]
    fn anything_that_can_write_is_refused() {
        for (sql, why) in [
            ("VACUUM INTO '/tmp/x.db'", "VACUUM is not a read"),
            ("ATTACH '/tmp/x.db' AS x", "ATTACH is not a read"),
            ("SELECT 1; DELETE FROM runs", "several statements"),
            (
                "WITH w AS (SELECT 1) INSERT INTO runs SELECT * FROM w",
                "INSERT can write",
            ),
            (
                "WITH w AS (SELECT 1) REPLACE INTO runs SELECT * FROM w",
                "REPLACE can write",
            ),
            ("EXPLAIN DELETE FROM runs", "DELETE can write"),
            ("SELECT load_extension('x')", "LOAD_EXTENSION can write"),
            ("PRAGMA journal_mode = DELETE", "DELETE can write"),
            (
                "PRAGMA user_version = 7",
                "not one of the read-only pragmas",
            ),
            ("PRAGMA wal_checkpoint", "not one of the read-only pragmas"),
            ("SELECT 'unterminated", "unterminated"),
        ] {
            let err = check_read_only(sql)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(err.contains(why), "{sql}: {err}");
        }
    }
}
