//! Process execution with real processes: timeouts kill the whole group, nothing outlives a
//! command, the environment is only what the caller passes, stdin is empty, output is capped,
//! and under bwrap the root is read-only and the network is gone.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use sandbox::{CancelFlag, CommandSpec, ExitKind, Isolation, Runner, SandboxError, TreeAccess};
use std::io::Write as _;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

fn path_var() -> String {
    std::env::var("PATH").unwrap()
}

fn spec<'a>(script: &'a str, dir: &'a Path, timeout_ms: u64) -> CommandSpec<'a> {
    CommandSpec {
        script,
        cwd: dir,
        tree: TreeAccess::Writable,
        devices: Vec::new(),
        dirs: Vec::new(),
        env: vec![("PATH".into(), path_var())],
        timeout: Duration::from_millis(timeout_ms),
        output_cap: 4096,
        max_file_bytes: 1 << 20,
        max_memory_bytes: 1 << 30,
        max_processes: 256,
        tmp_bytes: 64 << 20,
    }
}

/// Says on the real stderr (which the test harness does not capture, so CI's log shows it)
/// that a guarantee was not tested here.
fn skipped(why: &str) {
    let _ = writeln!(std::io::stderr(), "skipped: {why}");
}

/// The bwrap runner, or `None` after saying why it is skipped.
fn bwrap_runner(test: &str) -> Option<Runner> {
    match Isolation::detect(&path_var()) {
        iso @ Isolation::Bwrap { .. } => Some(Runner::new(iso)),
        Isolation::Plain(why) => {
            skipped(&format!("{test}: bwrap not usable here ({why})"));
            None
        }
    }
}

fn runners() -> Vec<Runner> {
    let mut r = vec![Runner::new(Isolation::Plain("test".into()))];
    r.extend(bwrap_runner("the bwrap half of an isolation test"));
    r
}

fn no_cancel() -> CancelFlag {
    Arc::new(AtomicBool::new(false))
}

/// Running and not a zombie (a killed orphan stays a zombie until its new parent reaps it).
fn alive(pid: &str) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{}/stat", pid.trim())).unwrap_or_default();
    let state = stat
        .rsplit_once(") ")
        .and_then(|(_, rest)| rest.chars().next());
    matches!(state, Some(s) if s != 'Z' && s != 'X')
}

#[test]
fn timeout_kills_the_whole_group() {
    for runner in runners() {
        let dir = tempfile::tempdir().unwrap();
        // Under bwrap the pid namespace hides host pids, so the grandchild reports via a file
        // only in plain mode; in both modes the command must end at the timeout.
        let script = "sleep 30 & echo $! > bg.pid; sleep 30";
        let started = std::time::Instant::now();
        let out = runner
            .run(&spec(script, dir.path(), 300), &no_cancel())
            .unwrap();
        assert_eq!(out.exit, ExitKind::TimedOut, "{:?}", runner.isolation());
        assert!(started.elapsed() < Duration::from_secs(5));
        if matches!(runner.isolation(), Isolation::Plain(_)) {
            let pid = std::fs::read_to_string(dir.path().join("bg.pid")).unwrap();
            std::thread::sleep(Duration::from_millis(100));
            assert!(!alive(&pid), "background child {pid} outlived the timeout");
        }
    }
}

#[test]
fn background_jobs_die_when_the_command_exits() {
    let runner = Runner::new(Isolation::Plain("test".into()));
    let dir = tempfile::tempdir().unwrap();
    let out = runner
        .run(
            &spec("sleep 30 & echo $! > bg.pid; exit 0", dir.path(), 5000),
            &no_cancel(),
        )
        .unwrap();
    assert!(out.success());
    std::thread::sleep(Duration::from_millis(100));
    let pid = std::fs::read_to_string(dir.path().join("bg.pid")).unwrap();
    assert!(!alive(&pid), "background job {pid} outlived its command");
}

#[test]
fn environment_is_only_what_is_passed_and_stdin_is_empty() {
    // Whatever this test process's environment holds (CI's, a developer's API keys), the command
    // sees only PATH and what the shell sets itself.
    for runner in runners() {
        let dir = tempfile::tempdir().unwrap();
        let out = runner
            .run(&spec("env; cat; echo done", dir.path(), 5000), &no_cancel())
            .unwrap();
        assert!(out.success());
        let names: Vec<&str> = out
            .stdout
            .lines()
            .filter_map(|l| l.split_once('=').map(|(k, _)| k))
            .collect();
        assert!(
            names.iter().all(|n| [
                "PATH",
                "PWD",
                "SHLVL",
                "_",
                "OLDPWD",
                "POLYMORPH_SANDBOX_TOKEN"
            ]
            .contains(n)),
            "{names:?}"
        );
        assert!(out.stdout.ends_with("done\n"));
        // Every command is marked with this process as its owner, bwrap's too: that is how
        // what a killed polymorph left behind is found (reap.rs).
        let token = out
            .stdout
            .lines()
            .find_map(|l| l.strip_prefix("POLYMORPH_SANDBOX_TOKEN="))
            .unwrap_or_else(|| panic!("no mark: {}", out.stdout));
        let owner = token.rsplit_once('-').unwrap().0;
        assert_eq!(
            owner.split('.').nth(1),
            Some(std::process::id().to_string().as_str()),
            "{token}"
        );
    }
}

