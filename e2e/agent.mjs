// Runs one scenario (see lib/scenarios.mjs) against an OpenAI-compatible base
// URL and prints its result as one JSON line; exits non-zero when the agent
// does not finish. The end-to-end tests start it through the gateway.
//
//   node agent.mjs <tool/scenario> <base-url> <pages-url>
import { scenario } from "./lib/scenarios.mjs";

const [label, baseURL, pages] = process.argv.slice(2);
if (!label || !baseURL || !pages) {
  console.error("usage: node agent.mjs <tool/scenario> <base-url> <pages-url>");
  process.exit(2);
}
try {
  const result = await scenario(label).run({ baseURL, pages });
  console.log(JSON.stringify({ ok: true, result }));
  process.exit(0);
} catch (e) {
  console.error(e.stack);
  console.log(JSON.stringify({ ok: false, error: String(e.message ?? e) }));
  process.exit(1);
}
