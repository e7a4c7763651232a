//! No import cycle between any two source files of any crate in the workspace: each file's
//! `crate::`, `super::` and `self::` paths are resolved to the module file they name, and the
//! graph of those edges must have no strongly connected component larger than one file.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A crate's source folder and the file that is its root.
const CRATES: [(&str, &str); 4] = [
    ("src", "lib.rs"),
    ("src", "main.rs"),
    ("proposers/src", "lib.rs"),
    ("sandbox/src", "lib.rs"),
];

/// Files of the binary crate (main.rs's modules), which the library's walk leaves out.
const BINARY_ONLY: [&str; 3] = ["main.rs", "cli.rs", "cmd"];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module path of a file relative to its crate's folder: `run/mod.rs` and `run.rs` are
/// both `run`; the root file is the empty path.
fn module_of(rel: &Path, root: &str) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap_or_default();
    match last.as_str() {
        "mod.rs" => {}
        l if l == root => {}
        l => parts.push(l.trim_end_matches(".rs").to_string()),
    }
    parts
}

/// The code that belongs to the file's own module: comments dropped, and the inline test
/// module at the end cut off (its `super::` means the file itself).
fn own_code(text: &str) -> String {
    let mut out = String::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let t = line.trim_start();
        if t.starts_with("#[cfg(test)]")
            && lines
                .peek()
                .is_some_and(|n| n.trim_start().starts_with("mod ") && n.contains('{'))
        {
            break;
        }
        if t.starts_with("//") {
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Expands a use tree starting at `s` (after a `::`) into full paths; returns how far it read.
fn expand(s: &[char], prefix: &[String], out: &mut Vec<Vec<String>>) -> usize {
    let mut i = 0;
    let mut path = prefix.to_vec();
    loop {
        while s.get(i).is_some_and(|c| c.is_whitespace()) {
            i += 1;
        }
        match s.get(i) {
            Some('{') => {
                i += 1;
                loop {
                    i += expand(&s[i..], &path, out);
                    while s.get(i).is_some_and(|c| c.is_whitespace() || *c == ',') {
                        i += 1;
                    }
                    if s.get(i) == Some(&'}') || s.get(i).is_none() {
                        return i + 1;
                    }
                }
            }
            Some(c) if is_ident(*c) => {
                let start = i;
                while s.get(i).is_some_and(|c| is_ident(*c)) {
                    i += 1;
                }
                path.push(s[start..i].iter().collect());
                if s.get(i) == Some(&':') && s.get(i + 1) == Some(&':') {
                    i += 2;
                    continue;
                }
                out.push(path);
                return i;
            }
            _ => {
                out.push(path);
                return i;
            }
        }
    }
}

/// Every `crate::`, `super::` and `self::` path named in `code`.
fn paths(code: &str) -> Vec<Vec<String>> {
    let chars: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let before_ok = i == 0 || !(is_ident(chars[i - 1]) || chars[i - 1] == ':');
        let rest: String = chars[i..(i + 7).min(chars.len())].iter().collect();
        let head = ["crate::", "super::", "self::"]
            .into_iter()
            .find(|h| rest.starts_with(h));
        match head {
            Some(h) if before_ok => {
                let name = h.trim_end_matches("::").to_string();
                i += h.len();
                i += expand(&chars[i..], &[name], &mut out);
            }
            _ => i += 1,
        }
    }
    out
}

/// A file's `use` statements, each as (re-exported, the tree after `use`), and its code
/// without them.
fn uses(code: &str) -> (Vec<(bool, String)>, String) {
    let mut found = Vec::new();
    let mut rest = String::new();
    let mut open: Option<(bool, String)> = None;
    for line in code.lines() {
        let t = line.trim_start();
        if open.is_none() {
            let public = t.starts_with("pub use ") || t.starts_with("pub(crate) use ");
            if let Some(at) = t.find("use ").filter(|_| public || t.starts_with("use ")) {
                open = Some((public, String::new()));
                let body = &t[at + 4..];
                open.as_mut().unwrap().1.push_str(body);
            } else {
                rest.push_str(line);
                rest.push('\n');
                continue;
            }
        } else if let Some((_, body)) = open.as_mut() {
            body.push(' ');
            body.push_str(t);
        }
        if open.as_ref().is_some_and(|(_, b)| b.contains(';')) {
            let (public, body) = open.take().unwrap();
            found.push((
                public,
                body.split(';').next().unwrap_or_default().to_string(),
            ));
        }
    }
    (found, rest)
}

/// The module a path names, from the module `from`: the deepest known module along it, or, where
/// the path goes on to an item that module re-exports from another, that other module.
fn resolve(
    from: &[String],
    path: &[String],
    modules: &BTreeSet<Vec<String>>,
    reexports: &BTreeMap<Vec<String>, BTreeMap<String, Vec<String>>>,
) -> Option<Vec<String>> {
    let mut at: Vec<String> = match path.first()?.as_str() {
        "crate" => Vec::new(),
        "self" => from.to_vec(),
        "super" => from[..from.len().checked_sub(1)?].to_vec(),
        child => {
            // A bare `use child::...` names a module declared in this file, or another crate.
            let mut local = from.to_vec();
            local.push(child.to_string());
            if !modules.contains(&local) {
                return None;
            }
            return resolve(
                from,
                &[&["self".to_string()], path].concat(),
                modules,
                reexports,
            );
        }
    };
    for seg in &path[1..] {
        if seg == "super" {
            at.pop()?;
            continue;
        }
        let mut next = at.clone();
        next.push(seg.clone());
        if modules.contains(&next) {
            at = next;
        } else {
            return Some(
                reexports
                    .get(&at)
                    .and_then(|r| r.get(seg))
                    .cloned()
                    .unwrap_or(at),
            );
        }
    }
    Some(at)
}

/// A module, the paths its `use` statements name (each marked when it is a re-export), and its
/// code without them.
type Parsed = (Vec<String>, Vec<(bool, Vec<String>)>, String);

/// The import edges between the files of one crate, by module path. A re-export (`pub use` in
/// a module, most often its `mod.rs`) is no edge of its own: an import of a re-exported item is
/// an edge to the module that defines it.
fn edges(dir: &Path, root: &str) -> BTreeMap<Vec<String>, BTreeSet<Vec<String>>> {
    let mut files = Vec::new();
    rust_files(dir, &mut files);
    let bin = root == "main.rs";
    let files: Vec<(Vec<String>, PathBuf)> = files
        .into_iter()
        .filter_map(|f| {
            let rel = f.strip_prefix(dir).unwrap().to_path_buf();
            let first = rel.iter().next()?.to_string_lossy().into_owned();
            let binary_only = BINARY_ONLY.contains(&first.as_str());
            let other_root = (first == "lib.rs" && bin) || (first == "main.rs" && !bin);
            (binary_only == bin && !other_root).then(|| (module_of(&rel, root), f))
        })
        .collect();
    let modules: BTreeSet<Vec<String>> = files.iter().map(|(m, _)| m.clone()).collect();
    let parsed: Vec<Parsed> = files
        .iter()
        .map(|(module, file)| {
            let code = own_code(&std::fs::read_to_string(file).unwrap());
            let (stmts, rest) = uses(&code);
            let mut named = Vec::new();
            for (public, body) in stmts {
                let chars: Vec<char> = body.trim().chars().collect();
                let mut out = Vec::new();
                expand(&chars, &[], &mut out);
                named.extend(out.into_iter().map(|p| (public, p)));
            }
            (module.clone(), named, rest)
        })
        .collect();
    let none = BTreeMap::new();
    let mut reexports: BTreeMap<Vec<String>, BTreeMap<String, Vec<String>>> = BTreeMap::new();
    for (module, named, _) in &parsed {
        for (_, path) in named.iter().filter(|(public, _)| *public) {
            if let (Some(item), Some(target)) =
                (path.last(), resolve(module, path, &modules, &none))
            {
                reexports
                    .entry(module.clone())
                    .or_default()
                    .insert(item.clone(), target);
            }
        }
    }
    let mut graph = BTreeMap::new();
    for (module, named, rest) in &parsed {
        let imported = named
            .iter()
            .filter(|(public, _)| !public)
            .map(|(_, p)| p.clone());
        let targets: BTreeSet<Vec<String>> = imported
            .chain(paths(rest))
            .filter_map(|p| resolve(module, &p, &modules, &reexports))
            .filter(|t| t != module)
            .collect();
        graph.insert(module.clone(), targets);
    }
    graph
}

/// The strongly connected components with more than one module (Tarjan's algorithm).
fn cycles(graph: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>) -> Vec<Vec<String>> {
    struct State<'g> {
        graph: &'g BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
        index: BTreeMap<&'g Vec<String>, usize>,
        low: BTreeMap<&'g Vec<String>, usize>,
        stack: Vec<&'g Vec<String>>,
        on_stack: BTreeSet<&'g Vec<String>>,
        found: Vec<Vec<String>>,
    }
    fn visit<'g>(s: &mut State<'g>, v: &'g Vec<String>) {
        let n = s.index.len();
        s.index.insert(v, n);
        s.low.insert(v, n);
        s.stack.push(v);
        s.on_stack.insert(v);
        for w in s.graph.get(v).into_iter().flatten() {
            let Some((w, _)) = s.graph.get_key_value(w) else {
                continue;
            };
            if !s.index.contains_key(w) {
                visit(s, w);
                let low = s.low[v].min(s.low[w]);
                s.low.insert(v, low);
            } else if s.on_stack.contains(w) {
                let low = s.low[v].min(s.index[w]);
                s.low.insert(v, low);
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                component.push(if w.is_empty() {
                    "(root)".to_string()
                } else {
                    w.join("::")
                });
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                s.found.push(component);
            }
        }
    }
    let mut s = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for v in graph.keys() {
        if !s.index.contains_key(v) {
            visit(&mut s, v);
        }
    }
    s.found
}

