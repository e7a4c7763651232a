//! A cgroup of each command's own, where the machine lets polymorph make one: its processes
//! together may hold at most so much memory and so many tasks, so one test cannot take the
//! machine (and the out-of-memory killer picks inside the cgroup, never polymorph). cgroup v1's
//! `pids` and `memory` hierarchies where they are mounted and writable, else cgroup v2 where the
//! current cgroup delegates both controllers to its children. Where neither is there, the runner
//! falls back to a per-process memory rlimit (`exec.rs`) and says so.

use crate::SandboxError;
use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How long a finished command's cgroup is given to empty before it is left behind.
const EMPTY_WAIT: Duration = Duration::from_secs(2);

/// Where this polymorph makes its commands' cgroups.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parents {
    /// cgroup v1: the current cgroup's directory in the `pids` and in the `memory` hierarchy.
    V1 { pids: PathBuf, memory: PathBuf },
    /// cgroup v2: the current cgroup, whose `cgroup.subtree_control` holds pids and memory.
    V2(PathBuf),
}

/// Mount points of cgroup hierarchies: (mount point, root inside the hierarchy, fstype, options).
fn mounts(mountinfo: &str) -> Vec<(PathBuf, String, String, String)> {
    mountinfo
        .lines()
        .filter_map(|l| {
            let (pre, post) = l.split_once(" - ")?;
            let pre: Vec<&str> = pre.split(' ').collect();
            let post: Vec<&str> = post.split(' ').collect();
            let (root, point) = (pre.get(3)?, pre.get(4)?);
            let (fstype, options) = (post.first()?, post.get(2).unwrap_or(&""));
            fstype.starts_with("cgroup").then(|| {
                (
                    PathBuf::from(point),
                    root.to_string(),
                    fstype.to_string(),
                    options.to_string(),
                )
            })
        })
        .collect()
}

/// The directory of the current cgroup in the hierarchy mounted at `point` (whose root is
/// `root`), given its path in /proc/self/cgroup.
fn dir_of(point: &Path, root: &str, path: &str) -> PathBuf {
    let rel = path
        .strip_prefix(root)
        .unwrap_or(path)
        .trim_start_matches('/');
    point.join(rel)
}

/// Where to make cgroups, from /proc/self/mountinfo and /proc/self/cgroup as given.
fn parents_from(mountinfo: &str, cgroups: &str) -> Option<Parents> {
    let mounts = mounts(mountinfo);
    let v1 = |controller: &str| {
        let path = cgroups.lines().find_map(|l| {
            let mut f = l.splitn(3, ':');
            let (_, list, path) = (f.next()?, f.next()?, f.next()?);
            list.split(',').any(|c| c == controller).then_some(path)
        })?;
        mounts.iter().find_map(|(point, root, fstype, opts)| {
            (fstype == "cgroup" && opts.split(',').any(|o| o == controller))
                .then(|| dir_of(point, root, path))
        })
    };
    if let (Some(pids), Some(memory)) = (v1("pids"), v1("memory")) {
        return Some(Parents::V1 { pids, memory });
    }
    let path = cgroups.lines().find_map(|l| l.strip_prefix("0::"))?;
    let (point, root, _, _) = mounts.iter().find(|m| m.2 == "cgroup2")?;
    let dir = dir_of(point, root, path);
    let control = std::fs::read_to_string(dir.join("cgroup.subtree_control")).ok()?;
    let has = |c: &str| control.split_whitespace().any(|w| w == c);
    (has("pids") && has("memory")).then_some(Parents::V2(dir))
}

impl Parents {
    /// This machine's, when polymorph can make and remove a cgroup there.
    pub fn detect() -> Option<Parents> {
        let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
        let cgroups = std::fs::read_to_string("/proc/self/cgroup").ok()?;
        let parents = parents_from(&mountinfo, &cgroups)?;
        let probe = format!("polymorph-probe-{}", std::process::id());
        let made: Vec<PathBuf> = parents.dirs().iter().map(|d| d.join(&probe)).collect();
        let ok = made.iter().all(|d| std::fs::create_dir(d).is_ok());
        for d in &made {
            let _ = std::fs::remove_dir(d);
        }
        ok.then_some(parents)
    }

    fn dirs(&self) -> Vec<&Path> {
        match self {
            Parents::V1 { pids, memory } => vec![pids, memory],
            Parents::V2(dir) => vec![dir],
        }
    }

