// The tool loop every cloud driver runs, the way a web agent built on the
// cloud's SDK runs it: the agent opens the page in a real browser
// (Playwright MCP with Debian's chromium), sends the page's snapshot to the
// model as the result of a browser_snapshot call, performs the click the
// model answers with (by the ref the model read in the snapshot), sends
// the click's result back, and stops at the model's text. Each driver
// (bedrock-sdk.mjs, vertex-sdk.mjs, ...) supplies an adapter that speaks
// its SDK; this file holds what they share, and prints the one-line JSON
// summary the end-to-end test reads.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { rmSync } from "node:fs";
import { mcpServer } from "../lib/agents.mjs";

export const SYSTEM = "You are a browser agent. Use the browser tools to do the user's task.";

export function task(page) {
  return `Open ${page} and click "Place order".`;
}

// snapshotText is the text of an MCP tool result, its text parts joined.
function text(result) {
  return (result.content ?? [])
    .filter((p) => p.type === "text")
    .map((p) => p.text)
    .join("\n");
}

// run drives one conversation. adapter has:
//   start(tools, task): the conversation so far, with the user's task;
//   addCall(conv, id, name, input, resultText): appends a tool call the
//     model made (or the agent made on its behalf) and its result;
//   ask(conv, step): sends the conversation, returns { calls: [{ id,
//     name, input }], text }.
export async function run({ client, page, adapter, maxSteps = 4 }) {
  const s = mcpServer("playwright-mcp");
  const transport = new StdioClientTransport({ command: s.command, args: s.args, env: { ...process.env }, stderr: "pipe" });
  const mcp = new Client({ name: "focusgate-cloud-e2e", version: "1.0.0" });
  await mcp.connect(transport);
  const summary = { client, steps: 0, clicked: null, final: null };
  try {
    const { tools } = await mcp.listTools();
    const offered = tools.filter((t) => ["browser_snapshot", "browser_click"].includes(t.name));
    await mcp.callTool({ name: "browser_navigate", arguments: { url: page } });
    const snapshot = text(await mcp.callTool({ name: "browser_snapshot", arguments: {} }));
    const conv = adapter.start(offered, task(page));
    adapter.addCall(conv, "call_snapshot_0", "browser_snapshot", {}, snapshot);
    for (let step = 0; step < maxSteps; step++) {
      const answer = await adapter.ask(conv, step);
      summary.steps++;
      if (answer.calls.length === 0) {
        summary.final = answer.text;
        break;
      }
      for (const call of answer.calls) {
        const result = await mcp.callTool({ name: call.name, arguments: call.input });
        if (call.name === "browser_click") summary.clicked = call.input.target ?? call.input.ref ?? null;
        adapter.addCall(conv, call.id, call.name, call.input, text(result));
      }
    }
  } finally {
    await mcp.close().catch(() => {});
    rmSync(s.profile, { recursive: true, force: true });
  }
  console.log(JSON.stringify(summary));
  if (summary.final === null) process.exitCode = 1;
}

// args reads the driver's command line: the model API's base URL, the
// page's URL and the way to authenticate.
export function args(usage) {
  const [base, page, auth = ""] = process.argv.slice(2);
  if (!base || !page) {
    console.error(`usage: node ${usage} BASE_URL PAGE_URL [AUTH]`);
    process.exit(2);
  }
  return { base, page, auth };
}

// anthropicAdapter is the Messages API's conversation, for the Anthropic
// SDKs on Bedrock and Vertex: the first step streamed, the others not.
export function anthropicAdapter(client, model) {
  return {
    start(tools, task) {
      return {
        tools: tools.map((t) => ({ name: t.name, description: t.description, input_schema: t.inputSchema })),
        messages: [{ role: "user", content: task }],
      };
    },
    addCall(conv, id, name, input, result) {
      conv.messages.push({ role: "assistant", content: [{ type: "tool_use", id, name, input }] });
      conv.messages.push({ role: "user", content: [{ type: "tool_result", tool_use_id: id, content: result }] });
    },
    async ask(conv, step) {
      const req = { model, max_tokens: 1024, system: SYSTEM, tools: conv.tools, messages: conv.messages };
      const msg = step === 0 ? await client.messages.stream(req).finalMessage() : await client.messages.create(req);
      return {
        calls: msg.content.filter((b) => b.type === "tool_use").map((b) => ({ id: b.id, name: b.name, input: b.input })),
        text: msg.content.filter((b) => b.type === "text").map((b) => b.text).join(""),
      };
    },
  };
}
