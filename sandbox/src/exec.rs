//! Running a task's commands: `sh -c` in the candidate's tree with an empty stdin, only the
//! environment the caller passes (never the parent's), its own process group (killed whole on
//! timeout, on cancel, and after it exits so nothing outlives it), output captured to files and
//! kept as a capped tail, a file-size limit, and, where `bwrap` works, a read-only root, a
//! private /tmp of a set size, empty `/run`, no network, no Unix socket (`seccomp.rs`), its own
//! PID namespace and no capabilities (root included); memory per process is limited too.

use crate::SandboxError;
use crate::cgroup::{Cgroup, Parents};
use crate::hide::Hiding;
use crate::isolation::{BWRAP_BASE, BWRAP_NO_CAPS, BWRAP_USERNS, Isolation, RUNTIME_DIRS};
use crate::reap;
use crate::status::StatusFile;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Set to true to abandon the running command (e.g. on Ctrl-C): it is killed with its group.
pub type CancelFlag = Arc<AtomicBool>;

/// How often a waiting run looks at the cancel flag; exits are seen at once, not polled.
const CANCEL_POLL: Duration = Duration::from_millis(100);

/// Whether a command may write its tree: a build may; a test or a benchmark sees the build's
/// outputs read-only (under bwrap), so nothing it runs can replace them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TreeAccess {
    Writable,
    ReadOnly,
}

fn bind_flag(access: TreeAccess) -> &'static str {
    match access {
        TreeAccess::Writable => "--bind",
        TreeAccess::ReadOnly => "--ro-bind",
    }
}

/// One command to run.
#[derive(Debug, Clone)]
pub struct CommandSpec<'a> {
    /// Run with `sh -c`.
    pub script: &'a str,
    /// The candidate's tree: the working directory and, when `tree` is writable, the only
    /// writable place under bwrap besides a private /tmp.
    pub cwd: &'a Path,
    pub tree: TreeAccess,
    /// Device nodes the command sees besides bwrap's minimal /dev (a GPU's, for a task that
    /// needs one); nothing else of the host's /dev.
    pub devices: Vec<PathBuf>,
    /// Directories outside the tree the command sees at the same path, each read-only or
    /// writable, shown through whatever hides their surroundings (a home). Without bwrap they are
    /// simply there, as everything is: the caller checks what it must.
    pub dirs: Vec<(PathBuf, TreeAccess)>,
    /// The complete environment of the command.
    pub env: Vec<(String, String)>,
    pub timeout: Duration,
    /// Bytes of the tail of stdout and of stderr kept.
    pub output_cap: usize,
    /// Largest file the command may write (RLIMIT_FSIZE), so a runaway writer cannot fill the disk.
    pub max_file_bytes: u64,
    /// Most memory the command may hold: its processes together, in a cgroup of its own where
    /// the machine allows one; else each process's writable mappings (RLIMIT_DATA: heap and
    /// anonymous mappings; a reservation never made writable does not count).
    pub max_memory_bytes: u64,
    /// Most tasks (processes and threads) the command may run at once, in its cgroup; not
    /// limited where there is none.
    pub max_processes: u64,
    /// Size of its private /tmp (a tmpfs, in memory) under bwrap.
    pub tmp_bytes: u64,
}

/// How a command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitKind {
    Code(i32),
    Signal(i32),
    TimedOut,
    Cancelled,
}

/// What a command did.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub exit: ExitKind,
    /// The last `output_cap` bytes of stdout, lossily decoded.
    pub stdout: String,
    pub stderr: String,
    /// True when either stream was longer than the cap.
    pub truncated: bool,
    pub wall: Duration,
}

impl Outcome {
    pub fn success(&self) -> bool {
        self.exit == ExitKind::Code(0)
    }

    /// "exit status 2", "killed by signal 9", "timed out after 120s" ...
    pub fn describe(&self, timeout: Duration) -> String {
        match self.exit {
            ExitKind::Code(c) => format!("exit status {c}"),
            ExitKind::Signal(s) => format!("killed by signal {s}"),
            ExitKind::TimedOut => format!("timed out after {}s", timeout.as_secs_f64()),
            ExitKind::Cancelled => "cancelled".into(),
        }
    }
}

