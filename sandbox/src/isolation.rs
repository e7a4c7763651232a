//! How commands are isolated on this machine: bubblewrap where it works (with a user namespace
//! of the command's own where the machine allows one), or plain process groups, with the reason.
//! The namespaces and mounts every sandboxed command starts from are here; `exec.rs` adds the
//! tree, `/tmp`, the seccomp filter and what is hidden.

use std::path::{Path, PathBuf};

/// How commands are isolated on this machine.
#[derive(Debug, Clone)]
pub enum Isolation {
    /// bubblewrap at `path` works here. `userns`: it can also put commands in a user namespace
    /// of their own in which no further namespace can be made (`--unshare-user
    /// --disable-userns`); without it commands still run with every capability dropped.
    Bwrap { path: PathBuf, userns: bool },
    /// No isolation beyond process groups and the scrubbed environment; the reason why.
    Plain(String),
}

/// The namespaces and mounts every sandboxed command gets, before its tree is bound (its /tmp,
/// sized to the command's limit, comes right after).
pub(crate) const BWRAP_BASE: [&str; 12] = [
    "--ro-bind",
    "/",
    "/",
    "--dev",
    "/dev",
    "--proc",
    "/proc",
    // A fresh procfs is writable; sysctls must not be (uid 0 may write many without any capability).
    "--ro-bind",
    "/proc/sys",
    "/proc/sys",
    "--unshare-net",
    "--unshare-pid",
];

/// Directories of runtime state, sockets and mounted secrets: empty in the sandbox.
pub(crate) const RUNTIME_DIRS: [&str; 2] = ["/run", "/var/run"];

/// No capabilities, even for root: no remounting, unmounting or new mount namespaces.
pub(crate) const BWRAP_NO_CAPS: [&str; 2] = ["--cap-drop", "ALL"];

/// A user namespace of the command's own in which it cannot create another one (`unshare`).
pub(crate) const BWRAP_USERNS: [&str; 2] = ["--unshare-user", "--disable-userns"];

impl Isolation {
    /// Uses bwrap when it is on the PATH and can actually create its namespaces here, with a
    /// user namespace when the machine allows one.
    pub fn detect(path_var: &str) -> Isolation {
        let found = path_var
            .split(':')
            .map(|d| Path::new(d).join("bwrap"))
            .find(|p| p.is_file());
        let Some(bwrap) = found else {
            return Isolation::Plain("bwrap is not installed (Debian package `bubblewrap`)".into());
        };
        let probe = |userns: bool| {
            let mut args: Vec<&str> = BWRAP_BASE.to_vec();
            args.extend(["--tmpfs", "/tmp"]);
            args.extend(BWRAP_NO_CAPS);
            if userns {
                args.extend(BWRAP_USERNS);
            }
            // Commands run with a status descriptor (exec.rs): a bwrap without the option
            // (before 0.4) is refused here, not at the first command.
            args.extend(["--json-status-fd", "2", "--die-with-parent", "true"]);
            std::process::Command::new(&bwrap)
                .args(args)
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .output()
        };
        match probe(true) {
            Ok(out) if out.status.success() => {
                return Isolation::Bwrap {
                    path: bwrap,
                    userns: true,
                };
            }
            Ok(_) => {}
            Err(e) => return Isolation::Plain(format!("bwrap did not start: {e}")),
        }
        match probe(false) {
            Ok(out) if out.status.success() => Isolation::Bwrap {
                path: bwrap,
                userns: false,
            },
            Ok(out) => {
                let err = String::from_utf8_lossy(&out.stderr);
                let err = err.trim();
                Isolation::Plain(if err.contains("--json-status-fd") {
                    format!(
                        "{} is too old: it lacks --json-status-fd, which tells a command that ran from one bwrap could not start (bubblewrap 0.4 or later): {err}",
                        bwrap.display()
                    )
                } else {
                    format!("bwrap cannot create namespaces here: {err}")
                })
            }
            Err(e) => Isolation::Plain(format!("bwrap did not start: {e}")),
        }
    }

    pub fn describe(&self) -> String {
        match self {
            Isolation::Bwrap { path, userns } => format!(
                "bwrap ({}): read-only root, private /tmp, empty /run, no network, no Unix socket, no capabilities{}",
                path.display(),
                if *userns {
                    ", no new namespaces"
                } else {
                    " (no user namespace here: `unshare` of a user namespace is not refused)"
                }
            ),
            Isolation::Plain(why) => format!("none: {why}"),
        }
    }
}
