// Sequential `tools/call`s of `calc` with the official MCP TypeScript SDK
// client over stdio, against several servers at once in interleaved rounds
// (the machine's speed drifts; taking turns compares like with like). The
// servers come as JSON on stdin: {"round": R, "n": N, "servers": [{"name",
// "command", "args", "env"}]}. Prints, as JSON, the microseconds of each
// timed call by server. Usage: node stdio_round_trip.mjs < spec.json
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const spec = JSON.parse(Buffer.concat(chunks).toString());
const rounds = Math.ceil(spec.n / spec.round);
const us = {};
const clients = [];
for (const server of spec.servers) {
  const client = new Client({ name: "toolwarden-bench", version: "0" });
  await client.connect(
    new StdioClientTransport({ command: server.command, args: server.args, env: server.env, stderr: "ignore" }),
  );
  clients.push([server.name, client]);
  us[server.name] = [];
}
// Round 0 warms up and is not kept.
for (let r = 0; r <= rounds; r++) {
  for (const [name, client] of clients) {
    for (let i = 0; i < spec.round; i++) {
      const started = performance.now();
      const result = await client.callTool({ name: "calc", arguments: { op: "mul", a: 6, b: 7 } });
      const took = (performance.now() - started) * 1e3;
      if (result.isError) throw new Error(`the benchmarked call failed on ${name}: ${JSON.stringify(result)}`);
      if (r > 0) us[name].push(took);
    }
  }
}
for (const [, client] of clients) await client.close();
console.log(JSON.stringify({ client: "typescript-sdk", us }));
