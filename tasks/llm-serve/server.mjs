// The server (harness-owned): a thin OpenAI-style chat-completions endpoint over llama.cpp with
// the engine configuration of this tree (config.json) and its scheduler (scheduler.mjs).
// Greedy decoding only (temperature 0); answers stream as server-sent events, each chunk with the
// token ids it carries (`token_ids`), as llama.cpp's own server can. `ignore_eos` generates
// exactly max_tokens, as load generators ask of vLLM and llama.cpp.
//   node server.mjs [--port N]   prints "listening <port>" on stdout once the model is loaded.
import http from "node:http";
import {chatPrompt, createContext, loadModel, readConfig, SEQUENCE_TOKENS, sequenceOf} from "./engine.mjs";
import {admit, pick} from "./scheduler.mjs";

const config = readConfig(new URL("./config.json", import.meta.url));
const at = process.argv.indexOf("--port");
const port = at > 0 ? Number(process.argv[at + 1]) : 0;
const engine = await loadModel();
const context = await createContext(engine, config);
const free = Array.from({length: config.sequences}, () => sequenceOf(engine, context, config));
const queue = [];
let nextId = 0;
// Sequences whose history is being cleared. node-llama-cpp 3.22.1 clears a sequence under the
// context's lock, which its decode loop holds for as long as any decode is queued: with two or
// more sequences generating, a third request waited for one of them to finish before its first
// token (1-2 s with SmolLM2-135M). So every generating sequence pauses between tokens while a
// clear waits; the loop then runs dry, lets go of the lock, and the clear takes milliseconds.
const clearing = new Set();

async function clear(seq) {
    if (seq.nextTokenIndex === 0) return;
    const done = seq.clearHistory();
    clearing.add(done);
    try {
        await done;
    } finally {
        clearing.delete(done);
    }
}

function dispatch() {
    while (free.length > 0 && queue.length > 0) {
        const [req] = queue.splice(pick(queue, config), 1);
        const seq = free.pop();
        generate(seq, req).finally(() => { free.push(seq); dispatch(); });
    }
}

async function generate(seq, req) {
    const {model} = engine;
    const tokens = [];
    let shown = "";
    try {
        await clear(seq);
        for await (const token of seq.evaluate(req.prompt, {temperature: 0, yieldEogToken: true})) {
            if (req.closed) break;
            if (!req.ignoreEos && model.isEogToken(token)) { req.finish("stop"); return; }
            tokens.push(token);
            const text = model.detokenize(tokens);
            req.send(text.slice(shown.length), token);
            shown = text;
            if (tokens.length >= req.maxTokens) { req.finish("length"); return; }
            while (clearing.size > 0) await Promise.allSettled([...clearing]);
        }
        req.finish(req.closed ? "cancelled" : "stop");
    } catch (e) {
        req.fail(String(e?.message ?? e));
    }
}

function reply(res, code, message) {
    res.writeHead(code, {"content-type": "application/json"});
    res.end(JSON.stringify({error: {message, type: code === 503 ? "overloaded" : "invalid_request_error"}}));
}

async function completions(req, res) {
    let body;
    try {
        let raw = "";
        for await (const chunk of req) raw += chunk;
        body = JSON.parse(raw);
    } catch {
        return reply(res, 400, "the body is not JSON");
    }
    if (!Array.isArray(body.messages) || body.messages.some((m) => typeof m?.content !== "string")) {
        return reply(res, 400, "messages must be a list of {role, content}");
    }
    if ((body.temperature ?? 0) !== 0) return reply(res, 400, "this server decodes greedily: temperature must be 0");
    const maxTokens = Number(body.max_tokens ?? 64);
    const prompt = engine.model.tokenize(chatPrompt(body.messages), true);
    if (!(maxTokens >= 1) || prompt.length + maxTokens > SEQUENCE_TOKENS) {
        return reply(res, 400, `${prompt.length} prompt tokens and max_tokens ${maxTokens} do not fit a sequence of ${SEQUENCE_TOKENS}`);
    }
    const id = `chatcmpl-${nextId++}`;
    const request = {id, promptTokens: prompt.length, maxTokens, arrived: performance.now(), prompt,
        ignoreEos: body.ignore_eos === true, closed: false};
    if (!admit(request, queue, config)) return reply(res, 503, "the queue is full");
    res.writeHead(200, {"content-type": "text/event-stream", "cache-control": "no-cache"});
    // A client that hung up gets nothing more (its sequence stops at the next token).
    const write = (text, end) => { if (!res.destroyed) (end ? res.end(text) : res.write(text)); };
    const chunk = (delta, finish, tokenIds) => write(`data: ${JSON.stringify({id, object: "chat.completion.chunk",
        choices: [{index: 0, delta, finish_reason: finish}], token_ids: tokenIds})}\n\n`);
    request.send = (text, token) => chunk({content: text}, null, [token]);
    request.finish = (why) => { chunk({}, why, []); write("data: [DONE]\n\n", true); };
    request.fail = (why) => write(`data: ${JSON.stringify({error: {message: why}})}\n\n`, true);
    res.on("close", () => {
        request.closed = true;
        const i = queue.indexOf(request);
        if (i >= 0) queue.splice(i, 1);
    });
    queue.push(request);
    dispatch();
}

const server = http.createServer((req, res) => {
    const url = req.url.split("?")[0];
    if (req.method === "GET" && url === "/health") return res.end(JSON.stringify({status: "ok"}));
    if (req.method === "POST" && url === "/v1/chat/completions") {
        return completions(req, res).catch((e) => { if (!res.headersSent) reply(res, 500, String(e)); else res.end(); });
    }
    reply(res, 404, `no route ${req.method} ${url}`);
});
server.keepAliveTimeout = 60_000;
server.listen(port, "127.0.0.1", () => console.log(`listening ${server.address().port}`));
