// The engine (harness-owned): llama.cpp through node-llama-cpp, loaded from the packages
// `polymorph setup` installed (POLYMORPH_NODE_MODULES), with the weights the context names
// (POLYMORPH_MODEL: "<name> sha256:<hash>", looked up in models.json), and a context built from
// an engine configuration (config.json).
import {createHash} from "node:crypto";
import {execFileSync} from "node:child_process";
import {createReadStream, existsSync, readFileSync, statSync} from "node:fs";
import {availableParallelism} from "node:os";
import {dirname, join} from "node:path";
import {fileURLToPath, pathToFileURL} from "node:url";

export const HERE = dirname(fileURLToPath(import.meta.url));
// What went wrong, in one line first (the sandbox's verdict quotes the first line), not Node's
// echo of the throwing source line.
for (const event of ["uncaughtException", "unhandledRejection"]) {
    process.on(event, (e) => {
        console.error(`error: ${e?.message ?? e}`);
        process.exit(1);
    });
}
/// Tokens of room per parallel sequence: the longest prompt and answer the traces send fit.
export const SEQUENCE_TOKENS = 1536;

/// The node-llama-cpp module.
export async function llamaCpp() {
    const modules = process.env.POLYMORPH_NODE_MODULES ?? join(HERE, "node_modules");
    const entry = join(modules, "node-llama-cpp", "dist", "index.js");
    if (!existsSync(entry)) {
        throw new Error(`node-llama-cpp is not installed at ${modules}: run \`polymorph setup\` for this task`);
    }
    return import(pathToFileURL(entry).href);
}

/// The model the context names: {name, sha256, path, bytes, check}.
export function modelFile() {
    const named = process.env.POLYMORPH_MODEL ?? "";
    const sha = /sha256:([0-9a-f]{64})/.exec(named)?.[1];
    if (!sha) throw new Error(`POLYMORPH_MODEL = ${JSON.stringify(named)}: expected "<name> sha256:<64 hex digits>" (task.toml [context] model)`);
    const known = JSON.parse(readFileSync(join(HERE, "models.json"), "utf8")).models[sha];
    if (!known) throw new Error(`the model sha256:${sha} is not in models.json`);
    const site = execFileSync("python3", ["-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], {encoding: "utf8"}).trim();
    const path = join(site, known.file);
    if (!existsSync(path)) throw new Error(`${known.name}: ${path} is missing: \`polymorph setup\` installs ${known.wheel}`);
    if (statSync(path).size !== known.bytes) throw new Error(`${path}: ${statSync(path).size} bytes, where ${known.name} has ${known.bytes}`);
    const sizes = ["answer_tokens", "fillers", "long_prompt_words", "bench_tokens"];
    if (!sizes.every((k) => Number.isInteger(known.check?.[k]) && known.check[k] >= 0)) {
        throw new Error(`models.json: ${known.name} needs "check": {${sizes.join(", ")}}, whole numbers`);
    }
    if (!(known.check.tie_nats > 0)) {
        throw new Error(`models.json: ${known.name} needs "check": {"tie_nats": ...}, the answer check's tolerance in nats (tolerance.mjs measures it)`);
    }
    return {...known, sha256: sha, path};
}

/// The file's sha256, read in a stream.
export async function sha256Of(path) {
    const h = createHash("sha256");
    for await (const chunk of createReadStream(path)) h.update(chunk);
    return h.digest("hex");
}

/// Loads llama.cpp (CPU only, never built or downloaded here) and the model (`modelFile()`'s,
/// unless the caller already found it).
export async function loadModel(file = modelFile()) {
    const {getLlama, ...lib} = await llamaCpp();
    const llama = await getLlama({gpu: false, build: "never", skipDownload: true, logLevel: "error"});
    const model = await llama.loadModel({modelPath: file.path});
    return {lib, llama, model, file};
}

/// A context for `config` (config.json's fields) with `config.sequences` parallel sequences.
/// llama.cpp's threads are at most the cores this process may run on: its threads spin at every
/// step, and two of them on one core took the check past its time limit.
export function createContext({lib, model}, config) {
    const kv = config.kv_cache === "q8_0" ? "Q8_0" : "F16";
    return model.createContext({
        contextSize: SEQUENCE_TOKENS * config.sequences,
        sequences: config.sequences,
        batchSize: config.batch_size,
        threads: Math.min(config.threads, availableParallelism()),
        flashAttention: config.flash_attention,
        experimentalKvCacheKeyType: kv,
        experimentalKvCacheValueType: kv,
        batching: {itemPrioritizationStrategy: config.prioritization},
        ignoreMemorySafetyChecks: false,
        failedCreationRemedy: false,
    });
}

/// The most tokens lookup decoding drafts for one step (node-llama-cpp's default, named because
/// the machine's bound counts on it: bound.mjs).
export const LOOKUP_DRAFT_TOKENS = 3;

/// A sequence of `context`, predicting tokens from its own input when `config.lookup_decoding`.
export function sequenceOf({lib}, context, config) {
    const tokenPredictor = config.lookup_decoding
        ? new lib.InputLookupTokenPredictor({predictionLength: {min: 1, max: LOOKUP_DRAFT_TOKENS}})
        : undefined;
    return context.getSequence({tokenPredictor});
}

/// The chat prompt in ChatML, the template of the models in models.json.
export function chatPrompt(messages) {
    const turns = messages.map((m) => `<|im_start|>${m.role}\n${m.content}<|im_end|>\n`).join("");
    return `${turns}<|im_start|>assistant\n`;
}

/// The reference configuration: one sequence, f16 KV cache, no flash attention. Greedy answers
/// from it are what a configuration's answers are compared with.
export const REFERENCE = {
    sequences: 1, batch_size: 512, threads: 2, flash_attention: false, kv_cache: "f16",
    prioritization: "firstInFirstOut", lookup_decoding: false,
};

/// Reads an engine configuration (config.json) and says what is wrong with it.
export function readConfig(path) {
    const c = JSON.parse(readFileSync(path, "utf8"));
    const want = {
        sequences: (v) => Number.isInteger(v) && v >= 1 && v <= 16,
        batch_size: (v) => Number.isInteger(v) && v >= 8 && v <= 2048,
        threads: (v) => Number.isInteger(v) && v >= 1 && v <= 64,
        flash_attention: (v) => typeof v === "boolean",
        kv_cache: (v) => v === "f16" || v === "q8_0",
        prioritization: (v) => v === "maximumParallelism" || v === "firstInFirstOut",
        lookup_decoding: (v) => typeof v === "boolean",
        order: (v) => v === "fifo" || v === "shortest-prompt",
        max_queue: (v) => Number.isInteger(v) && v >= 0,
    };
    for (const [k, ok] of Object.entries(want)) {
        if (!(k in c)) throw new Error(`${path}: ${k} is missing`);
        if (!ok(c[k])) throw new Error(`${path}: ${k} = ${JSON.stringify(c[k])} is not allowed`);
    }
    if (c.kv_cache === "q8_0" && !c.flash_attention) throw new Error(`${path}: llama.cpp quantizes the V cache only with flash attention on`);
    return c;
}
