// A fake OpenAI-compatible action model. It records every request body
// verbatim and answers with scripted steps, chosen from what the request itself
// holds (the tools offered, the tool results so far, the page tree), so the
// same server serves every tool without per-test state. It speaks chat
// completions and the Responses API, streamed (SSE) and not.
import { createServer } from "node:http";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

// startFakeModel listens on 127.0.0.1 and writes request k of the current
// label to <recordDir>/<label>/NN-<label>-<endpoint>.json.
export async function startFakeModel({ recordDir, log = () => {} } = {}) {
  let label = "default";
  const counters = new Map();
  const records = [];
  const server = createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const raw = Buffer.concat(chunks);
      let body;
      try {
        body = JSON.parse(raw.toString("utf8"));
      } catch (e) {
        res.writeHead(400, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: { message: "bad json" } }));
        return;
      }
      const endpoint = req.url.includes("/responses") ? "responses" : "chat";
      const n = (counters.get(label) ?? 0) + 1;
      counters.set(label, n);
      const name = `${String(n).padStart(2, "0")}-${endpoint}${body.stream ? "-stream" : ""}.json`;
      records.push({ label, name, endpoint, raw, headers: req.headers });
      if (recordDir) {
        mkdirSync(join(recordDir, label), { recursive: true });
        writeFileSync(join(recordDir, label, name), raw);
      }
      let step;
      try {
        step = decide(body, endpoint);
      } catch (e) {
        log(`fake model: ${e.stack}`);
        res.writeHead(500, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: { message: `fake model: ${e.message}`, type: "server_error" } }));
        return;
      }
      log(`fake model ${label} ${name}: ${JSON.stringify(step).slice(0, 200)}`);
      reply(res, body, endpoint, step);
    });
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${server.address().port}/v1`,
    setLabel(l) {
      label = l;
    },
    records,
    close: () => new Promise((r) => server.close(r)),
  };
}

// ---- deciding the next step -------------------------------------------------

// allText returns every string in the request, and JSON-decoded forms of
// strings that hold JSON, so a tree is found whether it is plain or escaped.
function allText(v, out = []) {
  if (typeof v === "string") {
    out.push(v);
    const t = v.trimStart();
    if (t.startsWith("[") || t.startsWith("{")) {
      try {
        allText(JSON.parse(v), out);
      } catch {}
    }
  } else if (Array.isArray(v)) v.forEach((x) => allText(x, out));
  else if (v && typeof v === "object") Object.values(v).forEach((x) => allText(x, out));
  return out;
}

function lastMatch(texts, re) {
  let m = null;
  for (const t of texts) for (const x of t.matchAll(new RegExp(re, "g"))) m = x;
  return m;
}

function toolNames(body) {
  return (body.tools ?? []).map((t) => t.function?.name ?? t.name).filter(Boolean);
}

// toolResults counts the tool results the conversation holds so far.
function toolResults(body) {
  if (Array.isArray(body.messages)) return body.messages.filter((m) => m.role === "tool").length;
  if (Array.isArray(body.input)) return body.input.filter((i) => i.type === "function_call_output").length;
  return 0;
}

function pagesBase(texts) {
  const m = lastMatch(texts, String.raw`(http://127\.0\.0\.1:\d+)/shop\.html`);
  if (!m) throw new Error("no page URL in the request");
  return m[1];
}

function decide(body, endpoint) {
  const tools = toolNames(body);
  const texts = allText(body.messages ?? body.input ?? []);
  if (tools.includes("browser_snapshot")) return playwrightStep(body, texts);
  if (tools.includes("take_snapshot")) return devtoolsStep(body, texts, tools);
  const schema = responseSchema(body);
  if (schema) return { json: stagehandObject(schema, texts) };
  return { text: "Done." };
}

// playwrightStep drives @playwright/mcp: open the shop, snapshot, add to cart,
// snapshot again, fill the checkout form, open the list, save an item, then
// answer: four snapshots of three pages in one conversation.
function playwrightStep(body, texts) {
  const base = pagesBase(texts);
  const ref = (re) => {
    const m = lastMatch(texts, re);
    if (!m) throw new Error(`no ref for ${re}`);
    return m[1];
  };
  // Quotes may arrive escaped once more when a loop JSON-encodes tool results.
  const q = String.raw`\\*"`;
  const refOf = (role, name) => ref(`${role} ${q}${name}${q}(?: \\[[^\\]\\n]*\\])* \\[ref=([a-z0-9]+)\\]`);
  const steps = [
    () => ({ call: "browser_navigate", args: { url: `${base}/shop.html` } }),
    () => ({ call: "browser_snapshot", args: {} }),
    () => ({ call: "browser_click", args: { element: "Add to cart button", target: refOf("button", "Add to cart") } }),
    () => ({ call: "browser_snapshot", args: {} }),
    () => ({ call: "browser_navigate", args: { url: `${base}/form.html` } }),
    () => ({ call: "browser_snapshot", args: {} }),
    () => ({ call: "browser_type", args: { element: "First name field", target: refOf("textbox", "First name"), text: "Ada" } }),
    () => ({ call: "browser_navigate", args: { url: `${base}/list.html` } }),
    () => ({ call: "browser_snapshot", args: {} }),
    () => ({ call: "browser_click", args: { element: "Save button", target: refOf("button", "Save Meadow Helmet 108") } }),
  ];
  const k = toolResults(body);
  if (k < steps.length) return steps[k]();
  return { text: "Added the parka to the cart, filled in the first name and saved the helmet." };
}

