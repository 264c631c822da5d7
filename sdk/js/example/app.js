// The SDK examples in JavaScript: the same tools as the Rust
// (tests/fixtures/sdk_examples) and Python (sdk/python/example) ones.
//
//   toolwarden build            # in this folder: example.wasm

import { Context, defineTool, Failed, NotFound, presentation, readText, reply, writeText } from "toolwarden-plugin";

export const greet = defineTool({
  name: "greet",
  description: "Greets someone by name. Use it to say hello; it knows nobody.",
  input: {
    type: "object",
    properties: {
      name: { type: "string", description: "Who to greet.", default: "world" },
      excited: { type: "boolean", description: "End with an exclamation mark.", default: false },
    },
    additionalProperties: false,
  },
  output: {
    type: "object",
    properties: { greeting: { type: "string" } },
    required: ["greeting"],
    additionalProperties: false,
  },
  effects: ["read-only", "idempotent"],
  risk: "safe",
  timeoutMs: 1000,
  run: ({ name = "world", excited = false }) => ({ greeting: `Hello, ${name}${excited ? "!" : "."}` }),
});

export const read_text = defineTool({
  name: "read_text",
  description: "Reads a UTF-8 text file in the workspace. Not for directories.",
  input: {
    type: "object",
    properties: {
      path: { type: "string", format: "path", minLength: 1, maxLength: 4096,
              description: "The file, relative to the workspace root." },
      max_bytes: { type: "integer", minimum: 1, maximum: 1048576,
                   description: "Most bytes to return; `truncated` says when there was more.", default: 65536 },
    },
    required: ["path"],
    additionalProperties: false,
  },
  output: {
    type: "object",
    properties: { path: { type: "string" }, text: { type: "string" }, truncated: { type: "boolean" } },
    required: ["path", "text", "truncated"],
    additionalProperties: false,
  },
  effects: ["read-only", "idempotent"],
  filesystem: "read-only",
  timeoutMs: 2000,
  run({ path, max_bytes = 65536 }, ctx) {
    const read = readText(ctx, path, max_bytes);
    return { path, text: read.text, truncated: read.truncated };
  },
});

export const fetch_text = defineTool({
  name: "fetch_text",
  description: "Fetches a URL with GET (the host adds the `github` credential where the operator bound it) and returns its status, content type and the first 4096 bytes of its body as text.",
  input: {
    type: "object",
    properties: {
      url: { type: "string", format: "uri", minLength: 1, maxLength: 8192, description: "The http(s) URL to fetch." },
    },
    required: ["url"],
    additionalProperties: false,
  },
  output: {
    type: "object",
    properties: {
      status: { type: "integer", minimum: 0, maximum: 65535 },
      content_type: { type: ["string", "null"] },
      text: { type: "string" },
    },
    required: ["status", "content_type", "text"],
    additionalProperties: false,
  },
  effects: ["read-only", "idempotent", "open-world"],
  timeoutMs: 10000,
  origins: ["https://api.github.com", "http://127.0.0.1:*"],
  credentials: ["github"],
  async run({ url }) {
    let response;
    try {
      response = await fetch(url);
    } catch (e) {
      throw new NotFound(`fetching ${url}: ${e.message}`);
    }
    const body = new Uint8Array(await response.arrayBuffer()).slice(0, 4096);
    return {
      status: response.status,
      content_type: response.headers.get("content-type"),
      text: new TextDecoder().decode(body),
    };
  },
});

// What `ask_greeting` and `greet_twice` take: whom to greet.
const NAME_ONLY = {
  type: "object",
  properties: { name: { type: "string", description: "Who to greet.", default: "world" } },
  additionalProperties: false,
};

const FORM = {
  type: "object",
  properties: { style: { type: "string", enum: ["formal", "casual"], title: "Style" } },
  required: ["style"],
};

export const ask_greeting = defineTool({
  name: "ask_greeting",
  description: "Asks the person how formal to be, then greets someone in that style.",
  input: NAME_ONLY,
  output: {
    type: "object",
    properties: {
      greeting: { type: ["string", "null"] },
      style: { type: ["string", "null"], enum: ["formal", "casual", null] },
    },
    required: ["greeting", "style"],
    additionalProperties: false,
  },
  effects: ["read-only"],
  risk: "safe",
  timeoutMs: 2000,
  run({ name = "world" }, ctx = Context.forTest()) {
    const answer = ctx.ask("style", `How should I greet ${name}?`, FORM);
    if (answer.action !== "accepted") {
      return reply({ greeting: null, style: null }, { text: "Not greeted: no style chosen." });
    }
    const style = answer.content.style;
    return { greeting: style === "formal" ? `Good day, ${name}.` : `Hi ${name}!`, style };
  },
});

export const save_note = defineTool({
  name: "save_note",
  description: "Writes a text file in the workspace, replacing it. Repeating a call changes nothing more.",
  input: {
    type: "object",
    properties: {
      path: { type: "string", format: "path", minLength: 1, maxLength: 4096,
              description: "The file to write, relative to the workspace root." },
      text: { type: "string", description: "What the file will hold." },
    },
    required: ["path", "text"],
    additionalProperties: false,
  },
  output: {
    type: "object",
    properties: { path: { type: "string" }, bytes: { type: "integer", minimum: 0, maximum: 4294967295 } },
    required: ["path", "bytes"],
    additionalProperties: false,
  },
  effects: ["mutates-workspace", "idempotent"],
  filesystem: "workspace-write",
  keyed: true,
  timeoutMs: 2000,
  run({ path, text }, ctx) {
    writeText(ctx, path, text);
    return { path, bytes: new TextEncoder().encode(text).length };
  },
  preview: ({ path, text }) => presentation("diff", `write ${path}`, text, path),
  show: (args, saved) => presentation("generic", `saved ${saved.path}`, `${saved.bytes} bytes`),
});

export const greet_twice = defineTool({
  name: "greet_twice",
  description: "Greets someone twice, calmly then excitedly, by calling `greet`.",
  input: NAME_ONLY,
  output: {
    type: "object",
    properties: { greetings: { type: "array", items: { type: "string" } } },
    required: ["greetings"],
    additionalProperties: false,
  },
  effects: ["read-only"],
  risk: "safe",
  timeoutMs: 5000,
  callsTools: true,
  run({ name = "world" }, ctx) {
    const greetings = [false, true].map((excited, done) => {
      ctx.progress(done, 2, "greeting");
      try {
        return ctx.callTool("greet", { name, excited }).value.greeting;
      } catch (e) {
        throw new Failed(e.message);
      }
    });
    ctx.log("info", "greeted twice");
    return { greetings };
  },
});
