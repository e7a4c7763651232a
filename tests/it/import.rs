//! `polymorph import`: a Kernel Tuner cache file (JSON or gzip-compressed) and its T1
//! description become a task and a cache that `run --simulate` replays through the real loop
//! and judge; configurations that failed when Kernel Tuner ran them fail here, and files that
//! cannot be replayed faithfully are refused, saying why.

use crate::common::Env;
use predicates::str::contains;
use serde_json::{Value, json};
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// Milliseconds per launch of each configuration (bx, t), `None` for one that failed to run.
/// The best is 13x the start, as recorded configurations can be (over the 10x a measured
/// candidate may gain before it is quarantined as implausible).
fn time_of(bx: u64, t: u64) -> Option<f64> {
    match (bx, t) {
        (16, 1) => Some(2.0),
        (16, 2) => Some(1.8),
        (32, 1) => Some(1.5),
        (32, 2) => Some(0.15),
        _ => None,
    }
}

/// A Kernel Tuner cache of a small space: bx in 16, 32, 64 and t in 1, 2, where bx * t <= 64
/// (the T1 condition), so (64, 2) was never run and (64, 1) failed at run time.
fn kt_cache(objective: &str) -> Value {
    kt_cache_of("Test GPU", objective, 1.0)
}

/// `kt_cache` as recorded on `device`, every time scaled by `scale`.
fn kt_cache_of(device: &str, objective: &str, scale: f64) -> Value {
    let mut cache = serde_json::Map::new();
    for (bx, t) in [(16, 1), (16, 2), (32, 1), (32, 2), (64, 1)] {
        let mut e = json!({ "bx": bx, "t": t });
        match time_of(bx, t) {
            // Ten repeats, +-1% around the time, as Kernel Tuner records them.
            Some(ms) => {
                let ms = ms * scale;
                let times: Vec<f64> = (0..10).map(|i| ms * (0.99 + 0.002 * i as f64)).collect();
                e["time"] = json!(ms);
                e["times"] = json!(times);
            }
            None => e["time"] = json!("RuntimeFailedConfig"),
        }
        cache.insert(format!("{bx},{t}"), e);
    }
    json!({
        "device_name": device,
        "kernel_name": "tiny_kernel",
        "tune_params_keys": ["bx", "t"],
        "tune_params": { "bx": [16, 32, 64], "t": [1, 2] },
        "objective": objective,
        "cache": cache,
    })
}

fn t1(condition: &str) -> Value {
    json!({
        "ConfigurationSpace": {
            "TuningParameters": [
                { "Name": "bx", "Type": "int", "Values": "[16, 32, 64]", "Default": 16 },
                { "Name": "t", "Type": "int", "Values": "[1, 2]", "Default": 1 },
            ],
            "Conditions": [ { "Expression": condition, "Parameters": ["bx", "t"] } ],
        }
    })
}

fn gzip(path: &Path, text: &str) {
    let f = std::fs::File::create(path).unwrap();
    let mut z = flate2::write::GzEncoder::new(f, flate2::Compression::default());
    z.write_all(text.as_bytes()).unwrap();
    z.finish().unwrap();
}

/// `polymorph import CACHE --t1 T1 --out OUT`, which must succeed; its stdout.
fn import(env: &Env, cache: &Path, t1: &Path, out: &Path) -> String {
    let done = env
        .cmd()
        .arg("import")
        .arg(cache)
        .arg("--t1")
        .arg(t1)
        .arg("--out")
        .arg(out)
        .assert()
        .success();
    String::from_utf8(done.get_output().stdout.clone()).unwrap()
}

