//! Secrets stay home: a candidate's commands cannot read the user's home (ssh keys, cloud
//! credentials, `.pgpass`, `.netrc`), the model's API key is gone from polymorph's own
//! environment once read, and a Slurm job gets only an allowlisted environment: neither the key
//! nor a database password.

use crate::common::engines::Slurm;
use crate::common::replay::run_replay;
use crate::common::tools::{Tool, bwrap, missing};
use crate::common::{Env, files_line, repo, wait_for};
use std::process::{Command, Stdio};
use std::time::Duration;

/// The secret places of a home, each holding a marker a candidate must never print.
const SECRET_FILES: [&str; 6] = [
    ".ssh/id_ed25519",
    ".pgpass",
    ".aws/credentials",
    ".config/gcloud/credentials.db",
    ".netrc",
    ".cargo/credentials.toml",
];

#[test]
fn a_candidate_reads_nothing_of_the_user_s_home_or_other_homes() {
    if bwrap().is_none() {
        return missing(Tool::Bwrap, "hiding the home from candidates needs bwrap");
    }
    // A home outside /tmp (which the sandbox replaces anyway), as a user's is.
    let home = tempfile::tempdir_in(repo().join("target")).unwrap();
    for (i, f) in SECRET_FILES.iter().enumerate() {
        let p = home.path().join(f);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, format!("SECRET-MARKER-{i}\n")).unwrap();
    }
    let env = Env::new();
    let task = env.task("adversary");
    let reads: String = SECRET_FILES
        .iter()
        .map(|f| format!("cat {}/{f}; ", home.path().display()))
        .collect();
    let build = format!("{reads}ls -la /root /home; exit 1");
    let line = files_line(
        "impl.sh",
        &format!("build() {{\n{build}\n:\n}}\ncompute() {{\necho 0\n}}\n"),
        "reads the home",
    );
    let home_var = home.path().display().to_string();
    let r = run_replay(&env, &task, &[line], &[("HOME", home_var.as_str())]);
    let (verdict, reason, log) = &r[0];
    assert_eq!(verdict, "failed", "{reason}");
    assert!(log.contains("No such file"), "the reads ran: {log}");
    assert!(
        !log.contains("SECRET-MARKER"),
        "a secret reached the log: {log}"
    );
    // /root and /home are empty tmpfs: of /root, only the directories the commands' PATH runs
    // from (here `.cargo/bin`, `.pyenv/...`) are bound back, read-only.
    assert!(!log.contains(".bashrc") && !log.contains(".cache"), "{log}");
}

#[test]
fn the_api_key_is_gone_from_polymorph_s_environment_once_read() {
    let env = Env::new();
    let key = "sk-polymorph-secret-4c1d";
    let mut serve = Command::new(assert_cmd::cargo::cargo_bin("polymorph"))
        .current_dir(env.path())
        .env("OPENAI_API_KEY", key)
        .args(["--db", env.db().to_str().unwrap(), "serve", "--port", "0"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let environ = format!("/proc/{}/environ", serve.id());
    // Once the page serves, main has long since taken the key.
    let read = || std::fs::read(&environ).unwrap_or_default();
    assert!(wait_for(Duration::from_secs(10), || !read().is_empty()));
    std::thread::sleep(Duration::from_millis(300));
    let seen = String::from_utf8_lossy(&read()).into_owned();
    let _ = serve.kill();
    let _ = serve.wait();
    assert!(seen.contains("PATH="), "{seen}");
    assert!(!seen.contains(key), "the key is readable in {environ}");
}

#[test]
fn a_slurm_job_sees_neither_the_key_nor_the_database_password() {
    let slurm = match Slurm::start() {
        Ok(s) => s,
        Err(why) => return missing(Tool::Slurm, &format!("slurm target: {why}")),
    };
    let env = Env::new();
    let task = env.task("spin");
    // The worker as a script that records the environment the job got, then runs polymorph.
    let seen = env.path().join("job-env");
    let worker = env.write(
        "worker.sh",
        &format!(
            "#!/bin/sh\nenv >> {}\nexec {} \"$@\"\n",
            seen.display(),
            assert_cmd::cargo::cargo_bin("polymorph").display()
        ),
    );
    std::fs::set_permissions(&worker, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let out = env
        .cmd()
        .env("SLURM_CONF", slurm.conf())
        .env("OPENAI_API_KEY", "sk-job-secret-91f2")
        .env(
            "POLYMORPH_DB",
            "postgres://perf:db-password-77aa@db.lab/polymorph",
        )
        .args([
            "run",
            task.to_str().unwrap(),
            "--budget",
            "1",
            "--json",
            "--proposer",
            "search",
        ])
        .args(["--target", "slurm", "--worker", worker.to_str().unwrap()])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let jobs = std::fs::read_to_string(&seen).unwrap();
    assert!(jobs.contains("PATH="), "{jobs}");
    assert!(jobs.contains("SLURM_JOB_ID="), "not a Slurm job: {jobs}");
    for secret in [
        "sk-job-secret-91f2",
        "db-password-77aa",
        "OPENAI_API_KEY",
        "POLYMORPH_DB",
    ] {
        assert!(!jobs.contains(secret), "a job saw {secret}: {jobs}");
    }
}

#[test]
fn the_review_page_stays_on_loopback_unless_told_to_expose_it() {
    let env = Env::new();
    env.cmd()
        .args(["serve", "--host", "0.0.0.0", "--port", "0"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("is not a loopback address"))
        .stderr(predicates::str::contains("--expose"));
}
