// Captures what real web-agent tools send to an OpenAI-compatible endpoint:
// each scenario runs a real tool against the local pages with the fake model,
// and every request body is written verbatim to <out>/<tool>/<scenario>/.
// Tool results (the raw page snapshots) go to <out>/<tool>/<scenario>/snapshot-NN.txt.
//
//   node capture.mjs [out-dir] [scenario-filter]
import { mkdirSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { startFakeModel } from "./lib/fakemodel.mjs";
import { startPages } from "./lib/pages.mjs";
import { scenarios } from "./lib/scenarios.mjs";

const out = resolve(process.argv[2] ?? "captures");
const filter = process.argv[3] ?? "";
const pages = await startPages();
const model = await startFakeModel({ recordDir: out, log: process.env.DEBUG ? console.error : () => {} });
let failed = 0;
for (const sc of scenarios) {
  const label = `${sc.tool}/${sc.name}`;
  if (!label.includes(filter)) continue;
  model.setLabel(label);
  let snaps = 0;
  const onToolResult = (name, result) => {
    const text = (result.content ?? []).filter((p) => p.type === "text").map((p) => p.text).join("\n");
    mkdirSync(join(out, label), { recursive: true });
    writeFileSync(join(out, label, `snapshot-${String(++snaps).padStart(2, "0")}-${name}.txt`), text);
  };
  const t0 = Date.now();
  try {
    const r = await sc.run({ baseURL: model.url, pages: pages.url, onToolResult });
    if (sc.tool === "stagehand") writeStagehandTrees(join(out, label), model.records.filter((r) => r.label === label));
    console.log(`ok   ${label} (${((Date.now() - t0) / 1000).toFixed(1)}s): ${JSON.stringify(r).slice(0, 160)}`);
  } catch (e) {
    failed++;
    console.log(`FAIL ${label}: ${e.stack}`);
  }
}
await model.close();
await pages.close();
process.exit(failed ? 1 : 0);

// writeStagehandTrees saves the text of each request's user message: Stagehand
// builds the page tree itself and sends it only to the model.
function writeStagehandTrees(dir, records) {
  records.forEach((r, i) => {
    const body = JSON.parse(r.raw.toString("utf8"));
    const msgs = body.messages ?? body.input ?? [];
    const user = msgs.filter((m) => m.role === "user").at(-1);
    if (!user) return;
    const text = typeof user.content === "string" ? user.content : user.content.map((p) => p.text ?? "").join("\n");
    writeFileSync(join(dir, `snapshot-${String(i + 1).padStart(2, "0")}-${r.name.replace(/\.json$/, "")}-user.txt`), text);
  });
}
