//! Test helpers, for every test module: each test gets its own temp dir with a copy of a task,
//! its own runs.db and ledger, and runs the real `polymorph` binary. Beside this file: the
//! engines tests start (sshd, Slurm, PostgreSQL), the scripted model server, replayed
//! candidates, runs.db's invariants, and the tools a test may need.

mod cores;
pub mod engines;
pub mod gguf;
pub mod model_server;
pub mod postgres;
pub mod raw_server;
pub mod records;
pub mod replay;
pub mod tools;

use assert_cmd::Command;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tempfile::TempDir;

pub struct Env {
    pub dir: TempDir,
    _cores: cores::Share,
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name();
        let (src, dst) = (entry.path(), to.join(&name));
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&src, &dst);
        } else if !["check", "bench"].contains(&name.to_str().unwrap())
            && !name.to_str().unwrap().ends_with(".o")
        {
            std::fs::copy(&src, &dst).unwrap();
        }
    }
}

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

impl Env {
    /// A PATH with a directory of this env's first, holding an executable `name` that runs
    /// `script` (a shell script) in place of the real tool.
    pub fn path_with_fake(&self, name: &str, script: &str) -> String {
        use std::os::unix::fs::PermissionsExt as _;
        let bin = self.path().join("fakebin");
        std::fs::create_dir_all(&bin).unwrap();
        let tool = bin.join(name);
        std::fs::write(&tool, format!("#!/bin/sh\n{script}\n")).unwrap();
        std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
        format!("{}:{}", bin.display(), std::env::var("PATH").unwrap())
    }

    pub fn new() -> Env {
        Env {
            dir: tempfile::tempdir().unwrap(),
            _cores: cores::Share::shared(),
        }
    }

