//! A throw-away PostgreSQL cluster for a test: initdb in a temporary directory (as the
//! `postgres` user when the tests run as root, which PostgreSQL refuses to run as), a server on
//! a free loopback port with trust authentication, stopped and deleted when the test ends.

use super::engines::free_port;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use tempfile::TempDir;

/// The newest PostgreSQL server binaries Debian installed, if any.
fn bin_dir() -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .flatten()
        .map(|e| e.path().join("bin"))
        .filter(|b| b.join("initdb").is_file() && b.join("postgres").is_file())
        .collect();
    dirs.sort();
    dirs.pop()
}

/// (uid, gid) of the `postgres` user.
fn postgres_user() -> Option<(u32, u32)> {
    let id = |flag: &str| -> Option<u32> {
        let out = Command::new("id").args([flag, "postgres"]).output().ok()?;
        String::from_utf8(out.stdout).ok()?.trim().parse().ok()
    };
    Some((id("-u")?, id("-g")?))
}

pub struct Postgres {
    _dir: TempDir,
    server: Child,
    pub port: u16,
}

impl Postgres {
    pub fn start() -> Result<Postgres, String> {
        let bin = bin_dir().ok_or("needs postgresql (/usr/lib/postgresql/*/bin)")?;
        // SAFETY: geteuid has no preconditions.
        let root = unsafe { libc::geteuid() == 0 };
        let user = if root {
            Some(postgres_user().ok_or("needs the postgres user that Debian's package makes")?)
        } else {
            None
        };
        let dir = tempfile::tempdir().unwrap();
        let as_owner = |program: &Path| {
            let mut c = Command::new(program);
            if let Some((uid, gid)) = user {
                c.uid(uid).gid(gid);
            }
            c
        };
        if let Some((uid, gid)) = user {
            std::os::unix::fs::chown(dir.path(), Some(uid), Some(gid)).unwrap();
        }
        let data = dir.path().join("data");
        let log = dir.path().join("server.log");
        let out = as_owner(&bin.join("initdb"))
            .args([
                "-A",
                "trust",
                "-U",
                "polymorph",
                "-E",
                "UTF8",
                "--locale=C",
                "--no-sync",
                "-D",
            ])
            .arg(&data)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "initdb failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let port = free_port();
        let server = as_owner(&bin.join("postgres"))
            .arg("-D")
            .arg(&data)
            .args(["-p", &port.to_string(), "-c", "listen_addresses=127.0.0.1"])
            .args(["-c", "fsync=off", "-c"])
            .arg(format!("unix_socket_directories={}", dir.path().display()))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        let pg = Postgres {
            _dir: dir,
            server,
            port,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let ready = Command::new(bin.join("pg_isready"))
                .args(["-q", "-h", "127.0.0.1", "-p", &port.to_string()])
                .status()
                .is_ok_and(|s| s.success());
            if ready {
                return Ok(pg);
            }
            assert!(
                Instant::now() < deadline,
                "postgres did not come up in 30 s; its log:\n{}",
                std::fs::read_to_string(&log).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// A URL for database `db` (created on first use by `create`).
    pub fn url(&self, db: &str) -> String {
        format!("postgres://polymorph@127.0.0.1:{}/{db}", self.port)
    }

    /// The `postgres` database's URL, which always exists.
    pub fn default_url(&self) -> String {
        self.url("postgres")
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        // SIGINT: a fast shutdown (the server's own children end with it).
        // SAFETY: kill on our child's pid.
        unsafe {
            libc::kill(self.server.id() as i32, libc::SIGINT);
        }
        let _ = self.server.wait();
    }
}