#[test]
fn no_import_cycle_between_any_two_files() {
    let repo = crate::common::repo();
    let mut found = Vec::new();
    for (dir, root) in CRATES {
        let graph = edges(&repo.join(dir), root);
        assert!(graph.len() > 3, "{dir} ({root}): too few files found");
        for c in cycles(&graph) {
            found.push(format!("{dir} ({root}): {}", c.join(" <-> ")));
        }
    }
    assert!(found.is_empty(), "import cycles:\n{}", found.join("\n"));
}

#[test]
fn the_check_follows_use_groups_re_exports_and_child_modules() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    let write = |path: &str, text: &str| std::fs::write(src.join(path), text).unwrap();
    let module = |m: &str| m.split("::").map(String::from).collect::<Vec<_>>();
    std::fs::create_dir_all(src.join("room")).unwrap();
    write("lib.rs", "pub mod room;\npub mod leaf;\n");
    write("leaf.rs", "pub struct L;\n");
    // `room` re-exports b's B; a takes it through the re-export, and the leaf in a group.
    write("room/mod.rs", "mod a;\nmod b;\npub use b::B;\n");
    write(
        "room/a.rs",
        "use super::{B, super::leaf::L};\npub struct A;\n",
    );
    write(
        "room/b.rs",
        "pub struct B;\nfn f() -> crate::room::a::A { todo!() }\n\
         #[cfg(test)]\nmod tests {\n    use super::*;\n}\n",
    );
    let graph = edges(src, "lib.rs");
    assert_eq!(
        graph[&module("room::a")],
        [module("leaf"), module("room::b")].into()
    );
    assert!(graph[&module("room")].is_empty(), "a re-export is no edge");
    assert_eq!(cycles(&graph), vec![vec!["room::a", "room::b"]]);
    // Without b's import of a, nothing is found.
    write("room/b.rs", "pub struct B;\n");
    assert!(cycles(&edges(src, "lib.rs")).is_empty());
    // A module file that imports its child by a bare path, while the child imports what the
    // module file itself defines.
    write(
        "room/mod.rs",
        "mod a;\nmod b;\nuse a::A;\npub fn helper(_: A) {}\n",
    );
    write("room/a.rs", "pub struct A;\nfn g() { super::helper(A) }\n");
    assert_eq!(cycles(&edges(src, "lib.rs")), vec![vec!["room", "room::a"]]);
}
