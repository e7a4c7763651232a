//! Request logs as serving traffic: llm-serve's log.mjs and vllm-serve's log.py read the Azure
//! and Mooncake forms, replay the same trace draw for draw, share the words of repeated blocks,
//! stretch the log's arrivals to the workload's rate, refuse a log that is not what the workload
//! names, and draw a workload's several arrival paths alike.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Each request of `workload`'s trace as [at, max tokens, prompt], one JSON line a workload,
/// by node (llm-serve) and by python (vllm-serve); or the error each printed.
fn traces(workload: &Path) -> (Result<String, String>, Result<String, String>) {
    traces_on(workload, 0)
}

/// `traces` on the workload's path `path`.
fn traces_on(workload: &Path, path: u32) -> (Result<String, String>, Result<String, String>) {
    let js = format!(
        "import {{load, requests}} from {:?}; \
         const q = requests(load(process.argv[1]), {path}); \
         console.log(JSON.stringify(q.map((x) => [x.at, x.maxTokens, x.messages[0].content])));",
        root()
            .join("tasks/llm-serve/traffic.mjs")
            .display()
            .to_string()
    );
    let py = format!(
        "import sys, json; sys.path.insert(0, {:?}); import traffic; \
         q = traffic.requests(traffic.load(sys.argv[1]), {path}); \
         print(json.dumps([[x['at'], x['max_tokens'], x['messages'][0]['content']] for x in q], separators=(',', ':')))",
        root().join("tasks/vllm-serve").display().to_string()
    );
    let out = |mut c: Command| {
        let o = c.output().expect("node and python3 must be installed");
        match o.status.success() {
            true => Ok(String::from_utf8_lossy(&o.stdout).trim().to_string()),
            false => Err(String::from_utf8_lossy(&o.stderr).to_string()),
        }
    };
    let mut node = Command::new("node");
    node.args(["--input-type=module", "-e", &js, "--"])
        .arg(workload);
    let mut python = Command::new("python3");
    python.args(["-c", &py]).arg(workload);
    (out(node), out(python))
}

fn trace(workload: &Path) -> Vec<(f64, u64, String)> {
    trace_on(workload, 0)
}

/// `trace` on the workload's path `path`.
fn trace_on(workload: &Path, path: u32) -> Vec<(f64, u64, String)> {
    let (js, py) = traces_on(workload, path);
    let parse = |who: &str, got: Result<String, String>| -> Vec<(f64, u64, String)> {
        let text = got.unwrap_or_else(|e| panic!("{who}: {e}"));
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{who}: {e}: {text}"))
    };
    let js = parse("node", js);
    // Python writes 1.0 where JavaScript writes 1; the numbers themselves must be equal.
    assert_eq!(
        js,
        parse("python", py),
        "python's trace differs from node's"
    );
    js
}

