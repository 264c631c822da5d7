// The tool in Node: `npm test`.
import assert from "node:assert/strict";
import { test } from "node:test";
import { {{name}} } from "./app.js";

test("counts words", async () => {
  assert.deepEqual(JSON.parse((await {{name}}.call('{"text": "one two  three"}')).value), { words: 3 });
});

test("runs without arguments", async () => {
  assert.deepEqual(JSON.parse((await {{name}}.call("{}")).value), { words: 0 });
});
