//! Real engines started by a test and stopped when it ends: an sshd on loopback with a
//! throw-away key, and a single-node Slurm cluster (munged, slurmctld, slurmd) with two slots.
//! Each says why it cannot start (not installed, not root) so the test can report a skip.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use tempfile::TempDir;

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

fn found(program: &str) -> bool {
    Path::new(program).is_file()
}

fn start(program: &str, args: &[&str], log: &Path) -> Child {
    let out = std::fs::File::create(log).unwrap();
    Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(out.try_clone().unwrap())
        .stderr(out)
        .spawn()
        .unwrap_or_else(|e| panic!("starting {program}: {e}"))
}

fn wait_until(what: &str, log: &Path, mut ready: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !ready() {
        assert!(
            Instant::now() < deadline,
            "{what} did not come up in 30 s; its log:\n{}",
            std::fs::read_to_string(log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// An sshd on 127.0.0.1 that lets this user in with a key made for the test.
pub struct Sshd {
    dir: TempDir,
    child: Child,
    pub port: u16,
}

impl Sshd {
    pub fn start() -> Result<Sshd, String> {
        Sshd::start_with("")
    }

    /// An sshd with `extra` lines in its configuration (e.g. `SetEnv PATH=...` for its sessions).
    pub fn start_with(extra: &str) -> Result<Sshd, String> {
        const SSHD: &str = "/usr/sbin/sshd";
        if !found(SSHD) {
            return Err("needs openssh-server (/usr/sbin/sshd)".into());
        }
        let dir = tempfile::tempdir().unwrap();
        for key in ["host", "user"] {
            let ok = Command::new("ssh-keygen")
                .args(["-q", "-t", "ed25519", "-N", "", "-f"])
                .arg(dir.path().join(key))
                .status()
                .unwrap()
                .success();
            assert!(ok, "ssh-keygen failed");
        }
        std::fs::copy(
            dir.path().join("user.pub"),
            dir.path().join("authorized_keys"),
        )
        .unwrap();
        let port = free_port();
        let d = dir.path().display();
        let config = format!(
            "Port {port}\nListenAddress 127.0.0.1\nHostKey {d}/host\nAuthorizedKeysFile {d}/authorized_keys\n\
             PermitRootLogin prohibit-password\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n\
             StrictModes no\nUsePAM no\nPidFile {d}/sshd.pid\n{extra}\n"
        );
        std::fs::write(dir.path().join("sshd_config"), config).unwrap();
        if is_root() {
            // Privilege separation needs its empty directory.
            std::fs::create_dir_all("/run/sshd").unwrap();
        }
        let log = dir.path().join("sshd.log");
        let config = dir.path().join("sshd_config");
        let child = start(SSHD, &["-D", "-e", "-f", config.to_str().unwrap()], &log);
        let sshd = Sshd { dir, child, port };
        wait_until("sshd", &log, || {
            std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
        });
        Ok(sshd)
    }

    /// The target to name: `ssh://user@127.0.0.1:port`.
    pub fn target(&self) -> String {
        let user = std::env::var("USER").unwrap_or_else(|_| "root".into());
        format!("ssh://{user}@127.0.0.1:{}", self.port)
    }

    /// Whether one of its sessions runs a process called `name`.
    pub fn runs(&self, name: &str) -> bool {
        descendant_named(self.child.id(), name)
    }

    /// Cuts every connection: the per-connection processes of the server are killed.
    pub fn cut_sessions(&self) -> bool {
        Command::new("pkill")
            .args(["-KILL", "-P", &self.child.id().to_string()])
            .status()
            .is_ok_and(|s| s.success())
    }

    /// Takes the whole server down: its sessions cut, then the server itself.
    pub fn stop(self) {
        self.cut_sessions();
        drop(self);
    }

    /// Lets `other`'s key in too, so one `--ssh-command` reaches both servers.
    pub fn authorize(&self, other: &Sshd) {
        let key = std::fs::read_to_string(other.dir.path().join("user.pub")).unwrap();
        let path = self.dir.path().join("authorized_keys");
        let keys = std::fs::read_to_string(&path).unwrap();
        std::fs::write(path, keys + &key).unwrap();
    }

    /// The `--ssh-command` that uses the test's key and trusts the test's host key.
    pub fn ssh_command(&self) -> String {
        format!(
            "ssh -F /dev/null -i {} -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR",
            self.dir.path().join("user").display()
        )
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A one-node Slurm cluster with two CPUs as slots, its own munge socket, state and ports.
pub struct Slurm {
    dir: TempDir,
    children: Vec<Child>,
}

impl Slurm {
    pub fn start() -> Result<Slurm, String> {
        for p in [
            "/usr/sbin/slurmctld",
            "/usr/sbin/slurmd",
            "/usr/sbin/munged",
            "/usr/bin/srun",
        ] {
            if !found(p) {
                return Err(format!("needs Slurm and munge ({p} is missing)"));
            }
        }
        if !is_root() {
            return Err("needs root to start slurmd and munged".into());
        }
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().to_path_buf();
        for sub in ["state", "spool", "munge"] {
            std::fs::create_dir_all(d.join(sub)).unwrap();
        }
        let key = d.join("munge/munge.key");
        let ok = Command::new("/usr/sbin/mungekey")
            .args(["--create", "--keyfile"])
            .arg(&key)
            .status()
            .unwrap()
            .success();
        assert!(ok, "mungekey failed");
        let socket = d.join("munge/munge.socket");
        let mut children = vec![start(
            "/usr/sbin/munged",
            &[
                "--foreground",
                "--force",
                &format!("--key-file={}", key.display()),
                &format!("--socket={}", socket.display()),
                &format!("--pid-file={}", d.join("munge/munged.pid").display()),
                &format!("--seed-file={}", d.join("munge/seed").display()),
                &format!("--log-file={}", d.join("munge/log").display()),
            ],
            &d.join("munged.out"),
        )];
        wait_until("munged", &d.join("munged.out"), || socket.exists());
        let host = node_name();
        let (ctld, slurmd) = (free_port(), free_port());
        let conf = format!(
            "ClusterName=polymorph-test\nSlurmctldHost={host}\nSlurmUser=root\nSlurmdUser=root\n\
             AuthType=auth/munge\nAuthInfo=socket={sock}\nCredType=cred/munge\n\
             StateSaveLocation={d}/state\nSlurmdSpoolDir={d}/spool\n\
             SlurmctldPidFile={d}/slurmctld.pid\nSlurmdPidFile={d}/slurmd.pid\n\
             SlurmctldPort={ctld}\nSlurmdPort={slurmd}\nProctrackType=proctrack/linuxproc\n\
             TaskPlugin=task/none\nSelectType=select/cons_tres\nSelectTypeParameters=CR_CPU\n\
             JobAcctGatherType=jobacct_gather/none\nMpiDefault=none\nReturnToService=2\n\
             NodeName={host} CPUs=2 State=UNKNOWN\n\
             PartitionName=test Nodes={host} Default=YES MaxTime=INFINITE State=UP\n",
            sock = socket.display(),
            d = d.display(),
        );
        let conf_path = d.join("slurm.conf");
        std::fs::write(&conf_path, conf).unwrap();
        let conf_arg = conf_path.to_str().unwrap().to_string();
        children.push(start(
            "/usr/sbin/slurmctld",
            &["-D", "-i", "-f", &conf_arg],
            &d.join("slurmctld.log"),
        ));
        children.push(start(
            "/usr/sbin/slurmd",
            &["-D", "-f", &conf_arg],
            &d.join("slurmd.log"),
        ));
        let slurm = Slurm { dir, children };
        wait_until("slurm", &d.join("slurmd.log"), || {
            slurm
                .command("sinfo")
                .args(["-h", "-o", "%t"])
                .output()
                .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "idle")
        });
        Ok(slurm)
    }

    pub fn conf(&self) -> PathBuf {
        self.dir.path().join("slurm.conf")
    }

    /// A Slurm client command (squeue, scancel, ...) talking to this cluster.
    pub fn command(&self, program: &str) -> Command {
        let mut c = Command::new(program);
        c.env("SLURM_CONF", self.conf());
        c
    }

    /// Whether job `id` runs a process called `name` (below its slurmstepd).
    pub fn job_runs(&self, id: &str, name: &str) -> bool {
        pids_with(&format!("[{id}."))
            .into_iter()
            .any(|p| descendant_named(p, name))
    }

    /// Names of this cluster's running jobs.
    pub fn running(&self) -> Vec<(String, String)> {
        let out = self
            .command("squeue")
            .args(["-h", "-t", "R", "-o", "%i %j"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| l.split_once(' '))
            .map(|(id, name)| (id.to_string(), name.to_string()))
            .collect()
    }
}

fn node_name() -> String {
    let out = Command::new("hostname").arg("-s").output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

impl Drop for Slurm {
    fn drop(&mut self) {
        // slurmd first (its job steps end with it), then the controller, then munged.
        for c in self.children.iter_mut().rev() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// (pid, parent pid, name) of every process.
fn processes() -> Vec<(u32, u32, String)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // "pid (name) state ppid ...": the name may hold spaces and parentheses.
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        let name = stat[open + 1..close].to_string();
        let ppid = stat[close + 2..]
            .split(' ')
            .nth(1)
            .and_then(|p| p.parse().ok())
            .unwrap_or(0);
        out.push((pid, ppid, name));
    }
    out
}

/// Whether a process called `name` runs below process `root`.
pub fn descendant_named(root: u32, name: &str) -> bool {
    let all = processes();
    let mut frontier = vec![root];
    while let Some(p) = frontier.pop() {
        for (pid, ppid, n) in &all {
            if *ppid == p {
                if n == name {
                    return true;
                }
                frontier.push(*pid);
            }
        }
    }
    false
}

/// Processes whose command line contains `part`.
pub fn pids_with(part: &str) -> Vec<u32> {
    processes()
        .into_iter()
        .filter(|(pid, _, _)| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(part))
        })
        .map(|(pid, _, _)| pid)
        .collect()
}