    /// An env for a test whose real servers use both cores for minutes (the embedding server,
    /// the LLM server): it waits until no other test holds an env and runs alone, since side by
    /// side they starve each other's traces past any SLO and the others' judges of their gains.
    pub fn alone() -> Env {
        Env {
            dir: tempfile::tempdir().unwrap(),
            _cores: cores::Share::alone(),
        }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Copies `tasks/NAME` or `tests/fixtures/NAME` into this env and returns its path.
    pub fn task(&self, name: &str) -> PathBuf {
        let src = [
            repo().join("tasks").join(name),
            repo().join("tests/fixtures").join(name),
        ]
        .into_iter()
        .find(|p| p.is_dir())
        .unwrap_or_else(|| panic!("no task {name}"));
        let dst = self.path().join(name);
        copy_dir(&src, &dst);
        dst
    }

    /// `tasks/NAME` with the bench, harness header and Makefile the committed caches in
    /// benches/data were recorded with (before the bench verified its timed calls and the
    /// Makefile took `POLYMORPH_LAYOUT`): a cache replays only against the harness it measured.
    pub fn task_as_recorded(&self, name: &str) -> PathBuf {
        let dst = self.task(name);
        copy_dir(
            &repo().join("tests/fixtures/recorded-harness").join(name),
            &dst,
        );
        dst
    }

    pub fn db(&self) -> PathBuf {
        self.path().join("runs.db")
    }

    pub fn ledger(&self) -> PathBuf {
        self.path().join("ledger")
    }

    /// The spin task with screening off: every candidate gets at least six pairs, so its
    /// benchmarks run for a while (for tests that interrupt one).
    pub fn spin_without_screening(&self) -> PathBuf {
        let task = self.task("spin");
        set_judge(&task, "screen_pairs = 0");
        task
    }

    /// The polymorph binary with this env's db and ledger.
    pub fn cmd(&self) -> Command {
        let mut c = Command::cargo_bin("polymorph").unwrap();
        c.current_dir(self.path())
            .env_remove("POLYMORPH_DB")
            .env_remove("POLYMORPH_LEDGER")
            .env_remove("OPENAI_BASE_URL")
            .env_remove("OPENAI_API_KEY")
            .env_remove("POLYMORPH_MODEL");
        c.arg("--db")
            .arg(self.db())
            .arg("--ledger")
            .arg(self.ledger());
        c
    }

    pub fn json(&self, args: &[&str]) -> serde_json::Value {
        let out = self.cmd().args(args).arg("--json").output().unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{args:?}: {e}: {}", String::from_utf8_lossy(&out.stdout)))
    }

    /// `polymorph run TASK ARGS... --json`: the run's report.
    pub fn run(&self, task: &Path, args: &[&str]) -> serde_json::Value {
        let task = task.to_str().unwrap();
        self.json(&[&["run", task][..], args].concat())
    }

    /// The polymorph binary with this env's db and ledger, as a plain process to start in the
    /// background (stdin closed).
    pub fn process(&self) -> std::process::Command {
        let mut c = std::process::Command::new(assert_cmd::cargo::cargo_bin("polymorph"));
        c.current_dir(self.path())
            .env_remove("OPENAI_BASE_URL")
            .env_remove("OPENAI_API_KEY")
            .args([
                "--db",
                self.db().to_str().unwrap(),
                "--ledger",
                self.ledger().to_str().unwrap(),
            ])
            .stdin(std::process::Stdio::null());
        c
    }

    /// `process` started with `args` and its output closed (for tests that kill or signal it).
    pub fn spawn(&self, args: &[&str]) -> std::process::Child {
        self.process()
            .args(args)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap()
    }

    /// A spin run whose replay makes each step in `pads` an accepted entry: the wasted work starts
    /// at 80% and each step is a clear gain (e.g. [400, 150, 0]). Returns the task directory.
    pub fn accepted_entries(&self, pads: &[u32]) -> PathBuf {
        let task = self.task("spin");
        std::fs::write(task.join("params.h"), "#define PAD_PERMILLE 800\n").unwrap();
        // These entries are the fixture, not the test: no early rejection after two pairs that a
        // loaded machine (the whole suite on 2 cores) slowed, only the full judgement.
        set_judge(&task, "screen_pairs = 0\nmax_pairs = 40");
        let lines: Vec<String> = pads
            .iter()
            .map(|p| serde_json::json!({ "files": { "params.h": format!("#define PAD_PERMILLE {p}\n") } }).to_string())
            .collect();
        let replay = self.write("steps.jsonl", &(lines.join("\n") + "\n"));
        let report = self.run(
            &task,
            &["--proposer", &format!("replay:{}", replay.display())],
        );
        if report["accepted"].as_u64() != Some(pads.len() as u64) {
            let why = self.json(&[
                "query",
                "SELECT seq, verdict, reason FROM candidate_results",
            ]);
            panic!("not every step was accepted: {report}\n{why}");
        }
        task
    }

    /// `git` on the ledger, as a person would run it.
    pub fn git(&self, args: &[&str]) -> String {
        git_in(&self.ledger(), args)
    }

    pub fn write(&self, name: &str, text: &str) -> PathBuf {
        let p = self.path().join(name);
        std::fs::write(&p, text).unwrap();
        p
    }
}

/// One replay line with whole-file content.
/// One integer column of the rows a `--json` command printed (`query`, `review`, ...).
pub fn int_column(rows: &serde_json::Value, column: &str) -> Vec<i64> {
    rows.as_array()
        .unwrap()
        .iter()
        .map(|r| r[column].as_i64().unwrap())
        .collect()
}

pub fn files_line(path: &str, content: &str, note: &str) -> String {
    serde_json::json!({ "files": { path: content }, "note": note }).to_string()
}

/// Gives a test's task (whose task.toml has no `[judge]` table) these `[judge]` settings.
pub fn set_judge(task: &Path, settings: &str) {
    let toml = task.join("task.toml");
    let text = std::fs::read_to_string(&toml).unwrap();
    assert!(
        !text.contains("[judge]"),
        "{}: already has [judge]",
        toml.display()
    );
    std::fs::write(&toml, format!("{text}\n[judge]\n{settings}\n")).unwrap();
}

/// Replaces `from` with `to` in a file of a test's task. A pattern that is not there fails the
/// test, so a fixture edited later cannot quietly make a test check nothing.
pub fn edit(path: &Path, from: &str, to: &str) {
    let text = std::fs::read_to_string(path).unwrap();
    assert!(
        text.contains(from),
        "{}: no {from:?} to replace",
        path.display()
    );
    std::fs::write(path, text.replace(from, to)).unwrap();
}

/// `git` in the repository at `dir` (a bare one too): its output; a failure fails the test.
pub fn git_in(dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Polls `ready` every 20 ms until it holds (true) or `limit` passes (false).
pub fn wait_for(limit: Duration, mut ready: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if ready() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

/// What a JavaScript module given on node's command line prints as JSON, run in `dir`; node must
/// be installed, and the script must succeed.
pub fn node_json(dir: &Path, js: &str) -> serde_json::Value {
    script_json("node", dir, &["--input-type=module", "-e", js])
}

/// What a Python program given on python3's command line prints as JSON, run in `dir`; python3
/// must be installed, and the program must succeed.
pub fn python_json(dir: &Path, py: &str) -> serde_json::Value {
    script_json("python3", dir, &["-c", py])
}

fn script_json(program: &str, dir: &Path, args: &[&str]) -> serde_json::Value {
    let out = std::process::Command::new(program)
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{program} must be installed: {e}"));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}
