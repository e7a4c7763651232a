//! tasks/vllm-serve, the GPU twin of llm-serve: refused up front, naming what is missing, where
//! the machine has no NVIDIA GPU or no vLLM; its harness (check.py, bench.py) run here against
//! a stand-in for `vllm serve` (tests/fixtures/vllm: vLLM's command line and streaming API,
//! answers that depend on the configuration), so that its flags, its near-tie check and its
//! capacity are tested without a GPU; and served for real by vLLM where a GPU and vLLM exist.

use crate::common::gguf::gguf;
use crate::common::tools::{Tool, missing};
use crate::common::{Env, repo};
use crate::gpu::refused_without;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The stand-in's directory, to put first on a PATH.
fn stand_in() -> PathBuf {
    repo().join("tests/fixtures/vllm")
}

#[test]
fn the_vllm_task_is_refused_where_the_machine_lacks_a_gpu_or_vllm() {
    let env = Env::new();
    refused_without(&env, "vllm-serve", "vllm (not on PATH)");
    let t = env.path().join("vllm-serve");
    let t = t.to_str().unwrap();
    if !Path::new("/dev/nvidiactl").exists() {
        // vLLM on the PATH is not enough: the GPU is named, and vLLM no longer is.
        let path = format!("{}:/usr/bin:/bin", stand_in().display());
        let out = env
            .cmd()
            .env("PATH", path)
            .args(["check", t])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains("an NVIDIA GPU (no /dev/nvidiactl)"), "{err}");
        assert!(!err.contains("vllm (not on PATH)"), "{err}");
    }
    assert!(!env.ledger().join("refs").exists());
}

/// The task's harness in a copy whose models.json also names a small file of test weights.
struct Harness {
    env: Env,
    dir: PathBuf,
    model: String,
}

impl Harness {
    fn new() -> Harness {
        let env = Env::new();
        let dir = env.task("vllm-serve");
        let weights = env.path().join("weights.gguf");
        gguf(
            &weights,
            &[
                ("token_embd.weight", &[256, 100], 1),
                ("blk.0.attn_q.weight", &[256, 64], 12),
            ],
        );
        let bytes = std::fs::metadata(&weights).unwrap().len();
        let sha = sha256_hex(&weights);
        let file = dir.join("models.json");
        let mut models: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        models["models"][&sha] = serde_json::json!({
            "name": "test weights", "file": weights, "bytes": bytes, "wheel": "none",
            "check": {"answer_tokens": 12, "fillers": 6, "long_prompt_words": 300, "bench_tokens": 8}
        });
        std::fs::write(&file, models.to_string()).unwrap();
        let workload = r#"{"name": "tiny", "rate_rps": 30, "window_s": 2, "prompt_words": [5, 20],
            "answer_tokens": [10, 30], "slo_ttft_ms": 150, "slo_tpot_ms": 12, "seed": 2,
            "ramp": {"from_rps": 2, "doubling_s": 1}}"#;
        std::fs::write(env.path().join("tiny.json"), workload).unwrap();
        let model = format!("test sha256:{sha}");
        Harness { env, dir, model }
    }

    /// Sets config.json's `key` to `value` (JSON).
    fn set(&self, key: &str, value: serde_json::Value) {
        let file = self.dir.join("config.json");
        let mut config: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        config[key] = value;
        std::fs::write(&file, config.to_string()).unwrap();
    }

    /// Runs `python3 SCRIPT` in the task with the stand-in first on the PATH.
    fn python(&self, script: &str) -> std::process::Output {
        self.python_with(script, &[])
    }

    /// Runs `python3 SCRIPT` with `env` added.
    fn python_with(&self, script: &str, env: &[(&str, &Path)]) -> std::process::Output {
        let path = format!(
            "{}:{}",
            stand_in().display(),
            std::env::var("PATH").unwrap_or_default()
        );
        Command::new("python3")
            .envs(env.iter().copied())
            .arg(script)
            .current_dir(&self.dir)
            .env("PATH", path)
            .env("POLYMORPH_MODEL", &self.model)
            .env("POLYMORPH_SEED", "1")
            .env("POLYMORPH_WORKLOAD", self.env.path().join("tiny.json"))
            .env("FAKE_VLLM_LOG", self.env.path().join("starts.log"))
            .env("FAKE_VLLM_REQUESTS", self.env.path().join("requests.log"))
            .output()
            .unwrap()
    }

    /// Each `vllm` start's arguments, in order.
    fn starts(&self) -> Vec<Vec<String>> {
        let log = std::fs::read_to_string(self.env.path().join("starts.log")).unwrap_or_default();
        log.lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// The fields of every chat request sent so far: none asks for log-probabilities, which
    /// vLLM does not speculate on, and each asks for token ids.
    fn assert_requests_plain(&self) {
        let log = std::fs::read_to_string(self.env.path().join("requests.log")).unwrap();
        assert!(log.lines().count() > 12, "{log}");
        for line in log.lines() {
            let fields: Vec<String> = serde_json::from_str(line).unwrap();
            assert!(fields.contains(&"return_token_ids".to_string()), "{line}");
            assert!(!fields.iter().any(|f| f.contains("logprobs")), "{line}");
        }
    }

    /// bench.py's capacity.
    fn capacity(&self) -> f64 {
        self.capacity_with(&[])
    }

    /// bench.py's capacity with `env` added.
    fn capacity_with(&self, env: &[(&str, &Path)]) -> f64 {
        let out = self.python_with("bench.py", env);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let metrics: Vec<serde_json::Value> = text
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        let names: Vec<&str> = metrics
            .iter()
            .map(|m| m["metric"].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            ["capacity", "met", "ttft_p90_ms", "tpot_p90_ms"],
            "{text}"
        );
        // The stand-in's Python has no PyTorch (or no GPU): no bound, and the reason.
        assert!(text.contains("; no bound: PyTorch"), "{text}");
        metrics[0]["value"].as_f64().unwrap()
    }
}