    pub fn describe(&self) -> &'static str {
        match self {
            Parents::V1 { .. } => "cgroup v1",
            Parents::V2(_) => "cgroup v2",
        }
    }

    /// A fresh cgroup named `name` holding at most `tasks` tasks and `memory` bytes.
    pub fn create(&self, name: &str, tasks: u64, memory: u64) -> Result<Cgroup, SandboxError> {
        let mut made = Cgroup { dirs: Vec::new() };
        let write = |dir: &Path, file: &str, value: String| {
            std::fs::write(dir.join(file), &value)
                .map_err(|e| SandboxError::io(format!("setting {file} of {}", dir.display()), e))
        };
        for (parent, limits, swap) in self.limit_files(tasks, memory) {
            let dir = parent.join(name);
            std::fs::create_dir(&dir)
                .map_err(|e| SandboxError::io(format!("making cgroup {}", dir.display()), e))?;
            made.dirs.push(dir.clone());
            for (file, value) in limits {
                write(&dir, file, value)?;
            }
            // Swap is held to the limit too where the hierarchy can say so (v1 needs the
            // kernel's swap accounting for it; without swap there is nothing to hold).
            if let Some((file, value)) = swap {
                let _ = write(&dir, file, value);
            }
        }
        Ok(made)
    }

    /// Per parent directory, the files that set the limits, and the swap limit where it goes.
    #[allow(clippy::type_complexity)]
    fn limit_files(
        &self,
        tasks: u64,
        memory: u64,
    ) -> Vec<(
        &Path,
        Vec<(&'static str, String)>,
        Option<(&'static str, String)>,
    )> {
        match self {
            Parents::V1 { pids, memory: mem } => vec![
                (pids.as_path(), vec![("pids.max", tasks.to_string())], None),
                (
                    mem.as_path(),
                    vec![("memory.limit_in_bytes", memory.to_string())],
                    Some(("memory.memsw.limit_in_bytes", memory.to_string())),
                ),
            ],
            Parents::V2(dir) => vec![(
                dir.as_path(),
                vec![
                    ("pids.max", tasks.to_string()),
                    ("memory.max", memory.to_string()),
                ],
                Some(("memory.swap.max", "0".to_string())),
            )],
        }
    }
}

/// One command's cgroup: killed and removed when dropped.
#[derive(Debug)]
pub struct Cgroup {
    dirs: Vec<PathBuf>,
}

impl Cgroup {
    /// The `cgroup.procs` files a child writes "0" into, between fork and exec, to join.
    pub fn procs_files(&self) -> Result<Vec<CString>, SandboxError> {
        self.dirs
            .iter()
            .map(|d| {
                CString::new(d.join("cgroup.procs").into_os_string().into_encoded_bytes()).map_err(
                    |_| SandboxError::io("a cgroup path", std::io::ErrorKind::InvalidInput.into()),
                )
            })
            .collect()
    }

    fn members(&self) -> Vec<i32> {
        self.dirs
            .iter()
            .filter_map(|d| std::fs::read_to_string(d.join("cgroup.procs")).ok())
            .flat_map(|t| {
                t.lines()
                    .filter_map(|l| l.trim().parse().ok())
                    .collect::<Vec<_>>()
            })
            .collect()
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        let deadline = Instant::now() + EMPTY_WAIT;
        loop {
            let left = self.members();
            if left.is_empty() || Instant::now() >= deadline {
                break;
            }
            for pid in left {
                // SAFETY: kill(2) on a pid of this command's own cgroup; no memory is touched.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        // One that still holds a process (it would not die in time) is left: empty, it is
        // harmless, and the machine's own cleanup removes it.
        for d in &self.dirs {
            let _ = std::fs::remove_dir(d);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTS: &str = "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n\
        35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n\
        39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n\
        41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";

    #[test]
    fn v1_hierarchies_are_found_at_the_current_cgroup() {
        let cg = "8:pids:/\n4:memory:/process_api/abc\n0::/\n";
        assert_eq!(
            parents_from(MOUNTS, cg),
            Some(Parents::V1 {
                pids: "/sys/fs/cgroup/pids".into(),
                memory: "/sys/fs/cgroup/memory/process_api/abc".into(),
            })
        );
    }

    #[test]
    fn without_v1_controllers_an_undelegated_v2_cgroup_is_not_used() {
        let mounts = "41 31 0:38 / /nonexistent/cgroup rw - cgroup2 cgroup2 rw\n";
        assert_eq!(parents_from(mounts, "0::/user.slice\n"), None);
    }
}
