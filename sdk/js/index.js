// toolwarden-plugin: write toolwarden tools in JavaScript.
//
//   import { defineTool } from "toolwarden-plugin";
//
//   export const greet = defineTool({
//     name: "greet",
//     description: "Greets someone by name.",
//     input: { type: "object", properties: { name: { type: "string", default: "world" } },
//              additionalProperties: false },
//     effects: ["read-only", "idempotent"], risk: "safe",
//     run: ({ name = "world" }) => ({ greeting: `Hello, ${name}!` }),
//   });
//
// `input` and `output` are JSON Schemas (objects), published and enforced by
// the host as written: the host checks every call's arguments against
// `input` before `run` sees them, and the value `run` returns against
// `output`. `toolwarden build` bundles the module with esbuild and builds it
// with componentize-js; `run` may be async (fetch works in a tool that
// declares `origins`). Nothing here touches the component's imports, so a
// module of tools runs in Node too: `greet.call('{"name": "Ada"}')`.

export const EFFECTS = ["read-only", "mutates-workspace", "exclusive", "stateful", "idempotent", "open-world"];
export const RISKS = ["safe", "normal", "dangerous"];
export const FILESYSTEMS = ["none", "read-only", "workspace-write"];
export const LEVELS = ["trace", "debug", "info", "warn", "error"];
export const VIEWS = ["terminal", "diff", "search", "read", "web", "generic"];

/** An expected failure the model reads and may act on. Any other thrown
 * value is a defect in the tool: the host reports it as a crash. */
export class ToolError extends Error {
  constructor(message, kind = "failed") {
    super(message);
    this.kind = kind;
    // What the component's bindings return as the `tool-error` variant.
    this.payload = { tag: kind, val: message };
  }
}
/** The arguments were well-formed but cannot be used (say why). */
export class InvalidArgs extends ToolError {
  constructor(message) { super(message, "invalid-args"); }
}
/** Something the arguments name does not exist. */
export class NotFound extends ToolError {
  constructor(message) { super(message, "not-found"); }
}
/** The tool tried and failed (say what happened). */
export class Failed extends ToolError {
  constructor(message) { super(message, "failed"); }
}

/** Why a child call did not succeed: the host's stable `code`. */
export class ChildError extends Error {
  constructor(callId, code, message) {
    super(`${code}: ${message}`);
    this.callId = callId;
    this.code = code;
  }
}

const isBytes = (data) => data instanceof Uint8Array;

/** An image (`image/png`, ...) after the text. */
export const image = (mimeType, data) => ({ tag: "image", val: { mimeType, data: bytes(data) } });
/** Audio (`audio/wav`, ...) after the text. */
export const audio = (mimeType, data) => ({ tag: "audio", val: { mimeType, data: bytes(data) } });
/** A resource the result points to (an absolute URI), without its content. */
export const resourceLink = (uri, name, { mimeType, description } = {}) =>
  ({ tag: "resource-link", val: { uri, name, mimeType, description } });
/** A resource with its content: `text` or `blob`. */
export function embedded(uri, { text, blob, mimeType } = {}) {
  if ((text === undefined) === (blob === undefined)) {
    throw new TypeError("embedded() takes exactly one of `text` and `blob`");
  }
  const contents = text !== undefined ? { tag: "text", val: text } : { tag: "blob", val: bytes(blob) };
  return { tag: "embedded", val: { uri, mimeType, contents } };
}

function bytes(data) {
  if (isBytes(data)) return data;
  if (Array.isArray(data)) return Uint8Array.from(data);
  throw new TypeError("content data must be a Uint8Array");
}

const REPLY = Symbol("toolwarden.reply");

/** A result with a sentence for the model beside the JSON value, and
 * content blocks after it. Return a plain value when its JSON says it all. */
export function reply(value, { text, content = [] } = {}) {
  return { [REPLY]: true, value, text, content };
}

/** How a call looks to the person approving it (a preview) or reading it
 * back (a result view). */
export function presentation(view, title, body, path) {
  if (!VIEWS.includes(view)) throw new TypeError(`view \`${view}\` is not one of ${VIEWS.join(", ")}`);
  return { view, title, body, path };
}

/** The host's services as the component binds them; none in Node. */
let host = null;

/** Called by the component's glue with its imports (more than once: the
 * `compose` import comes only in a plugin that calls other tools). */
export function attachHost(imports) {
  host = { ...host, ...imports };
}

