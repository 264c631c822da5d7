// The official TypeScript SDK's 2025-11-25 tasks (`client.experimental.tasks`)
// against `toolwarden serve`: argv[2] is an /mcp URL, or `stdio` with the
// binary in argv[3] (its environment is this process's). Prints, as JSON,
// what the client saw; tests/mcp/test_ts_tasks.py judges it. It lives here,
// beside the suite, so that Node resolves the SDK pinned in this package.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const [target, binary] = process.argv.slice(2);
const transport = target === "stdio"
  ? new StdioClientTransport({ command: binary, args: ["serve"], env: process.env, stderr: "ignore" })
  : new StreamableHTTPClientTransport(new URL(target));
const client = new Client({ name: "ts-tasks", version: "0" }, { capabilities: { elicitation: { form: {} } } });
const asked = [];
client.setRequestHandler(ElicitRequestSchema, async (request) => {
  const fields = Object.keys(request.params.requestedSchema?.properties ?? {});
  asked.push({ fields, task: request.params._meta?.["io.modelcontextprotocol/related-task"]?.taskId ?? null });
  // The host's approval form asks for one explicit choice; a tool's form
  // here asks yes/no questions.
  const answer = (f) => (f === "toolwarden_decision" ? "approve_once" : true);
  return { action: "accept", content: Object.fromEntries(fields.map((f) => [f, answer(f)])) };
});
await client.connect(transport);

async function stream(name, args, onCreated) {
  const seen = { kinds: [], statuses: [], taskId: null, result: null, error: null };
  for await (const message of client.experimental.tasks.callToolStream({ name, arguments: args })) {
    seen.kinds.push(message.type);
    if (message.type === "taskCreated") {
      seen.taskId = message.task.taskId;
      if (onCreated) await onCreated(message.task.taskId);
    }
    if (message.type === "taskStatus") seen.statuses.push(message.task.status);
    if (message.type === "result") seen.result = message.result;
    if (message.type === "error") seen.error = message.error.message;
  }
  return seen;
}

const out = { capabilities: client.getServerCapabilities() };
out.support = Object.fromEntries((await client.listTools()).tools.map((t) => [t.name, t.execution?.taskSupport ?? null]));
try {
  await client.callTool({ name: "greet", arguments: { name: "Ada" } });
  out.plainCallOfRequired = "answered";
} catch (e) {
  out.plainCallOfRequired = e.message;
}
out.long = await stream("slow_compute", { seconds: 1, label: "ts" });
out.asking = await stream("confirm_delete", { filename: "plan.txt" });
out.asked = asked;
out.cancelled = await stream("slow_compute", { seconds: 60 }, async (id) => {
  out.cancelAnswer = await client.experimental.tasks.cancelTask(id);
});
out.listed = (await client.experimental.tasks.listTasks()).tasks.map((t) => [t.taskId, t.status]);
out.plain = await client.callTool({ name: "slow_compute", arguments: { seconds: 0, label: "plain" } });
await client.close();
console.log(JSON.stringify(out));
