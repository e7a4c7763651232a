//! The tools some tests need beyond Rust (bwrap, a writable cgroup, an sshd, a Slurm cluster, PostgreSQL, Chromium,
//! nvcc, a GPU, vLLM, the serving tasks' packages and weights), and what a test does without one. The
//! README's test command (`./test.sh`) installs them and names the ones it expects in
//! `POLYMORPH_EXPECT_TOOLS`: a test whose expected tool is missing fails; one whose tool is not
//! expected is skipped, said on stderr and appended to the file `POLYMORPH_SKIPPED` names, which
//! `./test.sh` lists at the end.

use std::io::Write as _;
use std::path::PathBuf;

/// The variable naming the expected tools, comma-separated.
const EXPECT_VAR: &str = "POLYMORPH_EXPECT_TOOLS";
/// The variable naming the file the skips are listed in.
const SKIPPED_VAR: &str = "POLYMORPH_SKIPPED";

/// A tool a test may need.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tool {
    Bwrap,
    /// A cgroup polymorph can make for each command (cgroup v1's pids and memory, or v2's).
    Cgroup,
    Ssh,
    Slurm,
    Postgres,
    Chromium,
    Nvcc,
    Gpu,
    /// An NVIDIA GPU with vLLM on the PATH.
    Vllm,
    ServingPython,
    LlmServe,
}

impl Tool {
    /// The name `POLYMORPH_EXPECT_TOOLS` uses.
    pub fn name(self) -> &'static str {
        match self {
            Tool::Bwrap => "bwrap",
            Tool::Cgroup => "cgroup",
            Tool::Ssh => "ssh",
            Tool::Slurm => "slurm",
            Tool::Postgres => "postgres",
            Tool::Chromium => "chromium",
            Tool::Nvcc => "nvcc",
            Tool::Gpu => "gpu",
            Tool::Vllm => "vllm",
            Tool::ServingPython => "serving-python",
            Tool::LlmServe => "llm-serve",
        }
    }
}

/// Whether `tool` is in the comma-separated `list`.
fn listed(list: &str, tool: Tool) -> bool {
    list.split(',').any(|t| t.trim() == tool.name())
}

/// What a test does when `tool` is missing (`why`): fails if the tool is expected, else says
/// that what it guards was not tested here and lists the skip. Call it and return.
pub fn missing(tool: Tool, why: &str) {
    let expected = std::env::var(EXPECT_VAR).unwrap_or_default();
    assert!(
        !listed(&expected, tool),
        "{} is expected here ({EXPECT_VAR}={expected}) but missing: {why}",
        tool.name()
    );
    let line = format!("skipped ({}): {why}", tool.name());
    // The real stderr, which the test harness does not capture, so the log shows it.
    let _ = writeln!(std::io::stderr(), "{line}");
    if let Ok(file) = std::env::var(SKIPPED_VAR) {
        let appended = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(file)
            .and_then(|mut f| writeln!(f, "{line}"));
        assert!(appended.is_ok(), "listing a skip: {appended:?}");
    }
}

/// bwrap, when it is installed and works here (its path), the one test of it for every test.
pub fn bwrap() -> Option<PathBuf> {
    match sandbox::Isolation::detect(&std::env::var("PATH").unwrap_or_default()) {
        sandbox::Isolation::Bwrap { path, .. } => Some(path),
        sandbox::Isolation::Plain(_) => None,
    }
}

#[test]
fn an_expected_tool_that_is_missing_fails_and_another_is_only_listed() {
    assert!(listed("bwrap, postgres", Tool::Postgres));
    assert!(!listed("bwrap,postgres", Tool::Slurm));
    assert!(!listed("", Tool::Bwrap));
    assert!(!listed("serving", Tool::ServingPython));
}
