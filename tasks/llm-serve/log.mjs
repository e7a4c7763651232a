// Request logs as traffic (harness-owned). A workload may name a request log in a form operators
// keep: the Azure LLM inference trace's CSV (TIMESTAMP, ContextTokens, GeneratedTokens) or the
// Mooncake trace's JSON lines (timestamp in ms, input_length, output_length, and hash_ids, one id
// per 512-token block, the same id for the same block). It names the log's sha256 too, so that a
// changed log changes the workload file, whose hash keys the context. The trace is a stretch of
// the log `window_s` long, where the seed puts it, with the log's arrival pattern stretched to
// `rate_rps` on average, and prompts and answers of the logged lengths times `length_scale`
// (within `prompt_words` and `answer_tokens` where the workload gives them). Where hash ids
// repeat, prompts share the words of those blocks, so prefix caching and lookup decoding meet the
// log's reuse. tasks/vllm-serve/log.py draws the same trace.
import {createHash} from "node:crypto";
import {readFileSync} from "node:fs";
import {dirname, isAbsolute, join} from "node:path";

/// The Mooncake trace's block: a hash id stands for this many tokens of the prompt.
const BLOCK_TOKENS = 512;

const count = (x, where, field) => {
    const n = typeof x === "string" && /^\d+$/.test(x.trim()) ? Number(x) : x;
    if (!Number.isInteger(n) || n < 0) throw new Error(`${where}: ${field} is ${JSON.stringify(x)}, not a count`);
    return n;
};

function azure(text, where) {
    const lines = text.split("\n").map((l, k) => [l.trim(), k + 1]).filter(([l]) => l !== "");
    const head = (lines[0]?.[0] ?? "").split(",").map((c) => c.trim());
    const col = (name) => {
        const i = head.indexOf(name);
        if (i < 0) throw new Error(`${where}: no ${name} column (an Azure LLM inference trace has TIMESTAMP, ContextTokens, GeneratedTokens)`);
        return i;
    };
    const [ti, ci, gi] = [col("TIMESTAMP"), col("ContextTokens"), col("GeneratedTokens")];
    let first = null;
    return lines.slice(1).map(([l, line]) => {
        const f = l.split(",").map((c) => c.trim());
        const m = /^(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})(\.\d+)?$/.exec(f[ti] ?? "");
        if (!m) throw new Error(`${where}: line ${line}: TIMESTAMP ${JSON.stringify(f[ti])} is not YYYY-MM-DD HH:MM:SS[.fraction]`);
        const secs = Date.UTC(+m[1], +m[2] - 1, +m[3], +m[4], +m[5], +m[6]) / 1000;
        const frac = m[7] ? Number(`0${m[7]}`) : 0;
        first ??= [secs, frac];
        return {line, t: (secs - first[0]) + (frac - first[1]), blocks: null,
            prompt: count(f[ci], `${where}: line ${line}`, "ContextTokens"),
            answer: count(f[gi], `${where}: line ${line}`, "GeneratedTokens")};
    });
}

function mooncake(text, where) {
    let first = null;
    return text.split("\n").map((l, k) => [l.trim(), k + 1]).filter(([l]) => l !== "").map(([l, line]) => {
        const at = `${where}: line ${line}`;
        let o;
        try {
            o = JSON.parse(l);
        } catch {
            throw new Error(`${at}: not a JSON object`);
        }
        if (!(typeof o?.timestamp === "number" && o.timestamp >= 0)) throw new Error(`${at}: no timestamp (milliseconds, >= 0)`);
        const blocks = o.hash_ids ?? null;
        if (blocks !== null && !(Array.isArray(blocks) && blocks.every((h) => Number.isInteger(h) && h >= 0)))
            throw new Error(`${at}: hash_ids is not a list of block ids (integers >= 0)`);
        first ??= o.timestamp;
        return {line, t: (o.timestamp - first) / 1000, blocks,
            prompt: count(o.input_length, at, "input_length"), answer: count(o.output_length, at, "output_length")};
    });
}

/// The log `w` names, read and checked: [{line, t (seconds after its first request), prompt,
/// answer (logged token counts), blocks (hash ids, or null)}].
export function readLog(workloadPath, w) {
    if (typeof w.log !== "string" || isAbsolute(w.log) || w.log.split("/").includes(".."))
        throw new Error(`${workloadPath}: "log" is a path under the workload file's folder`);
    const where = `${workloadPath}: log ${w.log}`;
    if (typeof w.log_sha256 !== "string")
        throw new Error(`${workloadPath}: a workload with a log names its sha256 ("log_sha256"), so that a changed log changes the workload`);
    if ("length_scale" in w && !(w.length_scale > 0)) throw new Error(`${workloadPath}: length_scale must be positive`);
    const bytes = readFileSync(join(dirname(workloadPath), w.log));
    const sha = createHash("sha256").update(bytes).digest("hex");
    if (sha !== w.log_sha256)
        throw new Error(`${where}: its sha256 is ${sha} where the workload names ${w.log_sha256}: a changed log needs its new hash in the workload file, whose hash keys the context`);
    const text = bytes.toString("utf8");
    let rows;
    if (w.log.endsWith(".csv")) rows = azure(text, where);
    else if (w.log.endsWith(".jsonl")) rows = mooncake(text, where);
    else throw new Error(`${where}: a log is .csv (the Azure LLM inference trace's columns) or .jsonl (the Mooncake trace's)`);
    if (rows.length < 2) throw new Error(`${where}: fewer than two requests`);
    rows.forEach((row, i) => {
        if (i > 0 && row.t < rows[i - 1].t) throw new Error(`${where}: line ${row.line} arrives before the line above it`);
    });
    if (!(rows.at(-1).t > 0)) throw new Error(`${where}: every request arrives at once, so there is no rate to scale`);
    return rows;
}

/// The workload's trace from its log: [{at, messages, maxTokens}], drawn with `rng` (traffic.mjs's).
export function logRequests(w, rng) {
    const rows = w.entries;
    const logged = rows.at(-1).t;
    const stretch = (rows.length - 1) / logged / w.rate_rps;
    const span = logged * stretch;
    const r = rng(w.seed);
    const offset = span > w.window_s ? r.next() * (span - w.window_s) : 0;
    const scale = w.length_scale ?? 1;
    const sized = (n, range) => {
        const x = Math.max(1, Math.floor(n * scale + 0.5));
        return range ? Math.min(range[1], Math.max(range[0], x)) : x;
    };
    const blockWords = sized(BLOCK_TOKENS, null);
    const out = [];
    for (const row of rows) {
        const at = row.t * stretch - offset;
        if (at < 0 || at >= w.window_s) continue;
        const words = sized(row.prompt, w.prompt_words);
        const ask = r.next() < 0.5 ? "Summarise these notes in plain words" : "Continue this list and explain it";
        const parts = [];
        let left = words;
        for (const h of row.blocks ?? []) {
            if (left <= 0) break;
            const n = Math.min(left, blockWords);
            parts.push(rng(h).words(n));
            left -= n;
        }
        if (left > 0) parts.push(r.words(left));
        out.push({at, maxTokens: sized(row.answer, w.answer_tokens),
            messages: [{role: "user", content: `${parts.join(" ")}\n\n${ask}.`}]});
    }
    if (!out.length) throw new Error(`${w.name}: the ${w.window_s} s of its log that seed ${w.seed} picks hold no request: widen window_s or pick another seed`);
    return out;
}
