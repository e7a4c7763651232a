//! The peers (random draws, Optuna, Kernel Tuner) run by `benches/peers/peers.py` in a virtual
//! environment the bench installs itself from the pinned `benches/peers/requirements.txt`
//! (and, for Optuna's GP, `requirements-gp.txt` into an environment of its own).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The peers run by default, in the order the tables print them.
pub const ALL: [&str; 5] = [
    "draws",
    "optuna-tpe",
    "kt-bayes_opt",
    "kt-genetic_algorithm",
    "kt-pso",
];

/// Optuna's Gaussian process with expected improvement: run only when named, since it needs
/// PyTorch (5.4 GB with CUDA's libraries on Linux) and its cost per trial grows with the trials.
pub const GP: &str = "optuna-gp";

/// The most bench processes the GP peer is scored at: it refits its kernel on every trial, and
/// a seed on softmax-c took 15 s to 300 processes and 3 minutes to 1,000 on a 2-core VM.
pub const GP_MAX_BUDGET: usize = 300;

/// polymorph's `tpe` proposal rule without its races or judge (one pair per assignment, its best
/// mean shipped): run only when named, to tell what `tpe` proposes from what judging it costs.
pub const TPE_RULE: &str = "tpe-rule";

/// Whether the script knows `name`.
pub fn known(name: &str) -> bool {
    ALL.contains(&name) || name == GP || name == TPE_RULE
}

/// The script's name for a peer ("draws" is its "random": one pair per configuration).
fn script_name(peer: &str) -> &str {
    if peer == "draws" { "random" } else { peer }
}

/// The python of the peers' environment for `peer` (the GP's, or the others'), installed (or
/// reinstalled after its requirements change) under `target/`.
pub fn python(root: &Path, peer: &str) -> PathBuf {
    let (venv, files) = if peer == GP {
        (
            "target/peers-gp-venv",
            &["requirements.txt", "requirements-gp.txt"][..],
        )
    } else {
        ("target/peers-venv", &["requirements.txt"][..])
    };
    let venv = root.join(venv);
    let files: Vec<PathBuf> = files
        .iter()
        .map(|f| root.join("benches/peers").join(f))
        .collect();
    let wanted: String = files
        .iter()
        .map(|f| std::fs::read_to_string(f).unwrap_or_else(|e| panic!("{}: {e}", f.display())))
        .collect();
    let stamp = venv.join("installed-requirements.txt");
    let python = venv.join("bin/python");
    if std::fs::read_to_string(&stamp).ok().as_deref() == Some(wanted.as_str()) {
        return python;
    }
    eprintln!("installing the peers' packages into {}", venv.display());
    let _ = std::fs::remove_dir_all(&venv);
    let ok = |c: &mut Command| c.status().is_ok_and(|s| s.success());
    assert!(
        ok(Command::new("python3").arg("-m").arg("venv").arg(&venv)),
        "python3 -m venv failed: the peers need Python 3.11 or later with venv"
    );
    for f in &files {
        assert!(
            ok(Command::new(&python)
                .args(["-m", "pip", "install", "--quiet", "--no-deps", "-r"])
                .arg(f)),
            "installing {} failed",
            f.display()
        );
    }
    std::fs::write(&stamp, wanted).expect("write the stamp");
    python
}

/// Each peer's quality per seed at each budget of bench processes.
pub type Qualities = BTreeMap<String, BTreeMap<usize, Vec<f64>>>;

/// Each peer's shipped configuration per seed, at each budget (ascending): its parameters as a
/// JSON object, or null before it drew anything.
pub type Picks = BTreeMap<String, BTreeMap<u64, Vec<(usize, serde_json::Value)>>>;

/// Runs `peers` on one cache, `seeds` seeds each.
pub fn run(
    python: &Path,
    root: &Path,
    cache: &Path,
    task: &Path,
    seeds: u64,
    budgets: &[usize],
    peers: &[&str],
) -> (Qualities, Picks) {
    let names: Vec<&str> = peers.iter().map(|p| script_name(p)).collect();
    let budgets: Vec<String> = budgets.iter().map(ToString::to_string).collect();
    let out = Command::new(python)
        .arg(root.join("benches/peers/peers.py"))
        .arg("--cache")
        .arg(cache)
        .arg("--task")
        .arg(task)
        .args(["--seeds", &seeds.to_string()])
        .args(["--budgets", &budgets.join(",")])
        .args(["--peers", &names.join(",")])
        .output()
        .expect("run peers.py");
    assert!(
        out.status.success(),
        "peers.py failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut all = Qualities::new();
    let mut picks = Picks::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let v: serde_json::Value = serde_json::from_str(line).expect("a JSON line from peers.py");
        let peer = v["peer"].as_str().expect("peer");
        let peer = if peer == "random" { "draws" } else { peer };
        let budget = v["budget"].as_u64().expect("budget") as usize;
        all.entry(peer.to_string())
            .or_default()
            .entry(budget)
            .or_default()
            .push(v["quality"].as_f64().expect("quality"));
        picks
            .entry(peer.to_string())
            .or_default()
            .entry(v["seed"].as_u64().expect("seed"))
            .or_default()
            .push((budget, v["pick"].clone()));
    }
    for seeds in picks.values_mut() {
        for at in seeds.values_mut() {
            at.sort_by_key(|(b, _)| *b);
        }
    }
    (all, picks)
}
