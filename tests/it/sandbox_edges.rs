//! Trust, round four: the sandbox's edges. A candidate reaches no Unix socket on the host's
//! filesystem, sees an empty `/run` and neither runs.db nor the ledger, and runs under limits of
//! memory, processes and `/tmp` that fail it with a reason naming them, while the machine and
//! polymorph stay up. A command bwrap could not start once is tried again.

use crate::common::replay::{expect, run_replay};
use crate::common::tools::{Tool, bwrap, missing};
use crate::common::{Env, edit, files_line};
use std::os::unix::net::UnixListener;

const HONEST: &str =
    "s=0; i=1; while [ \"$i\" -le \"$1\" ]; do s=$((s + i)); i=$((i + 1)); done; echo \"$s\"";

/// impl.sh whose build step is `build`, computing honestly.
fn impl_sh(build: &str) -> String {
    format!("build() {{\n{build}\n:\n}}\ncompute() {{\n{HONEST}\n}}\n")
}

#[test]
fn the_sandbox_reaches_no_socket_no_record_and_holds_its_limits() {
    let env = Env::new();
    let task = env.task("adversary");
    edit(&task.join("task.toml"), "min_gain = 0.02", "min_gain = 0.5");
    edit(
        &task.join("task.toml"),
        "timeout_s = 3",
        "timeout_s = 30\nmemory_mb = 256\ntmp_mb = 8\nprocesses = 64",
    );
    // A socket outside the sandbox's private /tmp, reachable through a read-only root.
    let socket = std::path::PathBuf::from(format!(
        "/var/tmp/polymorph-edges-{}.sock",
        std::process::id()
    ));
    let _ = std::fs::remove_file(&socket);
    let listener = UnixListener::bind(&socket).unwrap();
    listener.set_nonblocking(true).unwrap();
    let (db, ledger) = (env.db(), env.ledger());
    let attacks = [
        // 1. Connecting to a Unix socket on the host's filesystem.
        impl_sh(&format!(
            "python3 -c 'import socket; s = socket.socket(socket.AF_UNIX); s.connect(\"{}\"); s.send(b\"hi\")' 2>/dev/null && {{ echo 'FAIL: reached the socket'; exit 1; }}",
            socket.display()
        )),
        // 2. Looking for sockets and secrets under /run.
        impl_sh(
            "if [ -n \"$(ls -A /run 2>/dev/null)\" ]; then echo \"FAIL: /run holds $(ls -A /run | head -3 | tr '\\n' ' ')\"; exit 1; fi",
        ),
        // 3. Reading polymorph's own records.
        impl_sh(&format!(
            "if [ -s '{}' ] || [ -n \"$(ls -A '{}' 2>/dev/null)\" ]; then echo 'FAIL: read the records'; exit 1; fi",
            db.display(),
            ledger.display()
        )),
        // 4. Filling /tmp past its 8 MiB.
        impl_sh("head -c 16777216 /dev/zero > /tmp/fill || exit 1"),
        // 5. Taking 1 GiB of memory past its 256 MiB.
        impl_sh("python3 -c 'b = bytearray(1 << 30); print(len(b))' || exit 1"),
        // 6. Starting 200 processes past its 64.
        impl_sh("i=0; while [ $i -lt 200 ]; do sleep 30 & i=$((i + 1)); done"),
    ];
    let lines: Vec<String> = attacks
        .iter()
        .enumerate()
        .map(|(i, a)| files_line("impl.sh", a, &format!("edge {}", i + 1)))
        .collect();
    let r = run_replay(&env, &task, &lines, &[]);
    let connected = listener.accept().is_ok();
    let _ = std::fs::remove_file(&socket);
    // Limits hold with or without bwrap, where a cgroup can be made.
    expect(&r, 4, "failed", "memory_mb = 256");
    let cgroups = sandbox::Runner::new(sandbox::Isolation::Plain("probe".into()))
        .describe_limits()
        .contains("cgroup");
    if cgroups {
        expect(&r, 5, "failed", "processes = 64");
    } else {
        missing(
            Tool::Cgroup,
            "no cgroup can be made here: the process limit is NOT enforced",
        );
    }
    if bwrap().is_some() {
        assert!(!connected, "bwrap: no Unix socket outside the sandbox");
        for (i, (verdict, reason, _)) in r.iter().enumerate().take(3) {
            assert_ne!(verdict, "failed", "edge {}: {reason}", i + 1);
        }
        expect(&r, 3, "failed", "tmp_mb = 8");
    } else {
        missing(
            Tool::Bwrap,
            "bwrap is not usable here: Unix sockets, /run, runs.db and /tmp are NOT confined",
        );
    }
    let log = env.git(&["log", "--all", "--format=%s"]);
    assert_eq!(log.lines().count(), 1, "{log}");
}

#[test]
fn a_command_the_sandbox_could_not_start_once_is_tried_again_and_the_run_goes_on() {
    let Some(real) = bwrap() else {
        return missing(Tool::Bwrap, "the sandbox's second try is NOT tested");
    };
    let env = Env::new();
    let task = env.task("spin");
    // A bwrap that gives up before starting the first command polymorph runs in it (no status
    // reported, as when a file it was to bind vanished), then is the real one; detection's
    // probes (status on fd 2) pass through.
    let mark = env.path().join("failed-once");
    let dir = env.path().join("flaky-bwrap");
    std::fs::create_dir(&dir).unwrap();
    let script = format!(
        "#!/bin/sh\ncase \" $* \" in *' --json-status-fd 2 '*) exec {real:?} \"$@\";; esac\n\
         if [ ! -e {mark:?} ]; then : > {mark:?}; echo 'bwrap: Can'\"'\"'t bind mount: No such file or directory' >&2; exit 1; fi\n\
         exec {real:?} \"$@\"\n",
        real = real.display().to_string(),
        mark = mark.display().to_string(),
    );
    let wrapper = dir.join("bwrap");
    std::fs::write(&wrapper, script).unwrap();
    std::fs::set_permissions(
        &wrapper,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let path = format!(
        "{}:{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = env
        .cmd()
        .env("PATH", path)
        .args(["run", task.to_str().unwrap(), "--budget", "1", "--json"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(mark.exists(), "the wrapper never failed a command: {err}");
    assert!(err.contains("trying again"), "{err}");
    let verdicts = env.json(&["query", "SELECT verdict FROM evaluations"]);
    assert_eq!(verdicts.as_array().unwrap().len(), 1, "{verdicts}");
}
