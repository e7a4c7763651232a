//! Where evaluations run: `local`, `ssh://[user@]host[:port]` or `slurm`. A remote target is
//! a command that starts `polymorph worker` on some node (through ssh, or as a Slurm job step
//! through srun); one call sends it one job and waits for its reply, watching for a cancel.

use super::wire::{Job, Reply, find_reply};
use crate::measure::text_enum::text_enum;
use crate::task::{Requirement, Task};
use anyhow::{Result, bail};
use sandbox::CancelFlag;
use std::io::Write as _;
use std::os::unix::process::CommandExt as _;
use std::process::{Child, Command, Stdio};
use std::str::FromStr;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// How often a call in flight looks at its process and the cancel flag.
const POLL: Duration = Duration::from_millis(50);
/// How long a cancelled call's process gets to stop after SIGTERM before it is killed.
const TERM_GRACE: Duration = Duration::from_secs(10);
/// Part of a failed call's stderr kept in its fault.
const STDERR_TAIL: usize = 600;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    Local,
    Ssh {
        dest: String,
        port: Option<u16>,
    },
    /// Slurm, in a partition when named (`slurm:h200`): on a cluster with a partition per
    /// node type, one target per type.
    Slurm {
        partition: Option<String>,
    },
}

impl FromStr for Target {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        if s == "local" {
            return Ok(Target::Local);
        }
        if s == "slurm" {
            return Ok(Target::Slurm { partition: None });
        }
        if let Some(p) = s.strip_prefix("slurm:") {
            let valid = !p.is_empty()
                && p.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
            if !valid {
                return Err(format!("{s:?}: expected slurm:PARTITION"));
            }
            return Ok(Target::Slurm {
                partition: Some(p.to_string()),
            });
        }
        let Some(rest) = s.strip_prefix("ssh://") else {
            return Err(format!(
                "{s:?}: expected local, slurm, slurm:PARTITION or ssh://[user@]host[:port]"
            ));
        };
        let rest = rest.trim_end_matches('/');
        let (dest, port) = match rest.rsplit_once(':') {
            Some((d, p)) => {
                let port = p
                    .parse::<u16>()
                    .map_err(|_| format!("{s:?}: the port {p:?} is not a number"))?;
                (d, Some(port))
            }
            None => (rest, None),
        };
        let host = dest.rsplit('@').next().unwrap_or("");
        if host.is_empty() || dest.contains('/') || dest.starts_with('-') || dest.contains(' ') {
            return Err(format!("{s:?}: expected ssh://[user@]host[:port]"));
        }
        Ok(Target::Ssh {
            dest: dest.to_string(),
            port,
        })
    }
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Target::Local => f.write_str("local"),
            Target::Slurm { partition: None } => f.write_str("slurm"),
            Target::Slurm { partition: Some(p) } => write!(f, "slurm:{p}"),
            Target::Ssh { dest, port: None } => write!(f, "ssh://{dest}"),
            Target::Ssh {
                dest,
                port: Some(p),
            } => write!(f, "ssh://{dest}:{p}"),
        }
    }
}

impl serde::Serialize for Target {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Target {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

/// Remote targets and how to reach them, as a schedule keeps them.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct RemoteSpec {
    pub targets: Vec<Target>,
    #[serde(flatten)]
    pub options: TargetOptions,
}

text_enum! {
    /// Where a candidate a node's series accepted is confirmed, in a fresh series, before it
    /// is committed: a node is trusted with nothing the controller cannot check.
    pub enum VerifyOn {
        /// A target other than the one that measured it (the default with two or more).
        OtherNode = "other-node",
        /// Here, on the controller's own machine, which must be able to run the task.
        Controller = "controller",
        /// The target that measured it (the default with one: that node is trusted with its
        /// samples).
        SameNode = "same-node",
    }
}

/// How remote targets are reached.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct TargetOptions {
    /// The polymorph binary on the nodes.
    pub worker: String,
    /// The ssh program and its options, split on whitespace (like GIT_SSH_COMMAND).
    pub ssh_command: String,
    /// Extra srun options: partition, account, time limit, constraints.
    pub slurm_args: Vec<String>,
    /// Candidates evaluated at once (each its own job on a node).
    pub jobs: usize,
    /// Where accepted candidates are confirmed; `None`: another node when there are two or
    /// more, else the same one.
    #[serde(default)]
    pub verify_on: Option<VerifyOn>,
}