// devtoolsStep drives chrome-devtools-mcp: list the pages, open the shop,
// snapshot, click "Add to cart" asking for a snapshot in the result, open the
// form, snapshot, fill a field, answer.
function devtoolsStep(body, texts, tools) {
  const base = pagesBase(texts, true);
  const uid = (role, name) => {
    const m = lastMatch(texts, `uid=(\\S+) ${role} \\\\*"${name}\\\\*"`);
    if (!m) throw new Error(`no uid for ${role} ${name}`);
    return m[1];
  };
  const pageId = () => {
    const m = lastMatch(texts, String.raw`(\d+): [^\n]*\[selected\]`);
    if (!m) throw new Error("no selected page");
    return Number(m[1]);
  };
  const steps = [
    () => ({ call: "list_pages", args: {} }),
    () => ({ call: "navigate_page", args: { pageId: pageId(), type: "url", url: `${base}/shop.html` } }),
    () => ({ call: "take_snapshot", args: { pageId: pageId() } }),
    () => ({ call: "click", args: { pageId: pageId(), uid: uid("button", "Add to cart"), includeSnapshot: true } }),
    () => ({ call: "navigate_page", args: { pageId: pageId(), type: "url", url: `${base}/form.html` } }),
    () => ({ call: "take_snapshot", args: { pageId: pageId() } }),
    () => ({ call: "fill", args: { pageId: pageId(), uid: uid("textbox", "First name"), value: "Ada" } }),
  ];
  const k = toolResults(body);
  if (k < steps.length) return steps[k]();
  return { text: "Added the parka to the cart and filled in the first name." };
}

// ---- Stagehand: structured outputs -------------------------------------------

function responseSchema(body) {
  const rf = body.response_format ?? body.text?.format;
  if (!rf || rf.type !== "json_schema") return null;
  return rf.json_schema?.schema ?? rf.schema ?? null;
}

// stagehandObject fills the schema Stagehand asks for. Element ids come from the
// tree line whose name the instruction quotes, so act and observe pick the
// element a real model would.
function stagehandObject(schema, texts) {
  const instr = lastMatch(texts, String.raw`[Ii]nstruction:\s*([^\n]*)`)?.[1] ?? "";
  let id = null;
  for (const [, quoted] of instr.matchAll(/['‘"“]([^'’"”]+)['’"”]/g)) {
    const esc = quoted.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    id ??= lastMatch(texts, String.raw`\[(\d+-\d+)\] [a-z]+: ${esc}`)?.[1] ?? null;
  }
  id ??= lastMatch(texts, String.raw`\[(\d+-\d+)\] button: `)?.[1] ?? "0-1";
  const fill = /\b(type|fill|enter)\b/i.test(instr);
  const ctx = { id, fill, instr };
  return value(schema, "", ctx, schema);
}