/// Runs commands under this machine's isolation.
#[derive(Debug, Clone)]
pub struct Runner {
    isolation: Isolation,
    /// Where each command's cgroup is made, when this machine lets polymorph make one.
    cgroups: Option<Parents>,
    /// What sandboxed commands do not see (`hide.rs`): `/root`, `/home` and what `hiding` adds.
    hiding: Hiding,
}

fn kill_group(pgid: u32) {
    // SAFETY: kill(2) with a negative pid signals a process group; no memory is touched.
    // ESRCH (group already gone) is the common, harmless case.
    unsafe {
        libc::kill(-(pgid as libc::pid_t), libc::SIGKILL);
    }
}

/// Waits for the command until `deadline` or cancellation (then kills its group), and kills
/// whatever it left in its group either way. Its exit status, and why it was stopped if it was.
fn wait(
    handle: &Arc<duct::Handle>,
    deadline: Instant,
    cancel: &CancelFlag,
) -> (
    Option<std::io::Result<std::process::ExitStatus>>,
    Option<ExitKind>,
) {
    let pgid = handle.pids().first().copied().unwrap_or(0);
    let (tx, rx) = mpsc::channel();
    let waiter = {
        let handle = Arc::clone(handle);
        std::thread::spawn(move || {
            let status = handle.wait().map(|o| o.status);
            let _ = tx.send(status);
        })
    };
    let mut forced = None;
    let status = loop {
        let now = Instant::now();
        if cancel.load(Ordering::SeqCst) {
            forced = Some(ExitKind::Cancelled);
        } else if now >= deadline {
            forced = Some(ExitKind::TimedOut);
        }
        if forced.is_some() {
            kill_group(pgid);
            break rx.recv().ok();
        }
        match rx.recv_timeout(CANCEL_POLL.min(deadline - now)) {
            Ok(status) => break Some(status),
            Err(mpsc::RecvTimeoutError::Timeout) => continue,
            Err(mpsc::RecvTimeoutError::Disconnected) => break None,
        }
    };
    // Whatever the command left behind in its group (background jobs) dies now.
    kill_group(pgid);
    let _ = waiter.join();
    (status, forced)
}

/// The files bwrap reads its seccomp filter from and writes its status reports to, passed to
/// it by descriptor.
struct BwrapFiles {
    seccomp: File,
    status: StatusFile,
}

impl BwrapFiles {
    fn fds(&self) -> [i32; 2] {
        use std::os::fd::AsRawFd;
        [self.seccomp.as_raw_fd(), self.status.fd()]
    }
}

/// The seccomp filter in an unlinked file at its start, for bwrap's `--seccomp`.
fn seccomp_file() -> Result<File, SandboxError> {
    use std::io::Write;
    let mut f =
        tempfile::tempfile().map_err(|e| SandboxError::io("creating the seccomp filter", e))?;
    f.write_all(&crate::seccomp::filter_bytes())
        .and_then(|()| f.seek(SeekFrom::Start(0)).map(drop))
        .map_err(|e| SandboxError::io("writing the seccomp filter", e))?;
    Ok(f)
}

fn read_tail(file: &mut File, cap: usize) -> Result<(String, bool), SandboxError> {
    let len = file
        .seek(SeekFrom::End(0))
        .map_err(|e| SandboxError::io("reading command output", e))?;
    let start = len.saturating_sub(cap as u64);
    file.seek(SeekFrom::Start(start))
        .map_err(|e| SandboxError::io("reading command output", e))?;
    let mut buf = Vec::with_capacity((len - start) as usize);
    file.read_to_end(&mut buf)
        .map_err(|e| SandboxError::io("reading command output", e))?;
    Ok((String::from_utf8_lossy(&buf).into_owned(), start > 0))
}

impl Runner {
    pub fn new(isolation: Isolation) -> Self {
        Runner {
            isolation,
            cgroups: Parents::detect(),
            hiding: Hiding::homes(),
        }
    }

    /// Also hides `dir` (the user's home, wherever it is) from sandboxed commands.
    pub fn hiding(mut self, dir: PathBuf) -> Self {
        self.hiding = self.hiding.also(dir);
        self
    }

    /// Hides one of polymorph's records (the store, the ledger) from sandboxed commands.
    pub fn hiding_record(mut self, record: PathBuf) -> Self {
        self.hiding = self.hiding.also_record(record);
        self
    }

    pub fn isolation(&self) -> &Isolation {
        &self.isolation
    }

