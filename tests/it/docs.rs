//! The documentation against the code: every relative link in the README, ARCHITECTURE.md,
//! docs/ and benches/README.md names a file that exists, and every `polymorph ...` command in
//! their code blocks names a subcommand the binary has, with options its `--help` lists.

use crate::common::repo;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The user-facing Markdown files.
fn pages() -> Vec<PathBuf> {
    let root = repo();
    let mut out = vec![
        root.join("README.md"),
        root.join("ARCHITECTURE.md"),
        root.join("benches/README.md"),
    ];
    for dir in ["docs", "docs/experiments"] {
        let mut found: Vec<PathBuf> = std::fs::read_dir(root.join(dir))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "md"))
            .collect();
        found.sort();
        out.extend(found);
    }
    out
}

/// The targets of `[text](target)` links that are not URLs or anchors.
fn relative_links(text: &str) -> Vec<String> {
    text.split("](")
        .skip(1)
        .filter_map(|rest| rest.split(')').next())
        .map(|t| t.split('#').next().unwrap_or_default().to_string())
        .filter(|t| !t.is_empty() && !t.contains("://") && !t.starts_with("mailto:"))
        .collect()
}

/// Each `polymorph` command in the fenced code blocks of `text`, as its words.
fn commands(text: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced || line.trim_start().starts_with('#') {
            continue;
        }
        let code = line.split(" # ").next().unwrap_or_default();
        for part in code.split([';', '&', '|']) {
            let words: Vec<&str> = part.split_whitespace().collect();
            if let Some(at) = words.iter().position(|w| *w == "polymorph") {
                out.push(words[at + 1..].iter().map(|w| w.to_string()).collect());
            }
        }
    }
    out
}

/// The subcommands `polymorph [SUB...] --help` lists, and the long options it takes.
fn help(path: &[String]) -> (BTreeSet<String>, BTreeSet<String>) {
    let out = std::process::Command::new(assert_cmd::cargo::cargo_bin("polymorph"))
        .args(path)
        .arg("--help")
        .output()
        .unwrap();
    assert!(out.status.success(), "polymorph {path:?} --help failed");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut subs = BTreeSet::new();
    let mut in_commands = false;
    for line in text.lines() {
        if line.starts_with("Commands:") {
            in_commands = true;
            continue;
        }
        if in_commands {
            match line.strip_prefix("  ") {
                Some(rest) if !rest.starts_with(' ') => {
                    subs.extend(rest.split_whitespace().next().map(String::from));
                }
                _ if line.trim().is_empty() => in_commands = false,
                _ => {}
            }
        }
    }
    let flags = text
        .split(|c: char| !(c.is_alphanumeric() || c == '-'))
        .filter(|w| w.starts_with("--") && w.len() > 2)
        .map(String::from)
        .collect();
    (subs, flags)
}

/// What is wrong with one documented command, if anything.
fn check_command(
    words: &[String],
    cache: &mut BTreeMap<Vec<String>, (BTreeSet<String>, BTreeSet<String>)>,
) -> Option<String> {
    let mut path: Vec<String> = Vec::new();
    let mut flags = Vec::new();
    for w in words {
        let w = w.trim_matches(|c| matches!(c, '[' | ']' | '(' | ')' | '"' | '`' | ','));
        if w.starts_with("--") {
            flags.push(w.split('=').next().unwrap_or_default().to_string());
            continue;
        }
        let (subs, _) = cache
            .entry(path.clone())
            .or_insert_with(|| help(&path))
            .clone();
        if subs.contains(w) && flags.is_empty() {
            path.push(w.to_string());
        }
    }
    if path.is_empty() {
        return Some(format!("no subcommand in `polymorph {}`", words.join(" ")));
    }
    let (_, known) = cache.entry(path.clone()).or_insert_with(|| help(&path));
    let unknown: Vec<&String> = flags.iter().filter(|f| !known.contains(*f)).collect();
    (!unknown.is_empty()).then(|| {
        format!(
            "`polymorph {}`: {} not in `polymorph {} --help`",
            words.join(" "),
            unknown
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            path.join(" ")
        )
    })
}

#[test]
fn every_link_in_the_docs_names_a_file_that_exists() {
    let mut broken = Vec::new();
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        for link in relative_links(&text) {
            let target = page.parent().unwrap_or(Path::new(".")).join(&link);
            if !target.exists() {
                broken.push(format!("{}: {link}", page.display()));
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn every_documented_command_and_option_exists() {
    let mut cache = BTreeMap::new();
    let mut wrong = Vec::new();
    let mut seen = 0;
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        for words in commands(&text) {
            seen += 1;
            if let Some(why) = check_command(&words, &mut cache) {
                wrong.push(format!("{}: {why}", page.display()));
            }
        }
    }
    assert!(seen > 30, "only {seen} commands found in the docs");
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    // The check itself: a subcommand or an option that does not exist is caught.
    let bad = |s: &str| s.split(' ').map(String::from).collect::<Vec<_>>();
    assert!(check_command(&bad("runn tasks/x"), &mut cache).is_some());
    assert!(check_command(&bad("run tasks/x --budgett 3"), &mut cache).is_some());
    assert!(check_command(&bad("schedule add tasks/x --every 6h"), &mut cache).is_none());
}
