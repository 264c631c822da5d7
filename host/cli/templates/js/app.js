// `{{name}}`: a toolwarden plugin in JavaScript.
//
// Change the schema, `run` and the description, then `toolwarden build`.
// The host checks every call's arguments against `input` before `run` sees
// them, and governs the call.

import { defineTool } from "toolwarden-plugin";

export const {{name}} = defineTool({
  name: "{{name}}",
  description: "Counts the words in a text. Use it when an exact word count matters; not for characters or lines.",
  input: {
    type: "object",
    properties: {
      text: { type: "string", maxLength: 100000, description: "The text whose words to count.", default: "" },
    },
    additionalProperties: false,
  },
  output: {
    type: "object",
    properties: { words: { type: "integer", minimum: 0 } },
    required: ["words"],
    additionalProperties: false,
  },
  effects: ["read-only", "idempotent"],
  risk: "safe",
  timeoutMs: 1000,
  run({ text = "" }, ctx) {
    ctx.log("debug", "counting words");
    return { words: text.split(/\s+/).filter(Boolean).length };
  },
});