    /// How commands' memory and processes are limited here.
    pub fn describe_limits(&self) -> String {
        match &self.cgroups {
            Some(p) => format!("memory and processes per command ({})", p.describe()),
            None => "memory per process (no cgroup can be made here: processes are not limited)"
                .to_string(),
        }
    }

    fn argv(&self, spec: &CommandSpec<'_>, fds: Option<[i32; 2]>) -> Vec<String> {
        let cwd = spec.cwd.display().to_string();
        let mut argv = Vec::new();
        if let Isolation::Bwrap { path, userns } = &self.isolation {
            argv.push(path.display().to_string());
            argv.extend(BWRAP_BASE.iter().map(|a| a.to_string()));
            argv.extend(["--size".into(), spec.tmp_bytes.to_string()]);
            argv.extend(["--tmpfs".into(), "/tmp".into()]);
            // Where services keep their sockets and secrets (/run/docker.sock, /run/secrets):
            // an empty tmpfs, like the homes.
            for dir in RUNTIME_DIRS {
                let p = Path::new(dir);
                if p.is_dir() && !p.is_symlink() {
                    argv.extend(["--tmpfs".into(), dir.to_string()]);
                }
            }
            if let Some([seccomp, status]) = fds {
                argv.extend(["--seccomp".into(), seccomp.to_string()]);
                argv.extend(["--json-status-fd".into(), status.to_string()]);
            }
            let path_var = spec.env.iter().find(|(k, _)| k == "PATH").map(|(_, v)| v);
            argv.extend(self.hiding.args(path_var.map(String::as_str)));
            for d in &spec.devices {
                let d = d.display().to_string();
                argv.extend(["--dev-bind".into(), d.clone(), d]);
            }
            argv.extend(BWRAP_NO_CAPS.iter().map(|a| a.to_string()));
            if *userns {
                argv.extend(BWRAP_USERNS.iter().map(|a| a.to_string()));
            }
            // The tree and the other directories may live under /tmp or a hidden home: bind
            // them after the tmpfs so they show through.
            for (dir, access) in &spec.dirs {
                let d = dir.display().to_string();
                argv.extend([bind_flag(*access).into(), d.clone(), d]);
            }
            argv.extend([
                bind_flag(spec.tree).into(),
                cwd.clone(),
                cwd.clone(),
                "--chdir".into(),
                cwd,
            ]);
            for a in ["--unshare-ipc", "--die-with-parent", "--new-session", "--"] {
                argv.push(a.into());
            }
        }
        argv.extend(["sh".into(), "-c".into(), spec.script.into()]);
        argv
    }

