// Sends one small request of each kind with each cloud client (streamed
// and not, with each way of giving credentials), to the fake clouds whose
// base URLs it is given, so that they record what the clients really send
// (see testdata/agents/CLOUDS.md). Run it against `go run
// ./internal/cloudtest/cloudrecord`, which prints the variables it reads:
//
//   BEDROCK=... VERTEX=... AZURE=... VERTEX_TOKEN=... node cloud/capture.mjs [client...]
//
// The credentials are the fakes' obvious test values. It prints one line
// per call: the client, the call and what the model answered.
import { bedrockClients, vertexClients, azureClients, aiSdkClients, genaiClients } from "./lib.mjs";

const env = process.env;
const only = new Set(process.argv.slice(2));
const want = (name) => only.size === 0 || only.has(name);
const prompt = "Say OK.";

async function run(client, call, fn) {
  try {
    const text = await fn();
    console.log(JSON.stringify({ client, call, text }));
  } catch (e) {
    console.log(JSON.stringify({ client, call, error: String(e?.message ?? e).slice(0, 300) }));
  }
}

if (want("bedrock-sdk")) {
  for (const [auth, client] of Object.entries(bedrockClients(env.BEDROCK))) {
    const model = "us.anthropic.claude-sonnet-4-5-20250929-v1:0";
    await run("bedrock-sdk", `${auth} create`, async () => {
      const m = await client.messages.create({ model, max_tokens: 64, messages: [{ role: "user", content: prompt }] });
      return m.content[0]?.text;
    });
    await run("bedrock-sdk", `${auth} stream`, async () => {
      const s = client.messages.stream({ model, max_tokens: 64, messages: [{ role: "user", content: prompt }] });
      return (await s.finalMessage()).content[0]?.text;
    });
    await run("bedrock-sdk", `${auth} countTokens`, async () => {
      const c = await client.messages.countTokens({ model, messages: [{ role: "user", content: prompt }] });
      return String(c.input_tokens);
    });
  }
}

if (want("vertex-sdk")) {
  const client = vertexClients(env.VERTEX, env.VERTEX_TOKEN).token;
  const model = "claude-sonnet-4-5@20250929";
  await run("vertex-sdk", "create", async () => {
    const m = await client.messages.create({ model, max_tokens: 64, messages: [{ role: "user", content: prompt }] });
    return m.content[0]?.text;
  });
  await run("vertex-sdk", "stream", async () => {
    const s = client.messages.stream({ model, max_tokens: 64, messages: [{ role: "user", content: prompt }] });
    return (await s.finalMessage()).content[0]?.text;
  });
  await run("vertex-sdk", "countTokens", async () => {
    const c = await client.messages.countTokens({ model, messages: [{ role: "user", content: prompt }] });
    return String(c.input_tokens);
  });
}

if (want("azure-openai")) {
  for (const [auth, { client, model }] of Object.entries(azureClients(env.AZURE))) {
    await run("azure-openai", `${auth} chat`, async () => {
      const c = await client.chat.completions.create({ model, messages: [{ role: "user", content: prompt }] });
      return c.choices[0].message.content;
    });
    await run("azure-openai", `${auth} chat stream`, async () => {
      const s = await client.chat.completions.create({ model, messages: [{ role: "user", content: prompt }], stream: true, stream_options: { include_usage: true } });
      let text = "";
      for await (const c of s) text += c.choices[0]?.delta?.content ?? "";
      return text;
    });
    await run("azure-openai", `${auth} responses`, async () => (await client.responses.create({ model, input: prompt })).output_text);
    await run("azure-openai", `${auth} responses stream`, async () => {
      const s = await client.responses.create({ model, input: prompt, stream: true });
      let text = "";
      for await (const e of s) if (e.type === "response.output_text.delta") text += e.delta;
      return text;
    });
  }
}

if (want("ai-sdk-bedrock")) {
  const { generateText, streamText } = await import("ai");
  for (const [auth, provider] of Object.entries(aiSdkClients(env.BEDROCK))) {
    const model = provider("us.anthropic.claude-sonnet-4-5-20250929-v1:0");
    await run("ai-sdk-bedrock", `${auth} generateText`, async () => (await generateText({ model, prompt, maxRetries: 0 })).text);
    await run("ai-sdk-bedrock", `${auth} streamText`, async () => {
      const r = streamText({ model, prompt, maxRetries: 0, onError: () => {} });
      return await r.text;
    });
  }
}

if (want("genai-vertex")) {
  const ai = genaiClients(env.VERTEX, env.VERTEX_TOKEN).token;
  const model = "gemini-2.5-flash";
  await run("genai-vertex", "generateContent", async () => (await ai.models.generateContent({ model, contents: prompt })).text);
  await run("genai-vertex", "generateContentStream", async () => {
    let text = "";
    for await (const c of await ai.models.generateContentStream({ model, contents: prompt })) text += c.text ?? "";
    return text;
  });
  await run("genai-vertex", "countTokens", async () => String((await ai.models.countTokens({ model, contents: prompt })).totalTokens));
}
