// Sequential `tools/call`s of `calc` with the official MCP TypeScript SDK
// client over Streamable HTTP (keep-alive, a session), as an agent's client
// makes them. Prints the milliseconds of each timed call as JSON.
// Usage: node http_round_trip.mjs URL N
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const url = new URL(process.argv[2]);
const n = Number(process.argv[3] ?? 200);
const warmup = 10;
const client = new Client({ name: "toolwarden-bench", version: "0" });
await client.connect(new StreamableHTTPClientTransport(url));
const ms = [];
for (let i = 0; i < warmup + n; i++) {
  const started = performance.now();
  const result = await client.callTool({ name: "calc", arguments: { op: "mul", a: 6, b: i } });
  const took = performance.now() - started;
  if (result.isError) throw new Error(`the benchmarked call failed: ${JSON.stringify(result)}`);
  if (i >= warmup) ms.push(took);
}
await client.close();
console.log(JSON.stringify({ client: "typescript-sdk", ms }));