#[test]
fn a_child_that_calls_setsid_does_not_outlive_its_command() {
    let runner = Runner::new(Isolation::Plain("test".into()));
    let dir = tempfile::tempdir().unwrap();
    let script = "setsid sh -c 'echo $$ > escaped.pid; exec sleep 30' < /dev/null > /dev/null 2>&1 & sleep 0.3; exit 0";
    let out = runner
        .run(&spec(script, dir.path(), 5000), &no_cancel())
        .unwrap();
    assert!(out.success());
    std::thread::sleep(Duration::from_millis(100));
    let pid = std::fs::read_to_string(dir.path().join("escaped.pid")).unwrap();
    assert!(!alive(&pid), "setsid child {pid} outlived its command");
}

#[test]
fn output_is_capped_to_its_tail() {
    let runner = Runner::new(Isolation::Plain("test".into()));
    let dir = tempfile::tempdir().unwrap();
    let out = runner
        .run(&spec("seq 1 100000", dir.path(), 5000), &no_cancel())
        .unwrap();
    assert!(out.truncated);
    assert!(out.stdout.len() <= 4096);
    assert!(out.stdout.ends_with("100000\n"));
}

#[test]
fn cancel_stops_a_running_command() {
    let runner = Runner::new(Isolation::Plain("test".into()));
    let dir = tempfile::tempdir().unwrap();
    let flag = no_cancel();
    let f2 = Arc::clone(&flag);
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(200));
        f2.store(true, Ordering::SeqCst);
    });
    let out = runner
        .run(&spec("sleep 30", dir.path(), 60_000), &flag)
        .unwrap();
    assert_eq!(out.exit, ExitKind::Cancelled);
}

#[test]
fn file_size_limit_stops_a_runaway_writer() {
    let runner = Runner::new(Isolation::Plain("test".into()));
    let dir = tempfile::tempdir().unwrap();
    let out = runner
        .run(
            &spec("head -c 5000000 /dev/zero > big; echo $?", dir.path(), 5000),
            &no_cancel(),
        )
        .unwrap();
    assert!(std::fs::metadata(dir.path().join("big")).unwrap().len() <= 1 << 20);
    assert_ne!(out.stdout.trim(), "0");
}

#[test]
fn bwrap_makes_the_root_read_only_and_cuts_the_network() {
    let Some(runner) = bwrap_runner("read-only root and no network") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir_in(std::env::current_dir().unwrap()).unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let script = format!(
        "touch {}/escaped 2>/dev/null && echo wrote-outside; touch inside && echo wrote-inside; \
         bash -c 'echo hi > /dev/tcp/127.0.0.1/{port}' 2>/dev/null && echo connected; true",
        outside.path().display()
    );
    let out = runner
        .run(&spec(&script, dir.path(), 10_000), &no_cancel())
        .unwrap();
    assert!(out.success(), "{out:?}");
    assert!(!out.stdout.contains("wrote-outside"), "{}", out.stdout);
    assert!(out.stdout.contains("wrote-inside"), "{}", out.stdout);
    assert!(!out.stdout.contains("connected"), "{}", out.stdout);
    assert!(!outside.path().join("escaped").exists());
}

/// As root (here, in CI, in most GPU containers) a command must hold no capability: each of
/// these would otherwise let it write the host file system or leave its namespaces.
#[test]
fn root_inside_bwrap_can_neither_remount_nor_unshare_nor_write_sysctls() {
    let Some(runner) = bwrap_runner("root attacks on the sandbox") else {
        return;
    };
    // SAFETY: geteuid(2) reads the process's effective uid; no memory is touched.
    if unsafe { libc::geteuid() } != 0 {
        skipped("root attacks on the sandbox: not running as root, so they prove less here");
    }
    let userns = matches!(runner.isolation(), Isolation::Bwrap { userns: true, .. });
    let dir = tempfile::tempdir().unwrap();
    // Outside /tmp, so a write there would land on the host's root file system.
    let outside = tempfile::tempdir_in("/var/tmp").unwrap();
    let host_tmp = tempfile::tempdir().unwrap();
    let out = outside.path().display();
    let mut attacks = vec![
        ("remount / read-write", format!("mount -o remount,rw,bind / && echo x > {out}/remount")),
        ("remount the tree's parent", format!("mount -o remount,rw / 2>/dev/null; echo x > {out}/rw")),
        ("unmount the private /tmp", format!("umount /tmp && echo x > {}/umount", host_tmp.path().display())),
        ("new mount namespace", "unshare -m true".to_string()),
        ("bind mount", format!("mount --bind /tmp {out}")),
        (
            "write a sysctl",
            "v=$(cat /proc/sys/kernel/printk_ratelimit) && echo \"$v\" > /proc/sys/kernel/printk_ratelimit".to_string(),
        ),
        ("write outside the tree", format!("echo x > {out}/direct")),
    ];
    if userns {
        attacks.push(("new user namespace", "unshare -U true".to_string()));
        attacks.push((
            "map root in a new user namespace",
            "unshare -r -m true".to_string(),
        ));
    } else {
        skipped("`unshare -U` refusal: this machine gives bwrap no user namespace");
    }
    for (what, script) in &attacks {
        let result = runner
            .run(&spec(script, dir.path(), 10_000), &no_cancel())
            .unwrap();
        assert!(
            !result.success(),
            "{what} succeeded inside the sandbox: {result:?}"
        );
    }
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
    assert_eq!(std::fs::read_dir(host_tmp.path()).unwrap().count(), 0);
}

