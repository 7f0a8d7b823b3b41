// A web agent on the AI SDK (ai) with its Amazon Bedrock provider, which
// speaks Converse: one tool loop (see loop.mjs) against BASE_URL, the
// first step with streamText (converse-stream), the others with
// generateText (converse). AUTH is apikey (a Bedrock API key), sigv4, or
// gateway (through focusgate: the gateway key of GATEWAY_KEY as the API key).
//
//   node cloud/ai-sdk-bedrock.mjs BASE_URL PAGE_URL sigv4
import { generateText, streamText, jsonSchema, tool } from "ai";
import { args, run, SYSTEM } from "./loop.mjs";
import { aiSdkClients, throughGateway } from "./lib.mjs";

const { base, page, auth } = args("cloud/ai-sdk-bedrock.mjs");
const provider = auth === "gateway" ? throughGateway.aiSdkBedrock(base) : aiSdkClients(base)[auth || "sigv4"];
const model = provider("us.anthropic.claude-sonnet-4-5-20250929-v1:0");

const adapter = {
  start(tools, task) {
    // No execute: the loop performs the calls itself, as the other drivers do.
    const set = Object.fromEntries(tools.map((t) => [t.name, tool({ description: t.description, inputSchema: jsonSchema(t.inputSchema) })]));
    return { tools: set, messages: [{ role: "user", content: task }] };
  },
  addCall(conv, id, name, input, result) {
    conv.messages.push({ role: "assistant", content: [{ type: "tool-call", toolCallId: id, toolName: name, input }] });
    conv.messages.push({ role: "tool", content: [{ type: "tool-result", toolCallId: id, toolName: name, output: { type: "text", value: result } }] });
  },
  async ask(conv, step) {
    const req = { model, system: SYSTEM, messages: conv.messages, tools: conv.tools, maxRetries: 0 };
    let calls, text;
    if (step > 0) {
      const r = await generateText(req);
      [calls, text] = [r.toolCalls, r.text];
    } else {
      let failure;
      const r = streamText({ ...req, onError: ({ error }) => (failure = error) });
      [calls, text] = [await r.toolCalls, await r.text];
      if (failure) throw failure;
    }
    return { calls: calls.map((c) => ({ id: c.toolCallId, name: c.toolName, input: c.input })), text };
  },
};

await run({ client: `ai-sdk-bedrock/${auth || "sigv4"}`, page, adapter });
