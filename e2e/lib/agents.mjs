// Real web-agent tools, used the way their users use them, pointed at an
// OpenAI-compatible base URL (the gateway, or the fake model directly).
import { mkdtempSync, mkdirSync, writeFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import OpenAI from "openai";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const here = dirname(fileURLToPath(import.meta.url));
const modules = join(here, "..", "node_modules");
export const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";
// Chromium stalls on a machine without network unless these are set, and it
// refuses to run as root with its sandbox.
export const CHROME_ARGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-first-run",
  "--disable-dev-shm-usage",
];
// The action model: GPT-4.1 with a GPT-4.1-mini retriever is the setup
// FocusAgent measured, and the price gap that makes pruning pay.
const MODEL = "gpt-4.1";
const API_KEY = "sk-e2e-not-a-real-key";

function tempDir(prefix) {
  return mkdtempSync(join(tmpdir(), prefix));
}

// mcpServer returns the stdio command of a browser MCP server with a fresh profile.
export function mcpServer(kind) {
  const profile = tempDir(`fg-${kind}-`);
  if (kind === "playwright-mcp") {
    const config = join(profile, "config.json");
    writeFileSync(
      config,
      JSON.stringify({
        browser: {
          browserName: "chromium",
          userDataDir: join(profile, "user-data"),
          launchOptions: { executablePath: CHROMIUM, headless: true, chromiumSandbox: false, args: CHROME_ARGS },
        },
        outputDir: join(profile, "output"),
      }),
    );
    return { command: process.execPath, args: [join(modules, "@playwright/mcp/cli.js"), "--config", config], profile };
  }
  if (kind === "chrome-devtools-mcp") {
    return {
      command: process.execPath,
      args: [
        join(modules, "chrome-devtools-mcp/build/src/bin/chrome-devtools-mcp.js"),
        "--headless",
        "--executablePath",
        CHROMIUM,
        "--userDataDir",
        join(profile, "user-data"),
        "--usageStatistics=false",
        "--performanceCrux=false",
        ...CHROME_ARGS.map((a) => `--chromeArg=${a}`),
      ],
      profile,
      env: { CHROME_DEVTOOLS_MCP_NO_USAGE_STATISTICS: "1", CI: "1" },
    };
  }
  throw new Error(`unknown MCP server ${kind}`);
}

async function connectMCP(kind) {
  const s = mcpServer(kind);
  const transport = new StdioClientTransport({ command: s.command, args: s.args, env: { ...process.env, ...(s.env ?? {}) }, stderr: "pipe" });
  const client = new Client({ name: "focusgate-e2e", version: "1.0.0" });
  await client.connect(transport);
  return {
    client,
    async close() {
      await client.close().catch(() => {});
      rmSync(s.profile, { recursive: true, force: true });
    },
  };
}

function task(pages) {
  return `Open ${pages}/shop.html, add the Summit Parka 2000 to the cart, then go to ${pages}/form.html and fill in the first name "Ada", then open ${pages}/list.html and save the Meadow Helmet 108.`;
}

// toolContent is what a hand-written loop puts in the tool message: the text
// parts joined, the MCP parts as they are, or the MCP parts JSON-encoded.
function toolContent(result, mode) {
  const parts = result.content ?? [];
  switch (mode) {
    case "json":
      return JSON.stringify(parts);
    case "parts":
      return parts.filter((p) => p.type === "text").map((p) => ({ type: "text", text: p.text }));
    default:
      return parts.filter((p) => p.type === "text").map((p) => p.text).join("\n");
  }
}

// chatLoop is the tool loop people write with the openai SDK and chat completions.
export async function chatLoop({ baseURL, pages, server, stream = false, mode = "text", onToolResult = () => {}, maxSteps = 12 }) {
  const mcp = await connectMCP(server);
  try {
    const { tools } = await mcp.client.listTools();
    const openai = new OpenAI({ baseURL, apiKey: API_KEY, maxRetries: 0 });
    const chatTools = tools.map((t) => ({ type: "function", function: { name: t.name, description: t.description, parameters: t.inputSchema } }));
    const messages = [
      { role: "system", content: "You are a browser agent. Use the browser tools to do the user's task." },
      { role: "user", content: task(pages) },
    ];
    for (let step = 0; step < maxSteps; step++) {
      let msg;
      if (stream) {
        const s = await openai.chat.completions.create({ model: MODEL, messages, tools: chatTools, stream: true, stream_options: { include_usage: true } });
        msg = { role: "assistant", content: null, tool_calls: [] };
        let content = "";
        for await (const chunk of s) {
          const d = chunk.choices[0]?.delta;
          if (!d) continue;
          if (d.content) content += d.content;
          for (const tc of d.tool_calls ?? []) {
            const cur = (msg.tool_calls[tc.index] ??= { id: "", type: "function", function: { name: "", arguments: "" } });
            if (tc.id) cur.id = tc.id;
            if (tc.function?.name) cur.function.name += tc.function.name;
            if (tc.function?.arguments) cur.function.arguments += tc.function.arguments;
          }
        }
        if (content) msg.content = content;
        if (!msg.tool_calls.length) delete msg.tool_calls;
      } else {
        const r = await openai.chat.completions.create({ model: MODEL, messages, tools: chatTools });
        msg = r.choices[0].message;
      }
      messages.push(msg);
      if (!msg.tool_calls?.length) return { steps: step, answer: msg.content };
      for (const tc of msg.tool_calls) {
        const result = await mcp.client.callTool({ name: tc.function.name, arguments: JSON.parse(tc.function.arguments || "{}") });
        onToolResult(tc.function.name, result);
        messages.push({ role: "tool", tool_call_id: tc.id, content: toolContent(result, mode) });
      }
    }
    throw new Error("agent did not finish");
  } finally {
    await mcp.close();
  }
}

