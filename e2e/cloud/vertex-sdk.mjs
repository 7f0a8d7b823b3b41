// A web agent on @anthropic-ai/vertex-sdk (AnthropicVertex): one tool loop
// (see loop.mjs) against BASE_URL (the host; the SDK's base URL is
// BASE_URL/v1), with the access token in VERTEX_TOKEN (through focusgate,
// the gateway key).
//
//   VERTEX_TOKEN=ya29... node cloud/vertex-sdk.mjs BASE_URL PAGE_URL
import { args, run, anthropicAdapter } from "./loop.mjs";
import { vertexClients } from "./lib.mjs";

const { base, page } = args("cloud/vertex-sdk.mjs");
const client = vertexClients(base, process.env.VERTEX_TOKEN).token;
await run({ client: "vertex-sdk", page, adapter: anthropicAdapter(client, "claude-sonnet-4-5@20250929") });
