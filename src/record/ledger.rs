//! The ledger: a bare git repository (plain `git log --all` reads it) with one branch
//! `<task>/<context-id>` per context. The first commit on a branch is the task as given; every
//! later commit is one accepted candidate. Commits are written before runs.db records them and
//! the branch moves only after, so a crash can leave an unreferenced object but never a branch
//! pointing at something unverified. Shared by several controllers as one directory, or through
//! a git remote (`origin.rs`).

use super::origin::Origin;
use anyhow::{Context as _, Result, bail};
use git2::{FileMode, Oid, Repository, Signature};
use sandbox::{FileTree, RelPath};
use std::path::Path;

/// Author and committer of every ledger commit.
const AUTHOR: (&str, &str) = ("polymorph", "polymorph@localhost");

pub struct Ledger {
    repo: Repository,
    /// The git remote the ledger is shared through, when it has one.
    origin: Option<Origin>,
}

/// A ledger commit's id; runs.db stores it as hex.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CommitId(Oid);

impl CommitId {
    /// Parses a full hex commit id as runs.db stores it.
    pub fn parse(hex: &str) -> Result<CommitId> {
        Ok(CommitId(
            Oid::from_str(hex).with_context(|| format!("{hex:?} is not a commit id"))?,
        ))
    }
}

impl std::fmt::Display for CommitId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl Ledger {
    /// Opens the ledger at `path`, creating a bare repository there if nothing exists yet.
    pub fn open_or_init(path: &Path) -> Result<Ledger> {
        let is_empty_dir = |p: &Path| {
            p.is_dir()
                && std::fs::read_dir(p)
                    .map(|mut d| d.next().is_none())
                    .unwrap_or(false)
        };
        if !path.exists() {
            Self::init_whole(path)?;
        } else if is_empty_dir(path) {
            Repository::init_bare(path)
                .with_context(|| format!("creating ledger {}", path.display()))?;
        }
        let repo = Repository::open_bare(path).with_context(|| {
            format!("{} exists but is not a polymorph ledger (a bare git repository); pass --ledger elsewhere", path.display())
        })?;
        Ok(Ledger::with(repo))
    }

    /// Creates the repository beside `path` and renames it into place, so a controller sharing
    /// the ledger never opens one half made; if another made it first, theirs is used.
    fn init_whole(path: &Path) -> Result<()> {
        let parent = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating {}", parent.display()))?;
        let staging = tempfile::Builder::new()
            .prefix(".polymorph-ledger-")
            .tempdir_in(parent)
            .with_context(|| format!("creating ledger {}", path.display()))?;
        Repository::init_bare(staging.path())
            .with_context(|| format!("creating ledger {}", path.display()))?;
        match std::fs::rename(staging.path(), path) {
            Ok(()) => Ok(()),
            Err(_) if path.exists() => Ok(()),
            Err(e) => Err(e).with_context(|| format!("creating ledger {}", path.display())),
        }
    }

    /// Opens the ledger at `path` when there is one; creates nothing (for read-only views).
    pub fn open_existing(path: &Path) -> Result<Option<Ledger>> {
        if !path.exists() {
            return Ok(None);
        }
        let repo = Repository::open_bare(path).with_context(|| {
            format!(
                "{} is not a polymorph ledger (a bare git repository)",
                path.display()
            )
        })?;
        Ok(Some(Ledger::with(repo)))
    }

    fn with(repo: Repository) -> Ledger {
        Ledger {
            origin: Origin::of(&repo),
            repo,
        }
    }

