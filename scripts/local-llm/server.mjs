// Minimal OpenAI-compatible /v1/chat/completions server on top of node-llama-cpp (CPU only).
// Usage: MODEL=/path/model.gguf PORT=8088 THREADS=2 CTX=4096 node server.mjs
import http from "node:http";
import path from "node:path";
import {getLlama, LlamaChat, LlamaText} from "node-llama-cpp";
import {createRequire} from "node:module";
import {pathToFileURL} from "node:url";
// not in the package's public exports: load by file path (pinned node-llama-cpp@3.21.1)
const {getGbnfGrammarForGbnfJsonSchema} = await import(pathToFileURL(path.join(path.dirname(createRequire(import.meta.url).resolve("node-llama-cpp")), "utils/gbnfJson/getGbnfGrammarForGbnfJsonSchema.js")).href);
const JSON_WS = process.env.JSON_WS || "compact"; // compact | pretty

const MODEL = process.env.MODEL;
const PORT = Number(process.env.PORT || 8088);
const HOST = process.env.HOST || "127.0.0.1";
const THREADS = Number(process.env.THREADS || 2);
const CTX = Number(process.env.CTX || 4096);
const MODEL_ID = process.env.MODEL_ID || path.basename(MODEL || "model");
if (!MODEL) { console.error("set MODEL=/path/to/model.gguf"); process.exit(2); }

const t0 = Date.now();
const llama = await getLlama({gpu: false, build: "never", logLevel: "warn"});
const model = await llama.loadModel({modelPath: MODEL});
const context = await model.createContext({contextSize: CTX, threads: THREADS, sequences: 1});
const sequence = context.getSequence();
const jsonGrammar = await llama.getGrammarFor("json");
console.error(`loaded ${MODEL_ID} in ${Date.now() - t0} ms; listening on http://${HOST}:${PORT}`);

let queue = Promise.resolve();
function serialize(fn) { const p = queue.then(fn, fn); queue = p.catch(() => {}); return p; }

function toHistory(messages) {
  const h = [];
  for (const m of messages) {
    const text = typeof m.content === "string" ? m.content
      : Array.isArray(m.content) ? m.content.map(c => c.text ?? "").join("") : "";
    if (m.role === "system" || m.role === "developer") h.push({type: "system", text});
    else if (m.role === "assistant") h.push({type: "model", response: [text]});
    else h.push({type: "user", text});
  }
  // generateResponse expects the history to end with an (empty) model turn to complete
  h.push({type: "model", response: []});
  return h;
}

// node-llama-cpp's JSON-schema subset knows oneOf but silently mis-handles anyOf: map it.
function normalizeSchema(x) {
  if (Array.isArray(x)) return x.map(normalizeSchema);
  if (!x || typeof x !== "object") return x;
  const o = {};
  for (const [k, v] of Object.entries(x)) {
    if (k === "$schema" || k === "title" || k === "description" || k === "default") continue; // annotations
    if ((k === "properties" || k === "$defs" || k === "definitions") && v && typeof v === "object")
      o[k === "definitions" ? "$defs" : k] = Object.fromEntries(Object.entries(v).map(([n, s]) => [n, normalizeSchema(s)]));
    else o[k === "anyOf" ? "oneOf" : k] = normalizeSchema(v);
  }
  return o;
}

async function complete(body) {
  let grammar;
  const rf = body.response_format;
  if (rf?.type === "json_schema" && rf.json_schema?.schema) {
    const schema = normalizeSchema(rf.json_schema.schema);
    grammar = JSON_WS === "pretty" ? await llama.createGrammarForJsonSchema(schema)
      : await llama.createGrammar({grammar: getGbnfGrammarForGbnfJsonSchema(schema, {allowNewLines: false}), stopGenerationTriggers: [LlamaText(["\n".repeat(4)])], trimWhitespaceSuffix: true});
  }
  else if (rf?.type === "json_object") grammar = jsonGrammar;
  const chat = new LlamaChat({contextSequence: sequence, autoDisposeSequence: false});
  try {
    const started = Date.now();
    const res = await chat.generateResponse(toHistory(body.messages || []), {
      grammar,
      maxTokens: body.max_tokens ?? body.max_completion_tokens ?? 512,
      temperature: body.temperature ?? 0,
      topP: body.top_p,
      seed: body.seed,
    });
    const text = res.response;
    const completionTokens = model.tokenize(text).length;
    const promptTokens = Math.max(0, sequence.nextTokenIndex - completionTokens);
    return {
      id: "chatcmpl-" + Math.random().toString(36).slice(2),
      object: "chat.completion",
      created: Math.floor(Date.now() / 1000),
      model: MODEL_ID,
      choices: [{index: 0, message: {role: "assistant", content: text},
        finish_reason: res.metadata?.stopReason === "maxTokens" ? "length" : "stop"}],
      usage: {prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens},
      timings_ms: Date.now() - started,
    };
  } finally {
    chat.dispose({disposeSequence: false});
    await sequence.clearHistory();
  }
}

http.createServer(async (req, res) => {
  const send = (code, obj) => { res.writeHead(code, {"content-type": "application/json"}); res.end(JSON.stringify(obj)); };
  try {
    if (req.method === "GET" && (req.url === "/v1/models" || req.url === "/health")) {
      return send(200, req.url === "/health" ? {status: "ok"} : {object: "list", data: [{id: MODEL_ID, object: "model", owned_by: "local"}]});
    }
    if (req.method === "POST" && req.url === "/v1/chat/completions") {
      let raw = ""; for await (const c of req) raw += c;
      const body = JSON.parse(raw);
      if (body.stream) return send(400, {error: {message: "stream not supported by this shim"}});
      const out = await serialize(() => complete(body));
      return send(200, out);
    }
    send(404, {error: {message: "not found"}});
  } catch (e) {
    console.error(e);
    send(500, {error: {message: String(e?.message || e)}});
  }
}).listen(PORT, HOST);
