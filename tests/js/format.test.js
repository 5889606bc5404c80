// Formatting of entries for tree rows and cards: previews, token counts, sizes.
import assert from "node:assert/strict";
import { test } from "node:test";

import { clip, humanBytes, isOffline, kindOf, placeholder, plainText, plural, preview, textOf, tokens } from "../../static/sessions_app/format.js";

const message = (message) => ({ entry: { type: "message", message } });

test("textOf joins the text blocks of a content list and takes a string as it is", () => {
  assert.equal(textOf("plain"), "plain");
  assert.equal(textOf([{ type: "text", text: "a" }, { type: "image", data: "x" }, { type: "text", text: "b" }]), "a\nb");
  assert.equal(textOf(null), "");
});

test("clip flattens white space and ends a long text with an ellipsis", () => {
  assert.equal(clip("a  b\n c", 10), "a b c");
  assert.equal(clip("abcdefghijkl", 5), "abcd…");
  assert.equal(clip(undefined, 5), "");
});

test("tokens are shown short past a thousand", () => {
  assert.equal(tokens(999), "999");
  assert.equal(tokens(7795), "7.8k");
  assert.equal(tokens(20000), "20k");
});

test("humanBytes reads as bytes, KB or MB", () => {
  assert.equal(humanBytes(0), "0 B");
  assert.equal(humanBytes(2048), "2.0 KB");
  assert.equal(humanBytes(3 * 1024 * 1024), "3.0 MB");
});

test("a tree row says what it is before its entry is loaded", () => {
  assert.equal(placeholder({ type: "message", role: "assistant" }, false), "Assistant …");
  assert.equal(placeholder({ type: "message", role: "user" }, true), "User (no text)");
  assert.equal(placeholder({ type: "branch_summary" }, false), "branch summary");
});

test("previews name tool calls, errors, images and bookkeeping entries", () => {
  assert.equal(preview(message({ role: "user", content: "hello" })), "hello");
  assert.equal(preview(message({ role: "user", content: [{ type: "image", data: "", mimeType: "image/png" }] })), "[image]");
  assert.equal(preview(message({ role: "assistant", content: [{ type: "toolCall", name: "edit" }, { type: "toolCall", name: "read" }] })), "[edit, read]");
  assert.equal(preview(message({ role: "assistant", content: [], errorMessage: "overloaded" })), "error: overloaded");
  assert.equal(preview(message({ role: "bashExecution", command: "ls" })), "$ ls");
  assert.equal(preview({ entry: { type: "model_change", provider: "anthropic", modelId: "m1" } }), "model → anthropic/m1");
  assert.equal(preview({ entry: { type: "label", label: "" } }), "label cleared");
  assert.equal(preview(null), "");
});

test("kindOf gives messages their role and other entries their type", () => {
  assert.equal(kindOf("message", "toolResult"), "toolResult");
  assert.equal(kindOf("compaction"), "compaction");
});

test("offline summaries are told apart by their details", () => {
  assert.equal(isOffline({ offline: true }), true);
  assert.equal(isOffline({ model: "offline-structured" }), true);
  assert.equal(isOffline({ model: "claude" }), false);
  assert.equal(isOffline(null), false);
});

test("audit tables group the digits of whole numbers only", async () => {
  const { groupDigits } = await import("../../static/sessions_app/admin_numbers.js");
  assert.equal(groupDigits("1234567"), "1,234,567");
  assert.equal(groupDigits(" 45678 "), "45,678");
  assert.equal(groupDigits("999"), null);
  assert.equal(groupDigits("0.2500"), null);
  assert.equal(groupDigits("a1b2c3d4"), null);
});

test("plural says 1 thread and 2 threads, with an irregular plural when given", () => {
  assert.equal(plural(1, "thread"), "1 thread");
  assert.equal(plural(2, "thread"), "2 threads");
  assert.equal(plural(0, "session"), "0 sessions");
  assert.equal(plural(1, "answer or summary", "answers and summaries"), "1 answer or summary");
  assert.equal(plural(12000, "token"), `${(12000).toLocaleString()} tokens`);
});

test("previews read Markdown as text: the marks go, what they mark stays", () => {
  assert.equal(plainText("**why** is `x` _so_ slow?"), "why is x so slow?");
  assert.equal(plainText("# Plan\n- [docs](https://example.com/docs)\n> quoted"), "Plan\ndocs\nquoted");
  assert.equal(plainText("snake_case_name and 2*3*4"), "snake_case_name and 2*3*4");
  assert.equal(plainText("![chart](c.png) ~~old~~ new"), "chart old new");
  assert.equal(preview(message({ role: "user", content: "**Fix** the `build`" })), "Fix the build");
});