function deref(s, root) {
  if (s && s.$ref) {
    const path = s.$ref.replace(/^#\//, "").split("/");
    let t = root;
    for (const p of path) t = t?.[p];
    return deref(t, root);
  }
  return s;
}

function value(s, key, ctx, root) {
  s = deref(s, root) ?? {};
  if (s.anyOf || s.oneOf) return value((s.anyOf ?? s.oneOf).find((x) => deref(x, root)?.type !== "null") ?? {}, key, ctx, root);
  if (s.enum) return key === "method" && s.enum.includes(ctx.fill ? "fill" : "click") ? (ctx.fill ? "fill" : "click") : s.enum[0];
  const type = Array.isArray(s.type) ? s.type.find((t) => t !== "null") : s.type;
  switch (type) {
    case "object": {
      const o = {};
      for (const [k, v] of Object.entries(s.properties ?? {})) o[k] = value(v, k, ctx, root);
      return o;
    }
    case "array":
      if (key === "arguments") return ctx.fill ? ["Ada"] : [];
      return [value(s.items ?? {}, key, ctx, root)];
    case "number":
    case "integer":
      return 1;
    case "boolean":
      return key === "completed";
    default:
      if (/elementid/i.test(key)) return ctx.id;
      if (key === "method") return ctx.fill ? "fill" : "click";
      if (key === "progress") return "done";
      if (/price/i.test(key)) return "$249.00";
      if (/title|name|product/i.test(key)) return "Summit Parka 2000";
      return `the element for: ${ctx.instr.slice(0, 60)}`;
  }
}

// ---- replies -------------------------------------------------------------------

let seq = 0;

function reply(res, body, endpoint, step) {
  const id = ++seq;
  const model = body.model ?? "gpt-4.1-mini";
  const text = step.json !== undefined ? JSON.stringify(step.json) : step.text;
  const call = step.call ? { id: `call_${id}`, name: step.call, arguments: JSON.stringify(step.args) } : null;
  if (endpoint === "chat") return body.stream ? chatStream(res, model, id, text, call) : chatJSON(res, model, id, text, call);
  return body.stream ? responsesStream(res, model, id, text, call) : json(res, responseObject(model, id, text, call));
}

function json(res, v) {
  res.writeHead(200, { "content-type": "application/json" });
  res.end(JSON.stringify(v));
}

const usage = { prompt_tokens: 1000, completion_tokens: 20, total_tokens: 1020 };

function chatJSON(res, model, id, text, call) {
  const message = call
    ? { role: "assistant", content: null, tool_calls: [{ id: call.id, type: "function", function: { name: call.name, arguments: call.arguments } }] }
    : { role: "assistant", content: text };
  json(res, {
    id: `chatcmpl-${id}`,
    object: "chat.completion",
    created: 1760000000,
    model,
    choices: [{ index: 0, message, logprobs: null, finish_reason: call ? "tool_calls" : "stop" }],
    usage,
  });
}

function sse(res) {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
}

function chatStream(res, model, id, text, call) {
  sse(res);
  const chunk = (delta, finish = null, extra = {}) =>
    res.write(`data: ${JSON.stringify({ id: `chatcmpl-${id}`, object: "chat.completion.chunk", created: 1760000000, model, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }], ...extra })}\n\n`);
  if (call) {
    chunk({ role: "assistant", content: null, tool_calls: [{ index: 0, id: call.id, type: "function", function: { name: call.name, arguments: "" } }] });
    const half = Math.floor(call.arguments.length / 2);
    chunk({ tool_calls: [{ index: 0, function: { arguments: call.arguments.slice(0, half) } }] });
    chunk({ tool_calls: [{ index: 0, function: { arguments: call.arguments.slice(half) } }] });
    chunk({}, "tool_calls");
  } else {
    chunk({ role: "assistant", content: "" });
    chunk({ content: text });
    chunk({}, "stop");
  }
  res.write(`data: ${JSON.stringify({ id: `chatcmpl-${id}`, object: "chat.completion.chunk", created: 1760000000, model, choices: [], usage })}\n\n`);
  res.end("data: [DONE]\n\n");
}

function outputItem(id, text, call) {
  return call
    ? { type: "function_call", id: `fc_${id}`, call_id: call.id, name: call.name, arguments: call.arguments, status: "completed" }
    : { type: "message", id: `msg_${id}`, role: "assistant", status: "completed", content: [{ type: "output_text", text, annotations: [], logprobs: [] }] };
}

function responseObject(model, id, text, call, status = "completed") {
  return {
    id: `resp_${id}`,
    object: "response",
    created_at: 1760000000,
    status,
    error: null,
    incomplete_details: null,
    instructions: null,
    model,
    output: status === "completed" ? [outputItem(id, text, call)] : [],
    parallel_tool_calls: true,
    tool_choice: "auto",
    tools: [],
    usage:
      status === "completed"
        ? { input_tokens: 1000, input_tokens_details: { cached_tokens: 0 }, output_tokens: 20, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 1020 }
        : null,
  };
}

function responsesStream(res, model, id, text, call) {
  sse(res);
  let n = 0;
  const ev = (type, data) => res.write(`event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: n++, ...data })}\n\n`);
  ev("response.created", { response: responseObject(model, id, text, call, "in_progress") });
  const item = outputItem(id, text, call);
  if (call) {
    ev("response.output_item.added", { output_index: 0, item: { ...item, arguments: "", status: "in_progress" } });
    ev("response.function_call_arguments.delta", { output_index: 0, item_id: item.id, delta: call.arguments });
    ev("response.function_call_arguments.done", { output_index: 0, item_id: item.id, arguments: call.arguments });
  } else {
    ev("response.output_item.added", { output_index: 0, item: { ...item, status: "in_progress", content: [] } });
    ev("response.content_part.added", { output_index: 0, item_id: item.id, content_index: 0, part: { type: "output_text", text: "", annotations: [] } });
    ev("response.output_text.delta", { output_index: 0, item_id: item.id, content_index: 0, delta: text, logprobs: [] });
    ev("response.output_text.done", { output_index: 0, item_id: item.id, content_index: 0, text, logprobs: [] });
    ev("response.content_part.done", { output_index: 0, item_id: item.id, content_index: 0, part: item.content[0] });
  }
  ev("response.output_item.done", { output_index: 0, item });
  ev("response.completed", { response: responseObject(model, id, text, call) });
  res.end();
}
