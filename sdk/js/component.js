// The component's exports, bundled by `toolwarden build` beside the module
// of tools: componentize-js looks for one export per interface the world
// exports (`tool`, `keyed`, `present`, `show`). Only this file (and the
// entry `build` writes, which brings `compose` to a plugin that calls other
// tools) imports the component's imports, so the tools run in Node too.

import { log, progress, cancelled } from "toolwarden:tool/host@0.2.0";
import { question, questions } from "toolwarden:tool/ask@0.2.0";
import { getDirectories } from "wasi:filesystem/preopens@0.2.12";
import { attachHost, Context, ToolError, tools } from "./index.js";

attachHost({ log, progress, cancelled, question, questions, getDirectories });

const FLAGS = {
  "read-only": "readOnly",
  "mutates-workspace": "mutatesWorkspace",
  exclusive: "exclusive",
  stateful: "stateful",
  idempotent: "idempotent",
  "open-world": "openWorld",
};

const named = (name) => tools().find((t) => t.name === name);

function spec(t) {
  const effects = Object.fromEntries(Object.values(FLAGS).map((flag) => [flag, false]));
  for (const effect of t.effects) effects[FLAGS[effect]] = true;
  return {
    name: t.name,
    title: t.title,
    description: t.description,
    inputSchema: JSON.stringify(t.input),
    outputSchema: t.output === null ? undefined : JSON.stringify(t.output),
    effects,
    risk: t.risk,
    filesystem: t.filesystem,
    timeoutMs: t.timeoutMs ?? undefined,
    network: t.origins.length ? { origins: t.origins, credentials: t.credentials } : undefined,
  };
}

const context = (ctx) => new Context({ callId: ctx.callId, sessionId: ctx.sessionId, workspace: ctx.workspace });

/** A thrown value that is not a tool error is a defect: it goes to the
 * host's log with its stack before the call traps, so the author sees where. */
function logged(e) {
  if (!(e instanceof ToolError)) log("error", e?.stack ?? String(e));
  return e;
}

export const tool = {
  tools: () => tools().map(spec),
  async invoke(name, argsJson, ctx) {
    const t = named(name);
    if (!t) throw { payload: { tag: "not-found", val: `this plugin has no tool \`${name}\`` } };
    try {
      return await t.call(argsJson, context(ctx));
    } catch (e) {
      throw logged(e);
    }
  },
};

export const keyed = {
  keyedTools: () => tools().filter((t) => t.keyed).map((t) => t.name),
};

export const present = {
  async preview(name, argsJson, ctx) {
    const t = named(name);
    if (!t?.preview) return undefined;
    try {
      return (await t.preview(JSON.parse(argsJson), context(ctx))) ?? undefined;
    } catch (e) {
      throw logged(e);
    }
  },
};

export const show = {
  showResult(name, argsJson, valueJson) {
    const t = named(name);
    if (!t?.show) return undefined;
    try {
      return t.show(JSON.parse(argsJson), JSON.parse(valueJson)) ?? undefined;
    } catch (e) {
      throw logged(e);
    }
  },
};
