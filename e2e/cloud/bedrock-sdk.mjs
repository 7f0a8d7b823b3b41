// A web agent on @anthropic-ai/bedrock-sdk (AnthropicBedrock): one tool loop
// (see loop.mjs) against BASE_URL, authenticated by AUTH: sigv4 (AWS keys,
// the SDK signs), apikey (a Bedrock API key), skipauth, or gateway (through
// focusgate: no signing, the gateway key of GATEWAY_KEY as a bearer token).
//
//   node cloud/bedrock-sdk.mjs BASE_URL PAGE_URL sigv4
import { args, run, anthropicAdapter } from "./loop.mjs";
import { bedrockClients, throughGateway } from "./lib.mjs";

const { base, page, auth } = args("cloud/bedrock-sdk.mjs");
const client = auth === "gateway" ? throughGateway.bedrock(base) : bedrockClients(base)[auth || "sigv4"];
await run({ client: `bedrock-sdk/${auth || "sigv4"}`, page, adapter: anthropicAdapter(client, "us.anthropic.claude-sonnet-4-5-20250929-v1:0") });