    /// Starts the command in its own process group, its output into the two files, with the
    /// file-size limit and the parent-death signal set between fork and exec.
    fn spawn(
        &self,
        spec: &CommandSpec<'_>,
        env: Vec<(String, String)>,
        out_file: &File,
        err_file: &File,
        bwrap: Option<&BwrapFiles>,
        cgroup: Option<&Cgroup>,
    ) -> Result<duct::Handle, SandboxError> {
        let fds = bwrap.map(BwrapFiles::fds);
        let argv = self.argv(spec, fds);
        let max_file = spec.max_file_bytes;
        // With a cgroup, memory is held for the whole command there; else per process here.
        let max_memory = if cgroup.is_some() {
            libc::RLIM_INFINITY
        } else {
            spec.max_memory_bytes
        };
        let join: Vec<std::ffi::CString> = match cgroup {
            Some(c) => c.procs_files()?,
            None => Vec::new(),
        };
        let dup = |f: &File| {
            f.try_clone()
                .map_err(|e| SandboxError::io("duplicating an output file", e))
        };
        duct::cmd(&argv[0], &argv[1..])
            .dir(spec.cwd)
            .full_env(env)
            .stdin_null()
            .stdout_file(dup(out_file)?)
            .stderr_file(dup(err_file)?)
            .unchecked()
            .before_spawn(move |cmd| {
                cmd.process_group(0);
                let join = join.clone();
                // SAFETY: only async-signal-safe calls (setrlimit, prctl, fcntl, open, write,
                // close) between fork and exec; the paths were made before the fork.
                unsafe {
                    cmd.pre_exec(move || {
                        let lim = libc::rlimit {
                            rlim_cur: max_file,
                            rlim_max: max_file,
                        };
                        libc::setrlimit(libc::RLIMIT_FSIZE, &lim);
                        let mem = libc::rlimit {
                            rlim_cur: max_memory,
                            rlim_max: max_memory,
                        };
                        libc::setrlimit(libc::RLIMIT_DATA, &mem);
                        // bwrap reads the filter from one descriptor and writes its status to
                        // the other: both must survive the exec.
                        for fd in fds.into_iter().flatten() {
                            libc::fcntl(fd, libc::F_SETFD, 0);
                        }
                        // Into the command's cgroup before anything of it runs.
                        for procs in &join {
                            let fd = libc::open(procs.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                            let wrote = fd >= 0 && libc::write(fd, b"0".as_ptr().cast(), 1) == 1;
                            let err = std::io::Error::last_os_error();
                            if fd >= 0 {
                                libc::close(fd);
                            }
                            if !wrote {
                                return Err(err);
                            }
                        }
                        // If polymorph dies, the command dies with it.
                        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                        Ok(())
                    });
                }
                Ok(())
            })
            .start()
            .map_err(|e| SandboxError::io(format!("starting `{}`", spec.script), e))
    }

    /// Runs one command to completion, timeout or cancellation. Blocking: call it from a
    /// blocking thread.
    pub fn run(
        &self,
        spec: &CommandSpec<'_>,
        cancel: &CancelFlag,
    ) -> Result<Outcome, SandboxError> {
        let mut out_file =
            tempfile::tempfile().map_err(|e| SandboxError::io("creating an output file", e))?;
        let mut err_file =
            tempfile::tempfile().map_err(|e| SandboxError::io("creating an output file", e))?;
        // Every command is marked, bwrap's too: its PID namespace dies with its init, but an
        // init left behind by a controller killed as bwrap started is found by its mark.
        let token = reap::new_token();
        let mut env = spec.env.clone();
        env.push((reap::TOKEN_VAR.to_string(), token.clone()));
        let mut bwrap = match self.isolation {
            Isolation::Bwrap { .. } => Some(BwrapFiles {
                seccomp: seccomp_file()?,
                status: StatusFile::new()?,
            }),
            Isolation::Plain(_) => None,
        };
        let cgroup = match &self.cgroups {
            Some(p) => Some(p.create(
                &format!(
                    "polymorph-{}",
                    token.replace(|c: char| !c.is_ascii_alphanumeric(), "-")
                ),
                spec.max_processes,
                spec.max_memory_bytes,
            )?),
            None => None,
        };
        let started = Instant::now();
        let handle = Arc::new(self.spawn(
            spec,
            env,
            &out_file,
            &err_file,
            bwrap.as_ref(),
            cgroup.as_ref(),
        )?);
        let (status, forced) = wait(&handle, started + spec.timeout, cancel);
        let wall = started.elapsed();
        // And whatever left the group: under bwrap the PID namespace took it with it, and in a
        // cgroup dropping it kills what is left there.
        if let Isolation::Plain(_) = self.isolation {
            reap::kill_marked(&token);
        }
        drop(cgroup);
        let exit = match (forced, status) {
            (Some(kind), _) => kind,
            (None, Some(Ok(st))) => {
                use std::os::unix::process::ExitStatusExt;
                match (st.code(), st.signal()) {
                    (Some(c), _) => ExitKind::Code(c),
                    (None, Some(s)) => ExitKind::Signal(s),
                    (None, None) => ExitKind::Signal(0),
                }
            }
            (None, Some(Err(e))) => {
                return Err(SandboxError::io(
                    format!("waiting for `{}`", spec.script),
                    e,
                ));
            }
            (None, None) => ExitKind::Signal(0),
        };
        let (stdout, t1) = read_tail(&mut out_file, spec.output_cap)?;
        let (stderr, t2) = read_tail(&mut err_file, spec.output_cap)?;
        // bwrap exited on its own without running the command: nothing here is the command's.
        if let (Some(b), ExitKind::Code(_)) = (bwrap.as_mut(), exit)
            && !b.status.command_ended()?
        {
            let said = stderr.lines().rev().find(|l| !l.trim().is_empty());
            let said = said.unwrap_or("no message").trim_start_matches("bwrap: ");
            return Err(SandboxError::NotStarted(said.to_string()));
        }
        Ok(Outcome {
            exit,
            stdout,
            stderr,
            truncated: t1 || t2,
            wall,
        })
    }
}