    /// A commit, fetched from the ledger's origin when another controller made it.
    fn commit(&self, oid: CommitId) -> Result<git2::Commit<'_>> {
        if self.repo.find_commit(oid.0).is_err()
            && let Some(origin) = &self.origin
        {
            origin.fetch()?;
        }
        self.repo
            .find_commit(oid.0)
            .with_context(|| format!("ledger commit {oid} is missing"))
    }

    /// Fails when the ledger cannot be written: a run checks this before its first candidate
    /// rather than after its first accepted one.
    pub fn check_writable(&self) -> Result<()> {
        let dir = self.repo.path();
        tempfile::Builder::new()
            .prefix(".polymorph-write-check")
            .tempfile_in(dir)
            .with_context(|| format!("ledger {} is not writable", dir.display()))?;
        Ok(())
    }

    fn signature() -> Result<Signature<'static>> {
        Ok(Signature::now(AUTHOR.0, AUTHOR.1)?)
    }

    fn write_tree(&self, tree: &FileTree) -> Result<Oid> {
        // Build nested trees bottom-up from the flat path list.
        fn build(repo: &Repository, tree: &FileTree, prefix: &str) -> Result<Oid> {
            let mut builder = repo.treebuilder(None)?;
            let mut subdirs = std::collections::BTreeSet::new();
            for (path, bytes) in tree.iter() {
                let Some(rest) = path.as_str().strip_prefix(prefix) else {
                    continue;
                };
                match rest.split_once('/') {
                    Some((dir, _)) => {
                        subdirs.insert(dir.to_string());
                    }
                    None => {
                        let blob = repo.blob(bytes)?;
                        let mode = if tree.is_executable(path) {
                            FileMode::BlobExecutable
                        } else {
                            FileMode::Blob
                        };
                        builder.insert(rest, blob, mode.into())?;
                    }
                }
            }
            for dir in subdirs {
                let oid = build(repo, tree, &format!("{prefix}{dir}/"))?;
                builder.insert(&dir, oid, FileMode::Tree.into())?;
            }
            Ok(builder.write()?)
        }
        build(&self.repo, tree, "")
    }

    /// Writes a commit object (no branch moves). `parent` is `None` for a branch's first commit.
    pub fn write_commit(
        &self,
        parent: Option<CommitId>,
        tree: &FileTree,
        message: &str,
    ) -> Result<CommitId> {
        let tree_oid = self.write_tree(tree)?;
        let git_tree = self.repo.find_tree(tree_oid)?;
        let sig = Self::signature()?;
        let parent_commit = parent.map(|p| self.commit(p)).transpose()?;
        let parents: Vec<&git2::Commit<'_>> = parent_commit.iter().collect();
        let oid = self
            .repo
            .commit(None, &sig, &sig, message, &git_tree, &parents)?;
        // Shared through a remote: the commit is there before anything records it.
        if let Some(origin) = &self.origin {
            origin.push_commit(oid)?;
        }
        Ok(CommitId(oid))
    }

    /// Points `branch` at `oid` (which must be a commit already written).
    pub fn set_branch(&self, branch: &str, oid: CommitId) -> Result<()> {
        self.commit(oid)?;
        self.move_branch(branch, oid)?;
        // The database already says where the branch is; a push that fails (or finds the remote
        // further on) leaves the remote branch to whoever moves it next.
        if let Some(origin) = &self.origin
            && let Err(e) = origin.push_branch(branch)
        {
            tracing::warn!(branch, "ledger branch not pushed to origin: {e:#}");
        }
        Ok(())
    }

    fn move_branch(&self, branch: &str, oid: CommitId) -> Result<()> {
        let name = format!("refs/heads/{branch}");
        let moving = || format!("moving ledger branch {branch}");
        // Controllers sharing the ledger move a branch concurrently: each move is a
        // compare-and-swap from the head it saw, and never takes the branch back to an ancestor
        // of where another controller already moved it.
        for _ in 0..100 {
            let moved = match self.branch_head(branch)? {
                Some(head) if head == oid => return Ok(()),
                Some(head) if self.repo.graph_descendant_of(head.0, oid.0)? => return Ok(()),
                Some(head) => {
                    self.repo
                        .reference_matching(&name, oid.0, true, head.0, "polymorph: move")
                }
                None => self.repo.reference(&name, oid.0, false, "polymorph: start"),
            };
            match moved {
                Ok(_) => return Ok(()),
                Err(e)
                    if matches!(
                        e.code(),
                        git2::ErrorCode::Modified
                            | git2::ErrorCode::Locked
                            | git2::ErrorCode::Exists
                    ) =>
                {
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
                Err(e) => return Err(anyhow::Error::from(e).context(moving())),
            }
        }
        bail!("{}: it kept changing under this process", moving())
    }

    /// Where `branch` points, if it exists.
    pub fn branch_head(&self, branch: &str) -> Result<Option<CommitId>> {
        match self.repo.find_branch(branch, git2::BranchType::Local) {
            Ok(b) => Ok(b.get().target().map(CommitId)),
            Err(e) if e.code() == git2::ErrorCode::NotFound => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    pub fn has_commit(&self, oid: CommitId) -> bool {
        self.commit(oid).is_ok()
    }

    /// The files of a commit.
    pub fn read_tree(&self, oid: CommitId) -> Result<FileTree> {
        let commit = self.commit(oid)?;
        let mut out = FileTree::default();
        let mut failure = None;
        commit
            .tree()?
            .walk(git2::TreeWalkMode::PreOrder, |dir, entry| {
                if entry.kind() != Some(git2::ObjectType::Blob) {
                    return git2::TreeWalkResult::Ok;
                }
                let name = format!("{dir}{}", entry.name().unwrap_or(""));
                let loaded = RelPath::new(&name)
                    .map_err(anyhow::Error::from)
                    .and_then(|p| {
                        let blob = self.repo.find_blob(entry.id())?;
                        Ok((p, blob.content().to_vec()))
                    });
                match loaded {
                    Ok((p, bytes)) => {
                        out.set_executable(
                            &p,
                            entry.filemode() == i32::from(FileMode::BlobExecutable),
                        );
                        out.insert(p, bytes);
                        git2::TreeWalkResult::Ok
                    }
                    Err(e) => {
                        failure = Some(e);
                        git2::TreeWalkResult::Abort
                    }
                }
            })?;
        if let Some(e) = failure {
            bail!("reading ledger commit {oid}: {e}");
        }
        Ok(out)
    }

    /// The full message of a commit.
    pub fn message(&self, oid: CommitId) -> Result<String> {
        let commit = self.commit(oid)?;
        Ok(String::from_utf8_lossy(commit.message_bytes()).into_owned())
    }

    /// `git diff` text between two commits.
    pub fn diff(&self, from: CommitId, to: CommitId) -> Result<String> {
        let a = self.commit(from)?.tree()?;
        let b = self.commit(to)?.tree()?;
        let diff = self.repo.diff_tree_to_tree(Some(&a), Some(&b), None)?;
        let mut text = String::new();
        diff.print(git2::DiffFormat::Patch, |_, _, line| {
            let origin = line.origin();
            if matches!(origin, '+' | '-' | ' ') {
                text.push(origin);
            }
            text.push_str(&String::from_utf8_lossy(line.content()));
            true
        })?;
        Ok(text)
    }
}