/** Facts about the current call and the host's services. Outside the host
 * (`Context.forTest`) logging goes nowhere, nothing is cancelled, questions
 * get the answers given, and child calls fail with `HOST_ERROR`. */
export class Context {
  constructor({ callId, sessionId, workspace }, answers = undefined) {
    this.callId = callId;
    this.sessionId = sessionId;
    this.workspace = workspace ?? null;
    this.answers = answers;
  }

  static forTest({ workspace = null, answers = {} } = {}) {
    return new Context({ callId: "test-call", sessionId: "test-session", workspace }, answers);
  }

  get attached() {
    return this.answers === undefined && host !== null;
  }

  /** `relative` (a `format: path` argument) joined onto the granted workspace. */
  path(relative) {
    if (this.workspace === null) {
      throw new Failed("no workspace was granted to this call; the tool must declare a filesystem need");
    }
    return `${this.workspace.replace(/\/$/, "")}/${relative}`;
  }

  log(level, message) {
    if (!LEVELS.includes(level)) throw new TypeError(`log level \`${level}\` is not one of ${LEVELS.join(", ")}`);
    if (this.attached) host.log(level, String(message));
  }

  progress(done, total = undefined, message = undefined) {
    if (this.attached) host.progress(BigInt(done), total === undefined ? undefined : BigInt(total), message);
  }

  cancelled() {
    return this.attached && host.cancelled();
  }

  /** Asks the person `message` with `form` (the JSON Schema of a flat
   * object). The first time, the call stops here; once answered it runs
   * again from the start with the answer at hand: ask with the same key
   * each run, before changing anything. */
  ask(key, message, form) {
    if (!this.attached) return (this.answers ?? {})[key] ?? { action: "cancelled" };
    return answerOf(host.question(key, message, JSON.stringify(form)));
  }

  /** Several questions at once, each `[key, message, form]`. */
  askAll(questions) {
    if (!this.attached) return questions.map(([key]) => (this.answers ?? {})[key] ?? { action: "cancelled" });
    const queries = questions.map(([key, message, form]) => ({ key, message, form: JSON.stringify(form) }));
    return host.questions(queries).map(answerOf);
  }

  /** Calls another tool through the host, governed as a call of its own.
   * The tool must declare `callsTools: true`. */
  callTool(name, args) {
    if (!this.attached) throw new ChildError("", "HOST_ERROR", "no host to call tools through: this context is for tests");
    if (!host.callTool) {
      throw new ChildError("", "HOST_ERROR", "this plugin was built without calling other tools: declare `callsTools: true` on the tool, then build again");
    }
    let out;
    try {
      out = host.callTool(name, JSON.stringify(args));
    } catch (e) {
      const p = e?.payload ?? e;
      throw new ChildError(p.callId, p.code, p.message);
    }
    return { callId: out.callId, value: JSON.parse(out.value), text: out.text };
  }
}

/** The granted workspace's directory, as the component's preopens name it. */
function workspaceDir(ctx) {
  ctx.path("");
  const found = host.getDirectories().find(([, guestPath]) => guestPath === ctx.workspace);
  if (!found) throw new Failed(`the workspace \`${ctx.workspace}\` is not open to this call`);
  return found[0];
}

const fileError = (path, e) => {
  const code = e?.payload ?? e?.message ?? String(e);
  return code === "no-entry" ? new NotFound(`\`${path}\`: No such file or directory`) : new Failed(`\`${path}\`: ${code}`);
};

/** Reads at most `maxBytes` of the workspace file `path` (relative to the
 * workspace root) as UTF-8: `{ text, truncated }`. Throws `NotFound` when
 * there is no such file. The sandbox keeps every access inside the
 * workspace, whatever the path says. In Node it reads the file under
 * `Context.forTest({ workspace })`. */
export function readText(ctx, path, maxBytes = 1 << 20) {
  let data;
  if (ctx.attached) {
    let file;
    try {
      file = workspaceDir(ctx).openAt({ symlinkFollow: true }, path, {}, { read: true });
    } catch (e) {
      throw fileError(path, e);
    }
    const chunks = [];
    let size = 0;
    for (;;) {
      const [chunk, end] = file.read(BigInt(Math.min(65536, maxBytes + 1 - size)), BigInt(size));
      chunks.push(chunk);
      size += chunk.length;
      if (end || chunk.length === 0 || size > maxBytes) break;
    }
    data = new Uint8Array(size);
    let at = 0;
    for (const chunk of chunks) { data.set(chunk, at); at += chunk.length; }
  } else {
    const fs = globalThis.process?.getBuiltinModule?.("fs");
    if (!fs) throw new Failed("no filesystem outside the host but Node's");
    try {
      data = fs.readFileSync(ctx.path(path));
    } catch (e) {
      throw e.code === "ENOENT" ? new NotFound(`\`${path}\`: No such file or directory`) : new Failed(`\`${path}\`: ${e.message}`);
    }
  }
  return { text: new TextDecoder().decode(data.subarray(0, maxBytes)), truncated: data.length > maxBytes };
}

