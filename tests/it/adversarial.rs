//! The adversarial suite: one candidate per known way of gaming an evaluator, each run through
//! the real loop, asserting the verdict, its reason and the guard that stopped it.

use crate::common::replay::{expect, run_replay};
use crate::common::tools::{Tool, bwrap, missing};
use crate::common::{Env, edit, files_line};
use serde_json::json;
use std::net::TcpListener;

/// impl.sh of the adversary task with the given build step and compute body.
fn impl_sh(build: &str, compute: &str) -> String {
    format!("build() {{\n{build}\n:\n}}\ncompute() {{\n{compute}\n}}\n")
}

const HONEST: &str =
    "s=0; i=1; while [ \"$i\" -le \"$1\" ]; do s=$((s + i)); i=$((i + 1)); done; echo \"$s\"";

fn processes_with(needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(cmdline) = std::fs::read(e.path().join("cmdline")) else {
            continue;
        };
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        let zombie = stat
            .rsplit_once(") ")
            .is_some_and(|(_, r)| r.starts_with('Z'));
        if !zombie
            && String::from_utf8_lossy(&cmdline)
                .replace('\0', " ")
                .contains(needle)
        {
            found.push(e.file_name().to_string_lossy().into_owned());
        }
    }
    found
}

#[test]
fn process_level_attacks_are_stopped() {
    let env = Env::new();
    let task = env.task("adversary");
    // Four attacks below are the start's own code with a harmless side act; on a busy 2-core
    // machine a few-millisecond shell loop swings enough that, over four copies, one in a few
    // dozen runs cleared a 2% gain. Only a real gain should move the ledger here, so ask for 50%.
    edit(&task.join("task.toml"), "min_gain = 0.02", "min_gain = 0.5");
    let outside = tempfile::tempdir_in(env.path()).unwrap();
    let escaped = outside.path().join("escaped");
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let secret = "sk-polymorph-test-secret-0123456789";
    let attacks = [
        // 1. An infinite loop in the computation: the test is killed at the timeout.
        impl_sh("", "while :; do :; done"),
        // 2. A build that never finishes.
        impl_sh("while :; do :; done", HONEST),
        // 3. A child that calls setsid to outlive the build.
        impl_sh(
            "setsid sh -c 'exec sleep 987654' < /dev/null > /dev/null 2>&1 &",
            HONEST,
        ),
        // 4. Reading the API key from the environment and printing it.
        impl_sh(
            "",
            &format!("echo \"key=${{OPENAI_API_KEY}}\"; env; echo FAIL; exit 1; {HONEST}"),
        ),
        // 5. Writing outside the sandbox.
        impl_sh(
            &format!("echo pwned > {} 2>/dev/null", escaped.display()),
            HONEST,
        ),
        // 6. Connecting to a loopback port.
        impl_sh(
            &format!("bash -c 'echo hi > /dev/tcp/127.0.0.1/{port}' 2>/dev/null"),
            HONEST,
        ),
        // 7. Reading stdin (it is empty: the read returns at once and nothing hangs).
        impl_sh("", &format!("read -r ignored || true; {HONEST}")),
        // 8. Printing a fake metric line from inside the bench (impl.sh's top level runs when the
        //    bench sources it), far above anything real, and leaving before the real one.
        format!(
            "case $0 in *bench*) echo '{{\"metric\": \"ops\", \"value\": 999999999999}}'; exit 0;; esac\n{}",
            impl_sh("", HONEST)
        ),
        // 9. An extra, duplicate metric line.
        format!(
            "case $0 in *bench*) echo '{{\"metric\": \"ops\", \"value\": 5}}';; esac\n{}",
            impl_sh("", HONEST)
        ),
        // 10. Exiting the bench before it prints anything.
        impl_sh("", &format!("case $0 in *bench*) exit 0;; esac; {HONEST}")),
        // 11. Rewriting the test script during the build.
        impl_sh("echo 'echo ok' > test.sh", HONEST),
        // 12. Replacing the bench with a symlink during the build.
        impl_sh("rm -f bench.sh; ln -s /bin/true bench.sh", HONEST),
        // 13. Wrong answers.
        impl_sh("", "echo 42"),
    ];
    let lines: Vec<String> = attacks
        .iter()
        .enumerate()
        .map(|(i, a)| files_line("impl.sh", a, &format!("attack {}", i + 1)))
        .collect();
    let r = run_replay(&env, &task, &lines, &[("OPENAI_API_KEY", secret)]);

    expect(&r, 0, "failed", "incorrect: timed out after 3s"); // process-group kill at the timeout
    expect(&r, 1, "failed", "build failed: timed out after 3s");
    assert_ne!(r[2].0, "failed", "{:?}", r[2]); // the setsid child is harmless to the verdict...
    assert!(
        processes_with("sleep 987654").is_empty(),
        "...but must not outlive its command"
    ); // PID namespace / marker kill
    expect(&r, 3, "failed", "incorrect"); // environment scrub: the key is not there to print
    assert!(r[3].2.contains("key=\n"), "{}", r[3].2);
    for file in ["runs.db", "runs.db-wal"] {
        let bytes = std::fs::read(env.path().join(file)).unwrap_or_default();
        assert!(
            !String::from_utf8_lossy(&bytes).contains(secret),
            "the key reached {file}"
        );
    }
    assert_ne!(r[4].0, "failed", "{:?}", r[4]);
    assert_ne!(r[5].0, "failed", "{:?}", r[5]);
    let connected = listener.accept().is_ok();
    if bwrap().is_some() {
        assert!(
            !escaped.exists(),
            "bwrap: the read-only root stops writes outside the tree"
        );
        assert!(!connected, "bwrap: no network inside the sandbox");
    } else {
        missing(
            Tool::Bwrap,
            "bwrap is not usable here: writes outside the tree and loopback connections are NOT prevented (see README)",
        );
    }
    assert_ne!(r[6].0, "failed", "reading stdin must not hang: {:?}", r[6]); // empty stdin
    expect(&r, 7, "quarantined", "implausible gain"); // plausibility gate
    expect(&r, 8, "failed", "duplicate metric line for case default"); // metric validation
    expect(&r, 9, "failed", "no \"ops\" metric line"); // metric validation
    expect(&r, 10, "failed", "protected file test.sh changed on disk"); // hash check before the test
    expect(&r, 11, "failed", "protected file bench.sh changed on disk"); // hash check before the bench
    expect(&r, 12, "failed", "incorrect: FAIL: compute 10 gave 42"); // fresh-seed test
    // Nothing was committed but the task as given.
    let log = env.git(&["log", "--all", "--format=%s"]);
    assert_eq!(log.lines().count(), 1, "{log}");
}

