// Captures the Converse bodies the AI SDK's Bedrock provider sends in a tool
// loop: a fake Bedrock answers with a toolUse, then with text.
import http from 'node:http';
import fs from 'node:fs';
import { generateText, tool, stepCountIs } from 'ai';
import { createAmazonBedrock } from '@ai-sdk/amazon-bedrock';
import { z } from 'zod';

const page = fs.readFileSync(process.argv[2], 'utf8');
const out = process.argv[3];
fs.mkdirSync(out, { recursive: true });
let n = 0;
const server = http.createServer((req, res) => {
  let body = '';
  req.on('data', c => (body += c));
  req.on('end', () => {
    n++;
    fs.writeFileSync(`${out}/${String(n).padStart(2, '0')}-converse.json`, body);
    const parsed = JSON.parse(body);
    const last = parsed.messages[parsed.messages.length - 1];
    const results = last.content.filter(b => b.toolResult).length;
    let message;
    if (n === 1) {
      message = { role: 'assistant', content: [{ text: 'Taking a snapshot first.' }, { toolUse: { toolUseId: 'tooluse_1', name: 'browser_snapshot', input: {} } }] };
    } else if (n === 2) {
      message = { role: 'assistant', content: [{ toolUse: { toolUseId: 'tooluse_2', name: 'page_state', input: { full: true } } }] };
    } else {
      message = { role: 'assistant', content: [{ text: 'Clicked Add to cart.' }] };
    }
    const stop = n <= 2 ? 'tool_use' : 'end_turn';
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ output: { message }, stopReason: stop, usage: { inputTokens: 100, outputTokens: 10, totalTokens: 110 }, metrics: { latencyMs: 1 } }));
  });
});
await new Promise(r => server.listen(0, '127.0.0.1', r));
const bedrock = createAmazonBedrock({
  region: 'us-east-1',
  baseURL: `http://127.0.0.1:${server.address().port}`,
  accessKeyId: 'AKIDEXAMPLE',
  secretAccessKey: 'secret',
});
await generateText({
  model: bedrock('us.anthropic.claude-sonnet-4-5-20250929-v1:0'),
  system: 'You are a browsing agent. Use the tools to act on the page.',
  prompt: 'Add the Summit Parka to the cart.',
  tools: {
    // A tool whose result is the snapshot text (as an MCP text result is
    // passed on).
    browser_snapshot: tool({
      description: 'Capture the accessibility snapshot of the page',
      inputSchema: z.object({}),
      execute: async () => page,
    }),
    // A tool whose result is a JSON object holding the page: the AI SDK
    // stringifies it into a text block.
    page_state: tool({
      description: 'The page state as JSON',
      inputSchema: z.object({ full: z.boolean() }),
      execute: async () => ({ url: 'http://127.0.0.1:19081/shop', snapshot: page }),
    }),
  },
  stopWhen: stepCountIs(5),
});
server.close();
console.log(`captured ${n} requests`);
