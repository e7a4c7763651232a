//! The peers (random draws, Optuna, Kernel Tuner) run by `benches/peers/peers.py` in a virtual
//! environment the bench installs itself from the pinned `benches/peers/requirements.txt`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Every peer the script knows, in the order the tables print them.
pub const ALL: [&str; 5] = [
    "draws",
    "optuna-tpe",
    "kt-bayes_opt",
    "kt-genetic_algorithm",
    "kt-pso",
];

/// The script's name for a peer ("draws" is its "random": one pair per configuration).
fn script_name(peer: &str) -> &str {
    if peer == "draws" { "random" } else { peer }
}

/// The environment's python, installed (or reinstalled after the requirements change) into
/// `target/peers-venv`.
pub fn python(root: &Path) -> PathBuf {
    let venv = root.join("target/peers-venv");
    let requirements = root.join("benches/peers/requirements.txt");
    let wanted = std::fs::read_to_string(&requirements).expect("benches/peers/requirements.txt");
    let stamp = venv.join("installed-requirements.txt");
    let python = venv.join("bin/python");
    if std::fs::read_to_string(&stamp).ok().as_deref() == Some(wanted.as_str()) {
        return python;
    }
    eprintln!(
        "installing the peers (Optuna, Kernel Tuner) into {}",
        venv.display()
    );
    let _ = std::fs::remove_dir_all(&venv);
    let ok = |c: &mut Command| c.status().is_ok_and(|s| s.success());
    assert!(
        ok(Command::new("python3").arg("-m").arg("venv").arg(&venv)),
        "python3 -m venv failed: the peers need Python 3.11 or later with venv"
    );
    assert!(
        ok(Command::new(&python)
            .args(["-m", "pip", "install", "--quiet", "--no-deps", "-r"])
            .arg(&requirements)),
        "installing {} failed",
        requirements.display()
    );
    std::fs::write(&stamp, wanted).expect("write the stamp");
    python
}

/// Each peer's quality per seed at each budget of bench processes.
pub type Qualities = BTreeMap<String, BTreeMap<usize, Vec<f64>>>;

/// Runs `peers` on one cache, `seeds` seeds each.
pub fn run(
    python: &Path,
    root: &Path,
    cache: &Path,
    task: &Path,
    seeds: u64,
    budgets: &[usize],
    peers: &[&str],
) -> Qualities {
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
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let v: serde_json::Value = serde_json::from_str(line).expect("a JSON line from peers.py");
        let peer = v["peer"].as_str().expect("peer");
        let peer = if peer == "random" { "draws" } else { peer };
        all.entry(peer.to_string())
            .or_default()
            .entry(v["budget"].as_u64().expect("budget") as usize)
            .or_default()
            .push(v["quality"].as_f64().expect("quality"));
    }
    all
}
