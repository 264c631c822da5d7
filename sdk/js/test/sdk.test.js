// The JavaScript SDK in Node: definitions, calls, errors, questions, files.
// The same module's tools run inside a component in
// tests/python_plugin/test_sdks.py.
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import {
  Context, defineTool, embedded, image, InvalidArgs, NotFound, presentation, readText, reply,
  tools, writeText,
} from "toolwarden-plugin";

test("a definition keeps its claims and the conservative defaults", () => {
  const t = defineTool({ name: "plain", description: "Plain.", run: () => 1 });
  assert.deepEqual(t.describe(), {
    name: "plain", title: "plain", description: "Plain.",
    input_schema: { type: "object", properties: {}, additionalProperties: false },
    output_schema: null, effects: [], risk: "normal", filesystem: "none", timeout_ms: null,
    network: null, keyed: false, calls_tools: false,
  });
  assert.ok(tools().includes(t));
});

test("bad definitions are refused with what to fix", () => {
  assert.throws(() => defineTool({ name: "Bad-Name", description: "x", run() {} }), /not a tool name/);
  assert.throws(() => defineTool({ name: "mute", run() {} }), /description/);
  assert.throws(() => defineTool({ name: "wrong", description: "x", effects: ["writes"], run() {} }), /effect `writes`/);
  assert.throws(() => defineTool({ name: "lost", description: "x", credentials: ["github"], run() {} }), /origins/);
  defineTool({ name: "twice", description: "x", run() {} });
  assert.throws(() => defineTool({ name: "twice", description: "x", run() {} }), /two tools are named `twice`/);
});

test("calls return JSON, text and content; async runs are awaited", async () => {
  const t = defineTool({
    name: "shout", description: "Shouts.",
    run: async ({ word = "hey" }) => reply({ word: word.toUpperCase() }, {
      text: "shouted", content: [image("image/png", [1, 2]), embedded("file:///a", { text: "a" })],
    }),
  });
  const out = await t.call('{"word": "hi"}');
  assert.equal(out.value, '{"word":"HI"}');
  assert.equal(out.text, "shouted");
  assert.deepEqual(out.content[0], { tag: "image", val: { mimeType: "image/png", data: Uint8Array.from([1, 2]) } });
  assert.equal(out.content[1].val.contents.tag, "text");
  assert.throws(() => embedded("file:///a"), /exactly one/);
});

test("tool errors carry the variant the host receives", async () => {
  const t = defineTool({ name: "picky", description: "x", run: () => { throw new InvalidArgs("no"); } });
  await assert.rejects(t.call("{}"), (e) => e.payload.tag === "invalid-args" && e.payload.val === "no");
  assert.equal(new NotFound("gone").payload.tag, "not-found");
});

test("questions, files and presentations outside the host", async () => {
  const ws = mkdtempSync(join(tmpdir(), "tw-"));
  writeFileSync(join(ws, "a.txt"), "hello world");
  const ctx = Context.forTest({ workspace: ws, answers: { ok: { action: "accepted", content: { yes: true } } } });
  assert.deepEqual(ctx.ask("ok", "Sure?", {}), { action: "accepted", content: { yes: true } });
  assert.deepEqual(ctx.ask("other", "Sure?", {}), { action: "cancelled" });
  assert.deepEqual(readText(ctx, "a.txt", 5), { text: "hello", truncated: true });
  assert.throws(() => readText(ctx, "missing.txt"), (e) => e instanceof NotFound);
  writeText(ctx, "b.txt", "written");
  assert.equal(readText(ctx, "b.txt").text, "written");
  assert.throws(() => Context.forTest().path("a.txt"), /no workspace/);
  assert.throws(() => presentation("movie", "t", "b"), /view `movie`/);
  assert.throws(() => ctx.callTool("x", {}), (e) => e.code === "HOST_ERROR");
});

test("the package packs every module it exports", async () => {
  const { execFileSync } = await import("node:child_process");
  const { readFileSync } = await import("node:fs");
  const packed = JSON.parse(execFileSync("npm", ["pack", "--dry-run", "--json"], { encoding: "utf8" }));
  const files = packed[0].files.map((f) => f.path);
  const manifest = JSON.parse(readFileSync(new URL("../package.json", import.meta.url)));
  for (const module of Object.values(manifest.exports)) assert.ok(files.includes(module.replace("./", "")), module);
  assert.ok(!files.some((f) => f.startsWith("test/") || f.startsWith("example/")), files.join(", "));
});