/// Why a call brought no reply.
#[derive(Debug)]
pub enum CallError {
    Cancelled,
    /// The node, the connection or the scheduler failed: the job may be retried elsewhere.
    Fault(String),
}

/// One remote target, ready to be called.
#[derive(Debug, Clone)]
pub struct Remote {
    pub target: Target,
    argv: Vec<String>,
    task: String,
}

/// The environment ssh and srun are started with, and the only variables a Slurm job gets
/// (`srun --export`): what the client needs to log in or submit (keys through the agent, a
/// Kerberos ticket, Slurm's own settings) and what the worker needs to run its commands. Never
/// the model's key, a database URL with its password, or anything else of the controller's.
const REMOTE_ENV: [&str; 13] = [
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "LANG",
    "LC_ALL",
    "TZ",
    "TMPDIR",
    "SSH_AUTH_SOCK",
    "KRB5CCNAME",
    "POLYMORPH_LOG",
    "POLYMORPH_CACHE",
    "XDG_CACHE_HOME",
];

/// Slurm's client settings (`SLURM_CONF` and the like) pass to srun too, never to the job.
const SLURM_PREFIX: &str = "SLURM_";

/// The allowlisted part of this process's environment, for ssh or srun.
fn remote_env(slurm: bool) -> Vec<(String, String)> {
    std::env::vars()
        .filter(|(k, _)| REMOTE_ENV.contains(&k.as_str()) || (slurm && k.starts_with(SLURM_PREFIX)))
        .collect()
}

/// `'it''s'` quoting for the remote shell ssh hands its command to.
fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

impl Remote {
    pub fn new(target: Target, opts: &TargetOptions, task: &Task) -> Result<Self> {
        let argv = match &target {
            Target::Local => bail!("the local target runs in this process"),
            Target::Ssh { dest, port } => {
                let mut argv: Vec<String> = opts
                    .ssh_command
                    .split_whitespace()
                    .map(String::from)
                    .collect();
                if argv.is_empty() {
                    bail!("--ssh-command is empty");
                }
                // Never wait for a password; notice a dead connection within a minute.
                for o in [
                    "BatchMode=yes",
                    "ServerAliveInterval=15",
                    "ServerAliveCountMax=4",
                ] {
                    argv.extend(["-o".to_string(), o.to_string()]);
                }
                if let Some(p) = port {
                    argv.extend(["-p".to_string(), p.to_string()]);
                }
                argv.extend([dest.clone(), "--".into()]);
                argv.push(format!("{} worker", shell_quote(&opts.worker)));
                argv
            }
            Target::Slurm { partition } => {
                let mut argv: Vec<String> = [
                    "srun",
                    "--quiet",
                    "--nodes=1",
                    "--ntasks=1",
                    "--kill-on-bad-exit=1",
                ]
                .map(String::from)
                .to_vec();
                argv.push(format!("--export={}", REMOTE_ENV.join(",")));
                if task.requires.contains(&Requirement::NvidiaGpu) {
                    argv.push("--gres=gpu:1".into());
                }
                if let Some(p) = partition {
                    argv.push(format!("--partition={p}"));
                }
                argv.extend(opts.slurm_args.iter().cloned());
                argv.extend([opts.worker.clone(), "worker".into()]);
                argv
            }
        };
        Ok(Remote {
            target,
            argv,
            task: task.name.clone(),
        })
    }