fn sha256(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A workload over `log` (file name `name`) in a folder of its own.
fn workload(dir: &Path, name: &str, log: &str, extra: serde_json::Value) -> PathBuf {
    std::fs::write(dir.join(name), log).unwrap();
    let mut w = serde_json::json!({
        "name": "logged", "log": name, "log_sha256": sha256(log.as_bytes()),
        "rate_rps": 1, "window_s": 10, "slo_ttft_ms": 1000, "slo_tpot_ms": 100, "seed": 7,
    });
    w.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    let path = dir.join(format!("{name}.json"));
    std::fs::write(&path, w.to_string()).unwrap();
    path
}

#[test]
fn the_shipped_request_logs_replay_alike_in_node_and_python() {
    let dir = root().join("tasks/llm-serve/workloads");
    for name in ["log-azure.json", "log-mooncake.json", "chat.json"] {
        let q = trace(&dir.join(name));
        assert!(!q.is_empty(), "{name}: no requests in its window");
        assert!(
            q.iter()
                .all(|(at, n, _)| *at >= 0.0 && *at < 10.0 && *n >= 8)
        );
    }
}

#[test]
fn repeated_block_hashes_share_their_words_and_arrivals_keep_the_log_pattern() {
    let dir = tempfile::tempdir().unwrap();
    // Blocks of 4 words (512 tokens at 1/128); the log's rate is 1/s, replayed at 1/s.
    let log = "{\"timestamp\": 500, \"input_length\": 1024, \"output_length\": 1280, \"hash_ids\": [0, 1]}\n\
               {\"timestamp\": 1500, \"input_length\": 1536, \"output_length\": 640, \"hash_ids\": [0, 1, 2]}\n\
               {\"timestamp\": 2500, \"input_length\": 512, \"output_length\": 1, \"hash_ids\": [5]}\n";
    let w = workload(
        dir.path(),
        "turns.jsonl",
        log,
        serde_json::json!({"length_scale": 1.0 / 128.0}),
    );
    let q = trace(&w);
    let words = |i: usize| q[i].2.split_whitespace().collect::<Vec<_>>();
    assert_eq!(q.iter().map(|r| r.0).collect::<Vec<_>>(), [0.0, 1.0, 2.0]);
    assert_eq!(q.iter().map(|r| r.1).collect::<Vec<_>>(), [10, 5, 1]);
    // The second request continues the first: their first 8 words (blocks 0 and 1) are one text.
    assert_eq!(words(0)[..8], words(1)[..8], "{q:?}");
    assert_ne!(words(0)[..4], words(2)[..4], "{q:?}");
    // Replayed at 4/s, the same log arrives four times as fast.
    let w = workload(
        dir.path(),
        "fast.jsonl",
        log,
        serde_json::json!({"rate_rps": 4}),
    );
    assert_eq!(
        trace(&w).iter().map(|r| r.0).collect::<Vec<_>>(),
        [0.0, 0.25, 0.5]
    );
    // An Azure CSV: seconds with a fraction of seven digits, as the trace writes them.
    let csv = "TIMESTAMP,ContextTokens,GeneratedTokens\n\
               2023-11-16 18:15:46.6805900,100,20\n\
               2023-11-16 18:15:48.6805900,300,40\n\
               2023-11-16 18:15:50.6805900,200,30\n";
    let w = workload(
        dir.path(),
        "azure.csv",
        csv,
        serde_json::json!({"rate_rps": 0.5}),
    );
    let q = trace(&w);
    assert_eq!(q.iter().map(|r| r.0).collect::<Vec<_>>(), [0.0, 2.0, 4.0]);
    assert_eq!(q.iter().map(|r| r.1).collect::<Vec<_>>(), [20, 40, 30]);
    // 300 words and the six of the ask.
    assert_eq!(q[1].2.split_whitespace().count(), 300 + 6, "{}", q[1].2);
}

#[test]
fn a_log_that_is_not_what_the_workload_names_is_refused_alike() {
    let dir = tempfile::tempdir().unwrap();
    let good = "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46,10,2\n2023-11-16 18:15:47,10,2\n";
    let cases = [
        ("changed.csv", good, Some("0".repeat(64)), "its sha256 is"),
        (
            "late.csv",
            "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:47,10,2\n2023-11-16 18:15:46,10,2\n",
            None,
            "line 3 arrives before the line above it",
        ),
        (
            "stamp.csv",
            "TIMESTAMP,ContextTokens,GeneratedTokens\n16/11/2023 18:15,10,2\n2023-11-16 18:15:47,10,2\n",
            None,
            "line 2: TIMESTAMP \"16/11/2023 18:15\" is not YYYY-MM-DD HH:MM:SS[.fraction]",
        ),
        (
            "columns.csv",
            "time,prompt,answer\n1,2,3\n",
            None,
            "no TIMESTAMP column",
        ),
        (
            "blocks.jsonl",
            "{\"timestamp\": 0, \"input_length\": 5, \"output_length\": 1, \"hash_ids\": \"0\"}\n",
            None,
            "line 1: hash_ids is not a list",
        ),
        ("trace.txt", good, None, "a log is .csv"),
    ];
    // Two requests an hour apart, replayed at the log's rate: most 10 s stretches hold neither.
    let sparse = "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:00:00,10,2\n2023-11-16 19:00:00,10,2\n";
    let w = workload(
        dir.path(),
        "sparse.csv",
        sparse,
        serde_json::json!({"rate_rps": 1.0 / 3600.0}),
    );
    let (js, py) = traces(&w);
    for (who, got) in [("node", js), ("python", py)] {
        let e = got.expect_err(&format!("{who} took an empty stretch"));
        assert!(e.contains("hold no request: widen window_s"), "{who}: {e}");
    }
    for (name, log, sha, why) in cases {
        let mut extra = serde_json::json!({});
        if let Some(s) = sha {
            extra["log_sha256"] = s.into();
        }
        let w = workload(dir.path(), name, log, extra);
        let (js, py) = traces(&w);
        for (who, got) in [("node", js), ("python", py)] {
            let e = got.expect_err(&format!("{who} took {name}"));
            assert!(e.contains(why), "{who} on {name}: {e}");
        }
    }
}

#[test]
fn a_workload_with_several_paths_draws_one_trace_a_path_alike_in_node_and_python() {
    let dir = tempfile::tempdir().unwrap();
    let chat = root().join("tasks/llm-serve/workloads/chat.json");
    let mut w: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&chat).unwrap()).unwrap();
    w["paths"] = 3.into();
    let three = dir.path().join("three.json");
    std::fs::write(&three, w.to_string()).unwrap();
    // Path 0 is the seed's own trace; the others are drawn from the seeds after it.
    let paths: Vec<_> = (0..3).map(|p| trace_on(&three, p)).collect();
    assert_eq!(paths[0], trace(&chat));
    assert_ne!(paths[0], paths[1]);
    assert_ne!(paths[1], paths[2]);
    w["seed"] = (w["seed"].as_u64().unwrap() + 2).into();
    w["paths"] = 1.into();
    let later = dir.path().join("later.json");
    std::fs::write(&later, w.to_string()).unwrap();
    assert_eq!(paths[2], trace(&later));
    for bad in [0, 65] {
        w["paths"] = bad.into();
        std::fs::write(&later, w.to_string()).unwrap();
        let (js, py) = traces(&later);
        for (who, got) in [("node", js), ("python", py)] {
            let e = got.expect_err(&format!("{who} took paths = {bad}"));
            assert!(
                e.contains("paths is a whole number from 1 to 64"),
                "{who}: {e}"
            );
        }
    }
}
