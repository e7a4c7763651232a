// The client side (harness-owned): starts this tree's server and sends it streamed requests.
import {spawn} from "node:child_process";
import {fileURLToPath} from "node:url";

/// Starts server.mjs and resolves to {port, stop} once it listens; its stderr is passed through.
export function startServer() {
    const child = spawn(process.execPath, [fileURLToPath(new URL("./server.mjs", import.meta.url))],
        {stdio: ["ignore", "pipe", "inherit"]});
    return new Promise((resolve, reject) => {
        let out = "";
        child.stdout.on("data", (d) => {
            out += d;
            const m = /listening (\d+)/.exec(out);
            if (m) resolve({port: Number(m[1]), stop: () => child.kill("SIGKILL")});
        });
        child.on("exit", (code) => reject(new Error(`the server exited (${code}) before it listened`)));
    });
}

/// Sends one streamed request; resolves to {ok, tokens, times (ms, performance clock, one per
/// token), finish, error}. `signal` aborts it; `onToken(now)` is called as each token comes.
export async function ask(port, messages, maxTokens, {ignoreEos = false, signal, onToken} = {}) {
    const got = {ok: false, tokens: [], times: [], text: "", finish: null, error: null};
    try {
        const res = await fetch(`http://127.0.0.1:${port}/v1/chat/completions`, {
            method: "POST", signal, headers: {"content-type": "application/json"},
            body: JSON.stringify({model: "local", messages, max_tokens: maxTokens, temperature: 0, stream: true, ignore_eos: ignoreEos}),
        });
        if (!res.ok) {
            got.error = `HTTP ${res.status}: ${(await res.text()).slice(0, 200)}`;
            return got;
        }
        const decoder = new TextDecoder();
        let buf = "";
        for await (const bytes of res.body) {
            buf += decoder.decode(bytes, {stream: true});
            let cut;
            while ((cut = buf.indexOf("\n\n")) >= 0) {
                const line = buf.slice(0, cut).replace(/^data: /, "");
                buf = buf.slice(cut + 2);
                if (line === "[DONE]") { got.ok = got.finish !== null; return got; }
                const event = JSON.parse(line);
                if (event.error) { got.error = event.error.message; return got; }
                const now = performance.now();
                for (const t of event.token_ids ?? []) { got.tokens.push(t); got.times.push(now); onToken?.(now); }
                got.text += event.choices?.[0]?.delta?.content ?? "";
                got.finish = event.choices?.[0]?.finish_reason ?? got.finish;
            }
        }
        got.error = "the stream ended without [DONE]";
    } catch (e) {
        got.error = String(e?.message ?? e);
    }
    return got;
}