// responsesLoop is the same loop on the Responses API, resending the whole input.
export async function responsesLoop({ baseURL, pages, server, stream = false, mode = "text", onToolResult = () => {}, maxSteps = 12 }) {
  const mcp = await connectMCP(server);
  try {
    const { tools } = await mcp.client.listTools();
    const openai = new OpenAI({ baseURL, apiKey: API_KEY, maxRetries: 0 });
    const rtools = tools.map((t) => ({ type: "function", name: t.name, description: t.description, parameters: t.inputSchema, strict: false }));
    const input = [{ role: "user", content: task(pages) }];
    for (let step = 0; step < maxSteps; step++) {
      const params = { model: MODEL, instructions: "You are a browser agent. Use the browser tools to do the user's task.", input, tools: rtools, store: false };
      let response;
      if (stream) {
        const s = await openai.responses.create({ ...params, stream: true });
        for await (const ev of s) if (ev.type === "response.completed") response = ev.response;
      } else {
        response = await openai.responses.create(params);
      }
      const calls = response.output.filter((o) => o.type === "function_call");
      input.push(...response.output);
      if (!calls.length) return { steps: step, answer: response.output_text };
      for (const c of calls) {
        const result = await mcp.client.callTool({ name: c.name, arguments: JSON.parse(c.arguments || "{}") });
        onToolResult(c.name, result);
        const content = toolContent(result, mode);
        const output = Array.isArray(content) ? content.map((p) => ({ type: "input_text", text: p.text })) : content;
        input.push({ type: "function_call_output", call_id: c.call_id, output });
      }
    }
    throw new Error("agent did not finish");
  } finally {
    await mcp.close();
  }
}

// agentsSDK runs @openai/agents with the MCP server as its tool source.
export async function agentsSDK({ baseURL, pages, server, api = "chat_completions", stream = false }) {
  const agents = await import("@openai/agents");
  const { Agent, run, MCPServerStdio, setDefaultOpenAIClient, setOpenAIAPI, setTracingDisabled } = agents;
  setTracingDisabled(true);
  setDefaultOpenAIClient(new OpenAI({ baseURL, apiKey: API_KEY, maxRetries: 0 }));
  setOpenAIAPI(api);
  const s = mcpServer(server);
  const mcp = new MCPServerStdio({ command: s.command, args: s.args, env: { ...process.env, ...(s.env ?? {}) }, name: server });
  await mcp.connect();
  try {
    const agent = new Agent({ name: "browser agent", instructions: "You are a browser agent. Use the browser tools to do the user's task.", model: MODEL, mcpServers: [mcp] });
    const result = await run(agent, task(pages), { maxTurns: 12, stream });
    if (stream) await result.completed;
    return { answer: result.finalOutput };
  } finally {
    await mcp.close();
    rmSync(s.profile, { recursive: true, force: true });
  }
}

// stagehand runs Stagehand 3 in LOCAL mode: act, observe and extract on the shop
// page. path picks the model client: "responses" (AI SDK, the default for
// "openai/..." models), "chat" (AI SDK chat completions) or "legacy" (the
// deprecated bare model name, which uses the openai SDK's chat completions).
export async function stagehand({ baseURL, pages, path = "responses" }) {
  const { Stagehand } = await import("@browserbasehq/stagehand");
  const { z } = await import("zod");
  const profile = tempDir("fg-stagehand-");
  mkdirSync(join(profile, "user-data"));
  const model =
    path === "legacy"
      ? { modelName: MODEL, apiKey: API_KEY, baseURL }
      : { modelName: `openai/${MODEL}`, apiKey: API_KEY, baseURL, ...(path === "chat" ? { openaiEndpointFormat: "chat" } : {}) };
  const sh = new Stagehand({
    env: "LOCAL",
    model,
    verbose: 0,
    disablePino: true,
    selfHeal: false,
    localBrowserLaunchOptions: { executablePath: CHROMIUM, headless: true, chromiumSandbox: false, args: CHROME_ARGS, userDataDir: join(profile, "user-data") },
  });
  await sh.init();
  try {
    const page = sh.context.pages()[0];
    await page.goto(`${pages}/shop.html`);
    const observed = await sh.observe("find the 'Add to cart' button");
    await sh.act("click the 'Add to cart' button");
    const data = await sh.extract("extract the product 'Summit Parka 2000' title and price", z.object({ title: z.string(), price: z.string() }));
    await page.goto(`${pages}/form.html`);
    await sh.act("type 'Ada' into the 'First name' field");
    const firstName = await page.evaluate(() => document.getElementById("f0")?.value);
    if (!observed.length || firstName !== "Ada") throw new Error(`stagehand did not do its steps: observed ${observed.length}, first name ${JSON.stringify(firstName)}`);
    return { observed: observed.length, data, firstName };
  } finally {
    await sh.close().catch(() => {});
    rmSync(profile, { recursive: true, force: true });
  }
}