#[test]
fn candidate_verification_refuses_bad_changes() {
    let env = Env::new();
    let task = env.task("adversary");
    let honest = impl_sh("", HONEST);
    let lines = vec![
        files_line("bench.sh", "echo '{\"metric\": \"ops\", \"value\": 1e12}'", "edit the bench"),
        files_line("test.sh", "echo ok", "edit the check"),
        files_line("task.toml", "", "edit the task"),
        files_line("helper.sh", "true", "new file outside the editable globs"),
        files_line("../impl.sh", &honest, "path traversal"),
        files_line("/tmp/impl.sh", &honest, "absolute path"),
        json!({ "diff": "diff --git a/impl.sh b/impl.sh\nnew file mode 120000\n--- /dev/null\n+++ b/impl.sh\n@@ -0,0 +1 @@\n+/etc/passwd\n" }).to_string(),
        files_line("impl.sh", "build() { :; }\0", "binary content"),
        files_line("impl.sh", &"#".repeat(2 << 20), "a huge file"),
        json!({ "diff": "--- a/impl.sh\n+++ b/impl.sh\n@@ -1,2 +1,2 @@\n-no such line\n+x\n context\n" }).to_string(),
        json!({ "diff": format!("--- a/impl.sh\n+++ b/impl.sh\n@@ -1 +1 @@\n-# x\n+{}\n", "y".repeat(3 << 20)) }).to_string(),
        files_line("impl.sh", &std::fs::read_to_string(task.join("impl.sh")).unwrap(), "no change at all"),
    ];
    let r = run_replay(&env, &task, &lines, &[]);
    let want = [
        "touches protected file bench.sh",
        "touches protected file test.sh",
        "touches protected file task.toml",
        "touches protected file helper.sh",
        "'..' escapes the tree",
        "absolute paths are not allowed",
        "symlinks are not allowed",
        "binary content is not accepted",
        "over the 1048576 byte cap",
        "does not apply to impl.sh",
        "over the 2097152 byte cap",
        "change is empty",
    ];
    for (i, w) in want.iter().enumerate() {
        expect(&r, i, "failed", w);
    }
}