    /// Sends `job` and waits for the reply; a cancel stops the call (and so the job).
    pub fn call(&self, job: &Job, cancel: &CancelFlag) -> Result<Reply, CallError> {
        let fault = |why: String| CallError::Fault(format!("{}: {why}", self.target));
        let line = serde_json::to_string(job).map_err(|e| fault(e.to_string()))?;
        let mut argv = self.argv.clone();
        let slurm = matches!(self.target, Target::Slurm { .. });
        if slurm {
            // squeue shows what each job is doing: polymorph-spin-evaluate.
            argv.insert(
                1,
                format!("--job-name=polymorph-{}-{}", self.task, job.op.name()),
            );
        }
        let mut child = Command::new(&argv[0])
            .args(&argv[1..])
            .env_clear()
            .envs(remote_env(slurm))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .map_err(|e| fault(format!("could not start {}: {e}", argv[0])))?;
        // Stdin stays open while the job runs: its end tells the worker to stop.
        let mut stdin = child.stdin.take();
        if let Some(s) = stdin.as_mut() {
            // A write error means the process is already gone; its exit says why.
            let _ = s
                .write_all(line.as_bytes())
                .and_then(|()| s.write_all(b"\n"));
        }
        let out = drain(child.stdout.take());
        let err = drain(child.stderr.take());
        let status = loop {
            if cancel.load(Ordering::SeqCst) {
                drop(stdin.take());
                stop(&mut child);
                return Err(CallError::Cancelled);
            }
            match child.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) => std::thread::sleep(POLL),
                Err(e) => return Err(fault(format!("waiting: {e}"))),
            }
        };
        drop(stdin);
        let stdout = out.join().unwrap_or_default();
        let stderr = err.join().unwrap_or_default();
        find_reply(&stdout).map_err(|e| {
            let tail = tail_of(&stderr);
            fault(format!(
                "{e} ({status}){}",
                if tail.is_empty() {
                    String::new()
                } else {
                    format!(": {tail}")
                }
            ))
        })
    }
}

fn drain(pipe: Option<impl std::io::Read + Send + 'static>) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(mut p) = pipe {
            let _ = p.read_to_end(&mut buf);
        }
        String::from_utf8_lossy(&buf).into_owned()
    })
}

/// SIGTERM to the call's process group (srun passes it on to the job step), then SIGKILL.
fn stop(child: &mut Child) {
    let pgid = child.id() as i32;
    // SAFETY: signalling a process group this call created.
    unsafe { libc::killpg(pgid, libc::SIGTERM) };
    let deadline = Instant::now() + TERM_GRACE;
    while Instant::now() < deadline {
        if matches!(child.try_wait(), Ok(Some(_))) {
            return;
        }
        std::thread::sleep(POLL);
    }
    // SAFETY: as above.
    unsafe { libc::killpg(pgid, libc::SIGKILL) };
    let _ = child.wait();
}

fn tail_of(text: &str) -> String {
    let t = text.trim();
    let mut start = t.len().saturating_sub(STDERR_TAIL);
    while !t.is_char_boundary(start) {
        start += 1;
    }
    t[start..].replace('\n', " | ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_parse_and_print_back() {
        for s in [
            "local",
            "slurm",
            "slurm:h200",
            "ssh://gpu7",
            "ssh://me@gpu7:2222",
        ] {
            assert_eq!(s.parse::<Target>().unwrap().to_string(), s);
        }
        for bad in [
            "ssh://",
            "ssh://host:port",
            "ssh://-oProxyCommand=x",
            "kubernetes",
            "slurm:",
            "slurm:a b",
            "",
        ] {
            assert!(bad.parse::<Target>().is_err(), "{bad}");
        }
    }

    #[test]
    fn the_remote_command_quotes_the_worker_path() {
        assert_eq!(
            shell_quote("/opt/it's/polymorph"),
            r"'/opt/it'\''s/polymorph'"
        );
    }
}
