//! A ledger shared through a git remote. When the ledger repository has a remote called
//! `origin` (made by `git clone --bare URL ledger`, or `git remote add origin URL`), every commit
//! is pushed there (under `refs/polymorph/commits/`) before the database records it, every
//! branch move is pushed after, and commits another controller made are fetched when one is
//! needed and missing here. The `git` program does the transport, so ssh keys, agents and
//! credential helpers work as they do for any git command.

use anyhow::{Context as _, Result, bail};
use git2::Oid;
use std::path::PathBuf;
use std::process::Command;

/// Where commits are kept on the remote (one ref each, so a fetch brings them all).
const COMMITS: &str = "refs/polymorph/commits";

pub struct Origin {
    git_dir: PathBuf,
}

impl Origin {
    /// The ledger's `origin`, if it has one.
    pub fn of(repo: &git2::Repository) -> Option<Origin> {
        repo.find_remote("origin").ok()?;
        Some(Origin {
            git_dir: repo.path().to_path_buf(),
        })
    }

    fn git(&self, args: &[&str]) -> Result<String> {
        let out = Command::new("git")
            .arg("--git-dir")
            .arg(&self.git_dir)
            .args(args)
            .env("GIT_TERMINAL_PROMPT", "0")
            .output()
            .context("running git for the ledger's origin (is git installed?)")?;
        if !out.status.success() {
            bail!(
                "git {}: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// Pushes a commit (and what it needs) to the remote, before anything records it.
    pub fn push_commit(&self, oid: Oid) -> Result<()> {
        let name = format!("{COMMITS}/{oid}");
        let pushed = self.git(&["push", "--quiet", "origin", &format!("{oid}:{name}")]);
        // Two controllers can make the very same commit (same tree, parent, message and second)
        // and push it at once: the one that finds it there already has nothing left to do.
        if pushed.is_err()
            && self
                .git(&["ls-remote", "origin", &name])?
                .starts_with(&oid.to_string())
        {
            return Ok(());
        }
        pushed
            .map(drop)
            .context("pushing a ledger commit to origin")
    }

    /// Pushes a branch's new head. Refused when the remote's branch is ahead of it (another
    /// controller moved it further): that controller's push stands.
    pub fn push_branch(&self, branch: &str) -> Result<()> {
        let spec = format!("refs/heads/{branch}:refs/heads/{branch}");
        self.git(&["push", "--quiet", "origin", &spec]).map(drop)
    }

    /// Fetches every commit and branch the remote has.
    pub fn fetch(&self) -> Result<()> {
        self.git(&[
            "fetch",
            "--quiet",
            "origin",
            &format!("+{COMMITS}/*:{COMMITS}/*"),
            "+refs/heads/*:refs/remotes/origin/*",
        ])
        .map(drop)
        .context("fetching the ledger's origin")
    }
}
