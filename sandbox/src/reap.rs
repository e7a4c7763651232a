//! Marks on sandboxed processes: each command's environment carries a token naming the
//! polymorph process that started it, so that what escaped its process group (plain isolation)
//! is killed when the command ends, and what a killed controller left behind (a bwrap started
//! the moment its parent died, which never received its parent-death signal) is killed by the
//! next polymorph that runs commands on the machine.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// Environment variable holding a command's token: `OWNER-SEQ`, where OWNER is the starting
/// process's PID namespace, PID and start time (`4026531836.1234.5678`).
pub(crate) const TOKEN_VAR: &str = "POLYMORPH_SANDBOX_TOKEN";

/// Scans of /proc for marked processes; each kills what it finds, and forks racing a scan are
/// caught by the next.
const TOKEN_SCANS: usize = 5;

/// Distinguishes the tokens of commands run by this process.
static TOKEN_SEQ: AtomicU64 = AtomicU64::new(0);

/// A process, as a token names it: a PID is reused, a PID with its start time is not, and a
/// PID means something only in its own namespace.
#[derive(Debug, PartialEq, Clone, Copy)]
struct Owner {
    namespace: u64,
    pid: u32,
    started: u64,
}

impl Owner {
    fn of(pid: u32) -> Option<Owner> {
        Some(Owner {
            namespace: pid_namespace()?,
            pid,
            started: start_time(pid)?,
        })
    }

    fn render(&self) -> String {
        format!("{}.{}.{}", self.namespace, self.pid, self.started)
    }

    /// The owner named by a token's value, if it is one.
    fn parse(token: &str) -> Option<Owner> {
        let (owner, _seq) = token.rsplit_once('-')?;
        let mut parts = owner.split('.');
        let owner = Owner {
            namespace: parts.next()?.parse().ok()?,
            pid: parts.next()?.parse().ok()?,
            started: parts.next()?.parse().ok()?,
        };
        parts.next().is_none().then_some(owner)
    }

    /// Still running: the same PID, started at the same time.
    fn alive(&self) -> bool {
        start_time(self.pid) == Some(self.started)
    }
}

/// This process's PID namespace (the inode `/proc/self/ns/pid` names).
fn pid_namespace() -> Option<u64> {
    let link = std::fs::read_link("/proc/self/ns/pid").ok()?;
    let link = link.to_str()?;
    link.strip_prefix("pid:[")?.strip_suffix(']')?.parse().ok()
}

/// A process's start time in clock ticks after boot (field 22 of `/proc/PID/stat`).
fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold spaces or parentheses.
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(19)?.parse().ok()
}

/// A fresh token for one command of this process.
pub(crate) fn new_token() -> String {
    static OWNER: OnceLock<String> = OnceLock::new();
    let owner = OWNER.get_or_init(|| {
        Owner::of(std::process::id()).map_or_else(
            // No /proc to read: a token no scan can take for an orphan's.
            || format!("unknown.{}", std::process::id()),
            |o| o.render(),
        )
    });
    format!("{owner}-{}", TOKEN_SEQ.fetch_add(1, Ordering::SeqCst))
}

/// Every process carrying a token, with the token.
fn marked() -> Vec<(libc::pid_t, String)> {
    let prefix = format!("{TOKEN_VAR}=");
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let pid = entry.file_name().to_str()?.parse::<libc::pid_t>().ok()?;
            let environ = std::fs::read(entry.path().join("environ")).ok()?;
            let token = environ
                .split(|b| *b == 0)
                .find_map(|kv| kv.strip_prefix(prefix.as_bytes()))?;
            Some((pid, String::from_utf8_lossy(token).into_owned()))
        })
        .collect()
}

fn kill(pid: libc::pid_t) {
    // SAFETY: kill(2) on a pid just read from /proc; no memory is touched. A process gone in the
    // meantime gives ESRCH, which is what was wanted.
    unsafe {
        libc::kill(pid, libc::SIGKILL);
    }
}

/// Kills every process whose environment carries `token`. Best effort: a process that rewrites
/// its own environment block escapes it (bwrap's PID namespace does not).
pub(crate) fn kill_marked(token: &str) {
    for _ in 0..TOKEN_SCANS {
        let found: Vec<_> = marked().into_iter().filter(|(_, t)| t == token).collect();
        if found.is_empty() {
            return;
        }
        found.into_iter().for_each(|(pid, _)| kill(pid));
    }
}

/// Kills the sandboxed processes whose polymorph is gone (in this PID namespace: a PID from
/// another means nothing here), and says how many. Commands of a polymorph still running are
/// left alone, whichever it is.
pub fn reap_orphans() -> usize {
    let Some(here) = pid_namespace() else {
        return 0;
    };
    let mut killed = 0;
    for (pid, token) in marked() {
        let Some(owner) = Owner::parse(&token) else {
            continue;
        };
        if owner.namespace == here && !owner.alive() {
            kill(pid);
            killed += 1;
        }
    }
    killed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_names_this_process_which_is_alive() {
        let token = new_token();
        let owner = Owner::parse(&token).unwrap();
        assert_eq!(owner.pid, std::process::id());
        assert_eq!(owner.namespace, pid_namespace().unwrap());
        assert!(owner.alive());
        assert_ne!(new_token(), token);
    }

    #[test]
    fn a_reused_pid_or_a_malformed_token_is_not_its_owner() {
        let me = Owner::of(std::process::id()).unwrap();
        let reused = Owner {
            started: me.started + 1,
            ..me
        };
        assert!(!reused.alive());
        for bad in ["", "12-3", "1.2-3", "1.2.3.4-5", "a.b.c-1", "unknown.12-0"] {
            assert_eq!(Owner::parse(bad), None, "{bad}");
        }
        assert_eq!(Owner::parse(&format!("{}-7", me.render())), Some(me));
    }
}