fn sha256_hex(path: &Path) -> String {
    let out = Command::new("sha256sum").arg(path).output().unwrap();
    String::from_utf8_lossy(&out.stdout)[..64].to_string()
}

#[test]
fn the_vllm_harness_passes_flags_checks_answers_and_measures_capacity() {
    let h = Harness::new();
    // vLLM's defaults: the answers match the reference's, the batched ones up to a near-tie.
    let out = h.python("check.py");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("ok: all 12 answers are the reference's"),
        "{text}"
    );
    assert!(!text.contains("(0 with a near-tie"), "{text}");
    // The configuration was served first, then the reference: one sequence, chunked prefill at
    // vLLM's default step, no prefix cache, no CUDA graphs, nothing downloaded.
    let starts = h.starts();
    assert_eq!(starts.len(), 2, "{starts:?}");
    assert!(
        starts[0].contains(&"--enable-chunked-prefill".to_string()),
        "{starts:?}"
    );
    assert!(
        !starts[0].contains(&"--max-num-seqs".to_string()),
        "{starts:?}"
    );
    let reference = starts[1].join(" ");
    assert!(
        !reference.contains("--max-num-batched-tokens"),
        "{reference}"
    );
    for flag in [
        "--max-num-seqs 1",
        "--enable-chunked-prefill",
        "--no-enable-prefix-caching",
        "--enforce-eager",
        "--kv-cache-dtype auto",
    ] {
        assert!(reference.contains(flag), "{reference}");
    }

    // An fp8 KV cache that changes a token the model was sure of: refused, saying where.
    h.set("kv_cache_dtype", "fp8".into());
    let out = h.python("check.py");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("token 2:") && err.contains("3.00 nats apart"),
        "{err}"
    );
    h.set("kv_cache_dtype", "auto".into());

    // A combination vLLM refuses: the server's exit is the reason.
    h.set("chunked_prefill", false.into());
    h.set("max_num_batched_tokens", 2048.into());
    let out = h.python("check.py");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("vllm serve exited (1) before it was healthy"),
        "{err}"
    );
    h.set("chunked_prefill", true.into());
    h.set("max_num_batched_tokens", 0.into());

    // A vLLM that reads GGUF only through its plugin, without it: the reason says what to do.
    let version = [("FAKE_VLLM_VERSION", Path::new("0.24.1"))];
    let out = h.python_with("check.py", &version);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("vLLM 0.24.1 reads GGUF files only through the vllm-gguf-plugin package"),
        "{err}"
    );

    // Capacity on a ramp: one sequence at a time turns at a far lower rate than vLLM's default
    // batching.
    let batched = h.capacity();
    h.set("max_num_seqs", 1.into());
    let single = h.capacity();
    assert!(batched > 2.0 * single, "{batched} vs {single}");
    let last = h.starts().last().unwrap().join(" ");
    assert!(last.contains("--max-num-seqs 1"), "{last}");
    h.assert_requests_plain();
}

