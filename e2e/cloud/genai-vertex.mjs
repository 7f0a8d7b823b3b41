// A web agent on Google's Gen AI SDK (@google/genai) on Vertex AI: one tool
// loop (see loop.mjs) against BASE_URL, the first step with
// generateContentStream, the others with generateContent, with the access
// token in VERTEX_TOKEN (through focusgate, the gateway key). With AUTH
// "express", VERTEX_TOKEN is an API key of Vertex AI's express mode.
//
//   VERTEX_TOKEN=ya29... node cloud/genai-vertex.mjs BASE_URL PAGE_URL [express]
import { args, run, SYSTEM } from "./loop.mjs";
import { genaiClients } from "./lib.mjs";

const { base, page, auth } = args("cloud/genai-vertex.mjs");
const clients = genaiClients(base, process.env.VERTEX_TOKEN);
const ai = auth === "express" ? clients.express : clients.token;
const model = "gemini-2.5-flash";

const adapter = {
  start(tools, task) {
    return {
      tools: [{ functionDeclarations: tools.map((t) => ({ name: t.name, description: t.description, parametersJsonSchema: t.inputSchema })) }],
      contents: [{ role: "user", parts: [{ text: task }] }],
    };
  },
  addCall(conv, id, name, input, result) {
    conv.contents.push({ role: "model", parts: [{ functionCall: { name, args: input } }] });
    conv.contents.push({ role: "user", parts: [{ functionResponse: { name, response: { output: result } } }] });
  },
  async ask(conv, step) {
    const req = { model, contents: conv.contents, config: { systemInstruction: SYSTEM, tools: conv.tools } };
    let calls = [];
    let text = "";
    if (step > 0) {
      const r = await ai.models.generateContent(req);
      [calls, text] = [r.functionCalls ?? [], r.text ?? ""];
    } else {
      for await (const chunk of await ai.models.generateContentStream(req)) {
        calls.push(...(chunk.functionCalls ?? []));
        text += chunk.text ?? "";
      }
    }
    return { calls: calls.map((c, i) => ({ id: c.id ?? `call_${step}_${i}`, name: c.name, input: c.args ?? {} })), text };
  },
};

await run({ client: "genai-vertex", page, adapter });
