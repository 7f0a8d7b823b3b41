// Runs one task with the Claude Agent SDK's query() and a stdio MCP server, as
// an application built on the SDK would, and prints the final result message
// as one JSON line; exits non-zero when the run does not succeed. The SDK
// reaches the model at ANTHROPIC_BASE_URL (the end-to-end test points it at
// the gateway).
//
//   node claude-agent-sdk.mjs <task> <mcp-servers.json> <allowed-tools,...>
import { readFileSync } from "node:fs";
import { query } from "@anthropic-ai/claude-agent-sdk";

const [task, serversFile, allowed] = process.argv.slice(2);
if (!task || !serversFile || !allowed) {
  console.error("usage: node claude-agent-sdk.mjs <task> <mcp-servers.json> <allowed-tools,...>");
  process.exit(2);
}
let result;
for await (const message of query({
  prompt: task,
  options: {
    model: "claude-sonnet-4-5",
    mcpServers: JSON.parse(readFileSync(serversFile, "utf8")),
    allowedTools: allowed.split(","),
    permissionMode: "dontAsk", // the allowed tools run, any other is refused
    settingSources: [],
    cwd: process.cwd(),
    stderr: (line) => process.stderr.write(line),
  },
})) {
  if (message.type === "result") result = message;
}
console.log(JSON.stringify(result ?? { subtype: "no result" }));
process.exit(result?.subtype === "success" ? 0 : 1);