/** Replaces the workspace file `path` with `text` (UTF-8); the tool must
 * declare `filesystem: "workspace-write"`. */
export function writeText(ctx, path, text) {
  const data = new TextEncoder().encode(text);
  if (!ctx.attached) {
    const fs = globalThis.process?.getBuiltinModule?.("fs");
    if (!fs) throw new Failed("no filesystem outside the host but Node's");
    fs.writeFileSync(ctx.path(path), data);
    return;
  }
  let file;
  try {
    file = workspaceDir(ctx).openAt({ symlinkFollow: true }, path, { create: true, truncate: true }, { write: true });
    let at = 0;
    while (at < data.length) at += Number(file.write(data.subarray(at, at + 65536), BigInt(at)));
  } catch (e) {
    throw fileError(path, e);
  }
}

function answerOf(answer) {
  if (answer.tag === "accepted") return { action: "accepted", content: JSON.parse(answer.val) };
  return { action: answer.tag };
}

const definitions = new Map();

/** Every tool defined so far, in the order defined. */
export const tools = () => [...definitions.values()];

function oneOf(value, allowed, what, name) {
  if (!allowed.includes(value)) {
    throw new TypeError(`tool \`${name}\`: ${what} \`${value}\` is not one of ${allowed.join(", ")}`);
  }
  return value;
}

/** Defines a tool. Claims left out are the conservative defaults: no
 * effects, `normal` risk, no filesystem, no network. `callsTools: true`
 * lets it call other tools (`ctx.callTool`), which builds the plugin with
 * the `compose` import: the host then cannot rehearse the writes of any of
 * its tools for an approval. */
export function defineTool(spec) {
  const { name, description, run } = spec;
  if (!/^[a-z][a-z0-9_]{0,63}$/.test(name ?? "")) {
    throw new TypeError(`\`${name}\` is not a tool name: [a-z][a-z0-9_]*, at most 64 characters`);
  }
  if (!description) throw new TypeError(`tool \`${name}\`: give it a description: it is what the model reads`);
  if (typeof run !== "function") throw new TypeError(`tool \`${name}\`: \`run\` must be a function`);
  if (definitions.has(name)) throw new TypeError(`two tools are named \`${name}\`: names must be unique`);
  const origins = spec.origins ?? [];
  const credentials = spec.credentials ?? [];
  if (credentials.length && !origins.length) {
    throw new TypeError(`tool \`${name}\`: credentials are sent to origins; declare \`origins\``);
  }
  const tool = {
    name,
    title: spec.title ?? name,
    description,
    input: spec.input ?? { type: "object", properties: {}, additionalProperties: false },
    output: spec.output ?? null,
    effects: (spec.effects ?? []).map((e) => oneOf(e, EFFECTS, "effect", name)),
    risk: oneOf(spec.risk ?? "normal", RISKS, "risk", name),
    filesystem: oneOf(spec.filesystem ?? "none", FILESYSTEMS, "filesystem", name),
    timeoutMs: spec.timeoutMs ?? null,
    origins,
    credentials,
    keyed: Boolean(spec.keyed),
    callsTools: Boolean(spec.callsTools),
    run,
    preview: spec.preview ?? null,
    show: spec.show ?? null,
    /** Runs the tool as the host would, with `argsJson` (valid against `input`). */
    async call(argsJson = "{}", ctx = Context.forTest()) {
      const result = await run(JSON.parse(argsJson), ctx);
      const r = result?.[REPLY] ? result : reply(result);
      return { value: JSON.stringify(r.value ?? null), text: r.text, content: r.content };
    },
    /** What the host reads about it, as JSON data. */
    describe() {
      return {
        name, title: tool.title, description, input_schema: tool.input, output_schema: tool.output,
        effects: tool.effects, risk: tool.risk, filesystem: tool.filesystem,
        timeout_ms: tool.timeoutMs,
        network: origins.length ? { origins, credentials } : null, keyed: tool.keyed,
        calls_tools: tool.callsTools,
      };
    },
  };
  definitions.set(name, tool);
  return tool;
}