#[test]
fn a_kernel_tuner_cache_is_imported_and_replayed_through_the_loop_and_judge() {
    let env = Env::new();
    let t1 = env.write("t1.json", &t1("bx * t <= 64").to_string());
    let gz = env.path().join("tiny.json.gz");
    gzip(&gz, &kt_cache("time").to_string());
    let task = env.path().join("tiny");
    let said = import(&env, &gz, &t1, &task);
    assert!(
        said.contains("task tiny-kernel with 5 configurations (1 failed when Kernel Tuner ran them), 1 constraints")
            && said.contains(r#"starting from the T1 defaults {"bx":16,"t":1}"#),
        "{said}"
    );
    let toml = std::fs::read_to_string(task.join("task.toml")).unwrap();
    assert!(toml.contains("bx * t <= 64"), "{toml}");
    let params = std::fs::read_to_string(task.join("params.h")).unwrap();
    assert!(
        params.contains("#define bx 16") && params.contains("#define t 1"),
        "{params}"
    );
    // The first repeat is a warm-up, left out; the samples are repeats 2, 4, ..., 10 (counting
    // from 1) and the truth is the mean of repeats 3, 5, 7 and 9.
    let cache: Value =
        serde_json::from_str(&std::fs::read_to_string(task.join("cache.json")).unwrap()).unwrap();
    let start = cache["trees"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["label"] == "start")
        .unwrap();
    assert_eq!(start["samples"].as_array().unwrap().len(), 5, "{start}");
    let truth = start["truth"]["tiny_kernel"].as_f64().unwrap();
    let odd: f64 = (1..5)
        .map(|i| 2.0 * (0.99 + 0.002 * (2 * i) as f64))
        .sum::<f64>()
        / 4.0;
    assert!((truth - odd).abs() < 1e-9, "{truth} {odd}");

    let cache_path = task.join("cache.json");
    let report = env.run(
        &task,
        &[
            "--simulate",
            cache_path.to_str().unwrap(),
            "--budget",
            "8",
            "--seed",
            "2",
        ],
    );
    assert!(report["accepted"].as_u64().unwrap() >= 1, "{report}");
    let rows = env.json(&[
        "query",
        "SELECT c.params_key AS k, e.verdict AS v, e.reason AS r FROM candidates c \
         JOIN evaluations e ON e.candidate_id = c.id ORDER BY c.seq",
    ]);
    let verdict = |k: &str| {
        rows.as_array()
            .unwrap()
            .iter()
            .find(|r| r["k"] == k)
            .map(|r| (r["v"].as_str().unwrap().to_string(), r["r"].to_string()))
            .unwrap_or_else(|| panic!("{k} was never proposed: {rows}"))
    };
    // The search never proposes the configuration the condition rules out; the one that
    // failed on the GPU fails its test; the best (2x faster than the start) is accepted.
    assert!(!rows.to_string().contains(r#"\"bx\":64,\"t\":2"#), "{rows}");
    let (v, why) = verdict(r#"{"bx":64,"t":1}"#);
    assert!(
        v == "failed" && why.contains("RuntimeFailedConfig"),
        "{v} {why}"
    );
    let accepted: Vec<&Value> = rows
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["v"] == "accepted")
        .map(|r| &r["k"])
        .collect();
    assert_eq!(accepted, [r#"{"bx":32,"t":2}"#], "{rows}");
}

#[test]
fn a_file_that_cannot_be_replayed_faithfully_is_refused_saying_why() {
    let env = Env::new();
    let t1_ok = env.write("t1.json", &t1("bx * t <= 64").to_string());
    let plain = env.write("tiny.json", &kt_cache("time").to_string());
    let refused = |cache: &Path, t1: &Path, out: PathBuf, why: &str| {
        env.cmd()
            .arg("import")
            .arg(cache)
            .arg("--t1")
            .arg(t1)
            .arg("--out")
            .arg(&out)
            .assert()
            .code(2)
            .stderr(contains(why));
    };
    // A cache of another objective: its `times` would not be what the metric says.
    let gflops = env.write("gflops.json", &kt_cache("GFLOP/s").to_string());
    refused(
        &gflops,
        &t1_ok,
        env.path().join("a"),
        "objective \"GFLOP/s\"",
    );
    // Conditions that rule out a configuration the cache measured: one of the two is wrong.
    let strict = env.write("strict.json", &t1("bx * t <= 32").to_string());
    refused(
        &plain,
        &strict,
        env.path().join("b"),
        "the T1 conditions and the cache disagree",
    );
    // A condition in Python that has no faithful translation.
    let listy = env.write("listy.json", &t1("bx in [16, 32]").to_string());
    refused(&plain, &listy, env.path().join("c"), "bx in [16, 32]");
    // Not a cache file at all.
    let bogus = env.write("bogus.json", "{\"results\": []}");
    refused(
        &bogus,
        &t1_ok,
        env.path().join("d"),
        "is not a Kernel Tuner cache file",
    );
    // A folder with something in it is never written over.
    let used = env.path().join("used");
    std::fs::create_dir_all(&used).unwrap();
    std::fs::write(used.join("notes.txt"), "mine").unwrap();
    refused(&plain, &t1_ok, used.clone(), "exists and is not empty");
    assert_eq!(
        std::fs::read_to_string(used.join("notes.txt")).unwrap(),
        "mine"
    );
    // The same file, uncompressed, imports.
    import(&env, &plain, &t1_ok, &env.path().join("fine"));
}

/// The same kernel imported from two GPUs is one task in two simulated contexts: a run on the
/// second starts from the first's best (the warm-start path), re-measured there; TPE does not
/// count that carried assignment among its own measurements.
#[test]
fn a_run_on_another_recorded_gpu_starts_from_the_first_gpus_best() {
    let env = Env::new();
    let t1 = env.write("t1.json", &t1("bx * t <= 64").to_string());
    let mut tasks = Vec::new();
    for (device, scale) in [("First GPU", 1.0), ("Second GPU", 0.5)] {
        let file = env.write(
            &format!("{device}.json"),
            &kt_cache_of(device, "time", scale).to_string(),
        );
        let task = env.path().join(device.replace(' ', "-"));
        import(&env, &file, &t1, &task);
        tasks.push(task);
    }
    let simulate = |task: &Path, budget: &str| {
        let cache = task.join("cache.json");
        env.run(
            task,
            &[
                "--simulate",
                cache.to_str().unwrap(),
                "--budget",
                budget,
                "--seed",
                "2",
            ],
        )
    };
    let first = simulate(&tasks[0], "8");
    assert!(first["accepted"].as_u64().unwrap() >= 1, "{first}");
    let second = simulate(&tasks[1], "2");
    assert_ne!(first["context_id"], second["context_id"], "{second}");
    let rows = env.json(&[
        "query",
        &format!(
            "SELECT c.origin AS o, c.params_key AS k, e.verdict AS v, c.note AS n FROM candidates c \
             JOIN evaluations e ON e.candidate_id = c.id WHERE c.run_id = {} ORDER BY c.seq",
            second["run_id"]
        ),
    ]);
    assert!(
        rows[0]["o"].as_str().unwrap().starts_with("warm-start("),
        "{rows}"
    );
    assert_eq!(rows[0]["k"], r#"{"bx":32,"t":2}"#, "{rows}");
    assert_eq!(rows[0]["v"], "accepted", "{rows}");
    // A run of two draws one assignment before modelling; the carried one is not it.
    assert_eq!(
        rows[1]["n"], "a uniform draw (0 of 1 measured before TPE)",
        "{rows}"
    );
}
