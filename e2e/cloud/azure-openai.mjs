// A web agent on the openai package's AzureOpenAI (or the plain OpenAI
// client on the resource's /openai/v1/): one tool loop (see loop.mjs)
// against BASE_URL (the resource's endpoint). AUTH is CREDENTIAL-API:
// apikey, entra (an Entra ID token provider), v1 (OpenAI client, key in
// api-key), or, through focusgate with the gateway key of GATEWAY_KEY,
// gateway (AzureOpenAI) or gatewayv1 (OpenAI on /openai/v1/); and chat (chat
// completions) or responses.
//
//   node cloud/azure-openai.mjs BASE_URL PAGE_URL apikey-chat
import { args, run, SYSTEM } from "./loop.mjs";
import { azureClients, throughGateway } from "./lib.mjs";

const { base, page, auth } = args("cloud/azure-openai.mjs");
const [cred, api] = (auth || "apikey-chat").split("-");
const { client, model } =
  cred === "gateway" ? throughGateway.azure(base) : cred === "gatewayv1" ? throughGateway.azureV1(base) : azureClients(base)[cred];

// chat: the first step streamed, the others not.
const chat = {
  start(tools, task) {
    return {
      tools: tools.map((t) => ({ type: "function", function: { name: t.name, description: t.description, parameters: t.inputSchema } })),
      messages: [
        { role: "system", content: SYSTEM },
        { role: "user", content: task },
      ],
    };
  },
  addCall(conv, id, name, input, result) {
    conv.messages.push({ role: "assistant", content: null, tool_calls: [{ id, type: "function", function: { name, arguments: JSON.stringify(input) } }] });
    conv.messages.push({ role: "tool", tool_call_id: id, content: result });
  },
  async ask(conv, step) {
    const req = { model, messages: conv.messages, tools: conv.tools };
    if (step > 0) {
      const m = (await client.chat.completions.create(req)).choices[0].message;
      return { calls: (m.tool_calls ?? []).map((c) => ({ id: c.id, name: c.function.name, input: JSON.parse(c.function.arguments) })), text: m.content ?? "" };
    }
    const calls = [];
    let text = "";
    for await (const chunk of await client.chat.completions.create({ ...req, stream: true, stream_options: { include_usage: true } })) {
      const d = chunk.choices[0]?.delta;
      text += d?.content ?? "";
      for (const tc of d?.tool_calls ?? []) {
        calls[tc.index] ??= { id: "", name: "", args: "" };
        calls[tc.index].id += tc.id ?? "";
        calls[tc.index].name += tc.function?.name ?? "";
        calls[tc.index].args += tc.function?.arguments ?? "";
      }
    }
    return { calls: calls.map((c) => ({ id: c.id, name: c.name, input: JSON.parse(c.args || "{}") })), text };
  },
};

// responses: the first step streamed, the others not.
const responses = {
  start(tools, task) {
    return {
      tools: tools.map((t) => ({ type: "function", name: t.name, description: t.description, parameters: t.inputSchema, strict: false })),
      input: [{ role: "user", content: task }],
    };
  },
  addCall(conv, id, name, input, result) {
    conv.input.push({ type: "function_call", call_id: id, name, arguments: JSON.stringify(input) });
    conv.input.push({ type: "function_call_output", call_id: id, output: result });
  },
  async ask(conv, step) {
    const req = { model, instructions: SYSTEM, input: conv.input, tools: conv.tools };
    let resp;
    if (step > 0) {
      resp = await client.responses.create(req);
    } else {
      for await (const ev of await client.responses.create({ ...req, stream: true })) {
        if (ev.type === "response.completed") resp = ev.response;
      }
    }
    const calls = resp.output.filter((o) => o.type === "function_call").map((o) => ({ id: o.call_id, name: o.name, input: JSON.parse(o.arguments) }));
    const text = resp.output
      .filter((o) => o.type === "message")
      .flatMap((o) => o.content)
      .map((c) => c.text ?? "")
      .join("");
    return { calls, text };
  },
};

await run({ client: `azure-openai/${cred}-${api ?? "chat"}`, page, adapter: api === "responses" ? responses : chat });
