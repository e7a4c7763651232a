//! The import rule of `src/lib.rs`, checked on the source: every import points down the layers,
//! `measure` does no I/O, and only `record` names sqlx or git2.

use std::path::{Path, PathBuf};

/// Each layer of the library and the layers of the crate it may import (besides itself).
const LAYERS: [(&str, &[&str]); 6] = [
    ("measure", &[]),
    ("task", &["measure"]),
    ("record", &["measure"]),
    ("engine", &["measure", "task", "record"]),
    ("view", &["measure", "task", "record"]),
    ("web", &["measure", "record", "view"]),
];

/// Names that mean I/O or a clock, which the pure layer never touches.
const IMPURE: [&str; 9] = [
    "std::fs",
    "std::process",
    "std::env",
    "std::net",
    "Instant",
    "SystemTime",
    "chrono",
    "tokio",
    "sandbox::",
];

fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for entry in entries {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(sources(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    out
}

/// The code of a file without its comments, so a doc line may name what the code must not.
fn code(path: &Path) -> String {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn layer_violations(src: &Path) -> Vec<String> {
    let all: Vec<&str> = LAYERS
        .iter()
        .map(|(l, _)| *l)
        .chain(["cmd", "cli"])
        .collect();
    let mut found = Vec::new();
    for (layer, allowed) in LAYERS {
        for file in sources(&src.join(layer)) {
            let text = code(&file);
            let shown = file.strip_prefix(src).unwrap().display().to_string();
            for other in all.iter().filter(|o| **o != layer && !allowed.contains(o)) {
                if text.contains(&format!("crate::{other}")) {
                    found.push(format!("{shown} imports {other}"));
                }
            }
            if layer != "record" && (text.contains("sqlx") || text.contains("git2")) {
                found.push(format!("{shown} names sqlx or git2 outside record/"));
            }
            if layer == "measure" {
                for name in IMPURE.iter().filter(|n| text.contains(**n)) {
                    found.push(format!("{shown} (pure layer) uses {name}"));
                }
            }
        }
    }
    found
}

#[test]
fn imports_point_down_the_layers() {
    let src = crate::common::repo().join("src");
    let found = layer_violations(&src);
    assert!(found.is_empty(), "layer rule broken:\n{}", found.join("\n"));
    // The CLI belongs to the binary: nothing in the library reaches it.
    let lib = code(&src.join("lib.rs"));
    assert!(!lib.contains("mod cmd") && !lib.contains("mod cli"));
}

#[test]
fn the_check_catches_an_upward_import() {
    let dir = tempfile::tempdir().unwrap();
    let measure = dir.path().join("measure");
    std::fs::create_dir_all(&measure).unwrap();
    std::fs::write(
        measure.join("bad.rs"),
        "use crate::engine::run;\nfn f() { let _ = std::fs::read(\"x\"); }\n",
    )
    .unwrap();
    let found = layer_violations(dir.path());
    assert!(
        found.iter().any(|f| f.contains("imports engine")),
        "{found:?}"
    );
    assert!(
        found.iter().any(|f| f.contains("uses std::fs")),
        "{found:?}"
    );
}
