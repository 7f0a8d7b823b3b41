// The scenarios the captures and the end-to-end tests run: one real tool, used
// one way its users use it.
import { chatLoop, responsesLoop, agentsSDK, stagehand } from "./agents.mjs";

const pw = "playwright-mcp";
const cd = "chrome-devtools-mcp";

export const scenarios = [
  { tool: pw, name: "chat", run: (o) => chatLoop({ ...o, server: pw }) },
  { tool: pw, name: "chat-stream", run: (o) => chatLoop({ ...o, server: pw, stream: true }) },
  { tool: pw, name: "chat-json-content", run: (o) => chatLoop({ ...o, server: pw, mode: "json" }) },
  { tool: pw, name: "responses", run: (o) => responsesLoop({ ...o, server: pw }) },
  { tool: pw, name: "responses-stream-parts", run: (o) => responsesLoop({ ...o, server: pw, stream: true, mode: "parts" }) },
  { tool: pw, name: "responses-json-content", run: (o) => responsesLoop({ ...o, server: pw, mode: "json" }) },
  { tool: "openai-agents", name: "chat", run: (o) => agentsSDK({ ...o, server: pw }) },
  { tool: "openai-agents", name: "responses-stream", run: (o) => agentsSDK({ ...o, server: pw, api: "responses", stream: true }) },
  { tool: "stagehand", name: "responses", run: (o) => stagehand({ ...o, path: "responses" }) },
  { tool: "stagehand", name: "chat", run: (o) => stagehand({ ...o, path: "chat" }) },
  { tool: "stagehand", name: "legacy", run: (o) => stagehand({ ...o, path: "legacy" }) },
  { tool: cd, name: "chat", run: (o) => chatLoop({ ...o, server: cd }) },
  { tool: cd, name: "responses-stream", run: (o) => responsesLoop({ ...o, server: cd, stream: true }) },
];

export function scenario(label) {
  const s = scenarios.find((x) => `${x.tool}/${x.name}` === label);
  if (!s) throw new Error(`unknown scenario ${label}`);
  return s;
}
