// Serves e2e/pages/ on loopback.
import { createServer } from "node:http";
import { readFileSync } from "node:fs";
import { join, dirname, basename } from "node:path";
import { fileURLToPath } from "node:url";

const dir = join(dirname(fileURLToPath(import.meta.url)), "..", "pages");

export async function startPages() {
  const server = createServer((req, res) => {
    const name = basename(new URL(req.url, "http://x").pathname) || "shop.html";
    try {
      const body = readFileSync(join(dir, name.endsWith(".html") ? name : "list.html"));
      res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
      res.end(body);
    } catch {
      res.writeHead(404);
      res.end("not found");
    }
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  return { url: `http://127.0.0.1:${server.address().port}`, close: () => new Promise((r) => server.close(r)) };
}