#[test]
fn a_read_only_tree_cannot_be_written_but_tmp_can() {
    let Some(runner) = bwrap_runner("read-only tree") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("check"), "built").unwrap();
    let mut s = spec(
        "echo impostor > check; echo new > new; echo scratch > /tmp/s && cat /tmp/s",
        dir.path(),
        10_000,
    );
    s.tree = TreeAccess::ReadOnly;
    let result = runner.run(&s, &no_cancel()).unwrap();
    assert!(result.stdout.contains("scratch"), "{result:?}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("check")).unwrap(),
        "built"
    );
    assert!(!dir.path().join("new").exists());
}

/// A task that needs a GPU sees its device nodes and no other of the host's /dev.
#[test]
fn named_devices_are_bound_into_the_private_dev() {
    let Some(runner) = bwrap_runner("device nodes in the sandbox") else {
        return;
    };
    // A character device every Linux host has and bwrap's minimal /dev lacks.
    let node = std::path::PathBuf::from("/dev/kmsg");
    if !node.exists() {
        skipped("device nodes in the sandbox: this host has no /dev/kmsg to bind");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let script = "test -c /dev/kmsg && echo bound; test -e /dev/loop-control && echo leaked; true";
    let plain = runner
        .run(&spec(script, dir.path(), 10_000), &no_cancel())
        .unwrap();
    assert!(!plain.stdout.contains("bound"), "{plain:?}");
    let mut s = spec(script, dir.path(), 10_000);
    s.devices = vec![node];
    let out = runner.run(&s, &no_cancel()).unwrap();
    assert!(out.stdout.contains("bound"), "{out:?}");
    assert!(!out.stdout.contains("leaked"), "{out:?}");
}

/// polymorph's records are hidden as they are when each command starts: SQLite removes its
/// `-wal` file when its last connection closes, and a command that starts after that must still
/// start (a bind over the vanished file failed every bench for the rest of a run), and one it
/// makes again must still be hidden.
#[test]
fn records_are_hidden_as_they_are_when_each_command_starts() {
    let Some(runner) = bwrap_runner("records hidden per command") else {
        return;
    };
    // On the real filesystem, under the read-only root (a record under /tmp would sit on the
    // sandbox's own tmpfs, where a bind can make what is missing).
    let records = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let db = records.path().join("runs.db");
    let wal = records.path().join("runs.db-wal");
    std::fs::write(&db, "records").unwrap();
    std::fs::write(&wal, "recent records").unwrap();
    let runner = runner.hiding_record(db.clone());
    let dir = tempfile::tempdir().unwrap();
    let script = format!(
        "cat {0} {0}-wal {0}-shm 2>/dev/null; echo started",
        db.display()
    );
    let out = runner
        .run(&spec(&script, dir.path(), 10_000), &no_cancel())
        .unwrap();
    assert_eq!(out.stdout.trim(), "started", "{out:?}");
    std::fs::remove_file(&wal).unwrap();
    std::fs::write(records.path().join("runs.db-shm"), "shared records").unwrap();
    let out = runner
        .run(&spec(&script, dir.path(), 10_000), &no_cancel())
        .unwrap();
    assert_eq!(out.stdout.trim(), "started", "{out:?}");
}

/// A command bwrap could not start (here a device to bind that is not there) is the sandbox's
/// failure, not the command's: an error, never an outcome a candidate would be charged with.
/// A command that ran and failed, or died of a signal, is an outcome as before.
#[test]
fn a_command_the_sandbox_could_not_start_is_an_error_not_an_outcome() {
    let Some(runner) = bwrap_runner("a command bwrap could not start") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut s = spec("echo ran", dir.path(), 10_000);
    s.devices = vec![dir.path().join("no-such-device")];
    match runner.run(&s, &no_cancel()) {
        Err(e @ SandboxError::NotStarted(_)) => {
            assert!(e.to_string().contains("no-such-device"), "{e}")
        }
        other => panic!("{other:?}"),
    }
    for (script, exit) in [
        ("exit 1", ExitKind::Code(1)),
        ("kill -SEGV $$", ExitKind::Code(139)),
    ] {
        let out = runner
            .run(&spec(script, dir.path(), 10_000), &no_cancel())
            .unwrap();
        assert_eq!(out.exit, exit, "{script}: {out:?}");
    }
}
