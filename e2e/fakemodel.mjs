// Runs the fake action model (lib/fakemodel.mjs) as a process: it records every
// request body to <record-dir>/<label>/ and prints its base URL as the first
// line on stdout. It stops when stdin closes, so it never outlives its parent.
//
//   node fakemodel.mjs <record-dir> [label]
import { startFakeModel } from "./lib/fakemodel.mjs";

const [recordDir, label = "run"] = process.argv.slice(2);
if (!recordDir) {
  console.error("usage: node fakemodel.mjs <record-dir> [label]");
  process.exit(2);
}
const model = await startFakeModel({ recordDir, log: (m) => console.error(m) });
model.setLabel(label);
console.log(model.url);
process.stdin.resume();
process.stdin.on("end", async () => {
  await model.close();
  process.exit(0);
});