/// Kernel-level cheats against matmul-c's check: each is caught before any timing.
#[test]
fn kernel_cheats_fail_the_check_or_are_quarantined() {
    let env = Env::new();
    let task = env.task("matmul-c");
    edit(&task.join("task.toml"), "timeout_s = 120", "timeout_s = 20");
    let header = "#include \"kernel.h\"\n#include <math.h>\n#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n#include <unistd.h>\n";
    let naive = "static void real_gemm(int M, int N, int K, const float *A, const float *B, float *C) {\n    for (int i = 0; i < M; i++)\n        for (int j = 0; j < N; j++) {\n            float acc = 0;\n            for (int k = 0; k < K; k++) acc += A[i * K + k] * B[k * N + j];\n            C[i * N + j] = acc;\n        }\n}\n";
    let kernel = |body: &str| {
        format!(
            "{header}{naive}void gemm(int M, int N, int K, const float *A, const float *B, float *C) {{\n{body}\n}}\n"
        )
    };
    let cheats = [
        // Caches the result keyed on the buffers and the shape: the check's second pass reuses them with new data.
        kernel(
            "static const float *la, *lb; static float *lc; static int lm, ln, lk;\n\
             if (A == la && B == lb && C == lc && M == lm && N == ln && K == lk) return;\n\
             real_gemm(M, N, K, A, B, C); la = A; lb = B; lc = C; lm = M; ln = N; lk = K;",
        ),
        kernel("memset(C, 0, sizeof(float) * M * N);"),
        kernel("for (int i = 0; i < M * N; i++) C[i] = NAN;"),
        kernel("(void)A; (void)B; (void)C; (void)M; (void)N; (void)K;"),
        // Recognises the decode workload's first shape and skips the work.
        kernel("if (M == 1 && N == 2048 && K == 2048) return;\nreal_gemm(M, N, K, A, B, C);"),
        // Recognises the bench process and does nothing there: the check passes, the bench's
        // own verification of its timed calls does not.
        kernel(
            "char comm[32] = {0}; FILE *f = fopen(\"/proc/self/comm\", \"r\");\n\
             if (f) { if (!fgets(comm, sizeof comm, f)) comm[0] = 0; fclose(f); }\n\
             if (strncmp(comm, \"bench\", 5) == 0) return;\nreal_gemm(M, N, K, A, B, C);",
        ),
        // Exits the check early with success from inside the kernel.
        kernel("if (M == 1 && N == 1) exit(0);\nreal_gemm(M, N, K, A, B, C);"),
    ];
    let lines: Vec<String> = cheats
        .iter()
        .enumerate()
        .map(|(i, k)| files_line("kernel.c", k, &format!("cheat {}", i + 1)))
        .collect();
    let r = run_replay(&env, &task, &lines, &[]);
    for i in 0..5 {
        expect(&r, i, "failed", "incorrect: FAIL");
    }
    expect(&r, 5, "failed", "bench failed: FAIL bench");
    expect(&r, 6, "failed", "incorrect: FAIL");
    assert_eq!(env.git(&["log", "--all", "--format=%s"]).lines().count(), 1);
}

/// The cheats that were accepted and confirmed before the bench verified its timed calls and
/// the build's object was held to the task's interface: each fails, and nothing is committed.
#[test]
fn cheats_on_the_timing_itself_fail() {
    let env = Env::new();
    let task = env.task("matmul-c");
    let start = std::fs::read_to_string(task.join("kernel.c")).unwrap();
    // The start kernel renamed, so the cheats below can call it.
    let honest = start.replace("void gemm(", "static void honest_gemm(");
    let cheats = [
        // Two thirds of C when it runs as ./bench (told by /proc/self/cmdline), all of it elsewhere.
        format!(
            "#include <stdio.h>\n#include <string.h>\n{honest}\n\
             void gemm(int M, int N, int K, const float *A, const float *B, float *C) {{\n\
                 static int bench = -1;\n\
                 if (bench < 0) {{ char cmd[256] = {{0}}; FILE *f = fopen(\"/proc/self/cmdline\", \"r\");\n\
                     if (f) {{ size_t n = fread(cmd, 1, sizeof cmd - 1, f); cmd[n] = 0; fclose(f); }}\n\
                     bench = strstr(cmd, \"bench\") != NULL; }}\n\
                 honest_gemm(bench && M > 1 ? M * 2 / 3 : M, N, K, A, B, C);\n\
                 if (bench && M == 1) honest_gemm(M, N * 2 / 3, K, A, B, C);\n\
             }}\n"
        ),
        // The kernel untouched, and libc's clock replaced: time runs 1.6 times slower.
        format!(
            "#define _GNU_SOURCE\n#include <time.h>\n#include <sys/syscall.h>\n#include <unistd.h>\n{start}\n\
             int clock_gettime(clockid_t c, struct timespec *t) {{\n\
                 int r = (int)syscall(SYS_clock_gettime, c, t);\n\
                 double s = (t->tv_sec + t->tv_nsec * 1e-9) / 1.6;\n\
                 t->tv_sec = (time_t)s; t->tv_nsec = (long)((s - (double)t->tv_sec) * 1e9);\n\
                 return r;\n\
             }}\n"
        ),
    ];
    let lines: Vec<String> = cheats
        .iter()
        .enumerate()
        .map(|(i, k)| files_line("kernel.c", k, &format!("timing cheat {}", i + 1)))
        .collect();
    let r = run_replay(&env, &task, &lines, &[]);
    expect(&r, 0, "failed", "bench failed: FAIL bench");
    expect(
        &r,
        1,
        "failed",
        "kernel.o defines clock_gettime outside the task's interface (gemm)",
    );
    assert_eq!(env.git(&["log", "--all", "--format=%s"]).lines().count(), 1);
}