/// reference.py, as polymorph runs it once per context: the reference's own answers to every
/// prompt the check may send and to a sample of the ramp's requests. A check or bench whose
/// answers follow them starts no reference of its own; one whose answers leave them at a
/// near-tie starts it for those answers only; a token the reference was sure of is refused from
/// the kept distributions alone.
#[test]
fn the_reference_computed_once_spares_each_process_its_own() {
    let h = Harness::new();
    let kept = h.env.path().join("reference");
    std::fs::create_dir(&kept).unwrap();
    let env = [("POLYMORPH_REFERENCE", kept.as_path())];
    let stdout = |out: &std::process::Output| {
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    };
    let out = h.python_with("reference.py", &env);
    assert!(out.status.success(), "{}", stdout(&out));
    // The check's 6 fixed prompts and twice its 6 fillers; 8 of the ramp's first requests.
    assert!(
        stdout(&out).contains("the reference's answers to 26 prompts (18 the check's"),
        "{}",
        stdout(&out)
    );
    assert_eq!(h.starts().len(), 1);
    assert!(h.starts()[0].join(" ").contains("--max-num-seqs 1"));

    // One sequence at a time, as the reference: every answer is the reference's own.
    h.set("max_num_seqs", 1.into());
    let out = h.python_with("check.py", &env);
    assert!(out.status.success(), "{}", stdout(&out));
    assert!(
        stdout(&out).contains("0 scored by the reference served here"),
        "{}",
        stdout(&out)
    );
    assert_eq!(h.starts().len(), 2, "{:?}", h.starts());
    h.capacity_with(&env);
    assert_eq!(h.starts().len(), 3, "{:?}", h.starts());

    // Batched, the answers take the other side of the near-tie at their fourth token: what
    // follows it is scored by a reference served for them.
    h.set("max_num_seqs", 0.into());
    let out = h.python_with("check.py", &env);
    assert!(out.status.success(), "{}", stdout(&out));
    assert!(
        !stdout(&out).contains(" 0 scored by the reference served here"),
        "{}",
        stdout(&out)
    );
    assert_eq!(h.starts().len(), 5, "{:?}", h.starts());
    assert!(h.starts()[4].join(" ").contains("--max-num-seqs 1"));

    // An fp8 KV cache changes a token the reference was sure of: refused from the kept
    // distributions, before anything else is started.
    h.set("max_num_seqs", 1.into());
    h.set("kv_cache_dtype", "fp8".into());
    let out = h.python_with("check.py", &env);
    assert!(!out.status.success());
    assert!(
        stdout(&out).contains("token 2:") && stdout(&out).contains("3.00 nats apart"),
        "{}",
        stdout(&out)
    );
    assert_eq!(h.starts().len(), 6, "{:?}", h.starts());
}

/// Where a GPU and vLLM exist: the real engine checks, benchmarks and tunes the task.
#[test]
fn the_vllm_task_is_served_by_vllm_on_a_gpu() {
    let path = std::env::var("PATH").unwrap_or_default();
    let has_vllm = path.split(':').any(|d| Path::new(d).join("vllm").is_file());
    if !Path::new("/dev/nvidiactl").exists() || !has_vllm {
        missing(
            Tool::Vllm,
            "tasks/vllm-serve on a GPU: needs an NVIDIA GPU and vLLM on the PATH",
        );
        return;
    }
    let env = Env::alone();
    let task = env.task("vllm-serve");
    let t = task.to_str().unwrap();
    env.cmd().args(["setup", t]).assert().success();
    let out = env.json(&["check", t, "--rounds", "1"]);
    assert_eq!(out["trees"].as_array().unwrap().len(), 2, "{out}");
    // The GPU was probed: each tree's capacity as a share of the bound on its ramp, under 1.
    for tree in out["trees"].as_array().unwrap() {
        let share = tree["fraction_of_limit"]["chat"].as_f64();
        assert!(share.is_some_and(|s| s > 0.0 && s < 1.0), "{tree}");
    }
    env.run(&task, &["--budget", "1", "--seed", "1"]);
    let verdicts = env.json(&["query", "SELECT e.verdict FROM evaluations e"]);
    assert!(!verdicts.as_array().unwrap().is_empty(), "{verdicts}");
}
