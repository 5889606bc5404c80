// Tree layout: levels and lanes of rows in pre-order, and the rows each filter keeps.
import assert from "node:assert/strict";
import { test } from "node:test";

import { MAX_LANES, drawLanes, rowVisible } from "../../static/sessions_app/tree_layout.js";

const node = (id, parentId, extra = {}) => ({ kind: "node", id, parentId, ...extra });

test("a chain stays on one lane", () => {
  const rows = [node("a", null), node("b", "a"), node("c", "b")];
  drawLanes(rows);
  assert.deepEqual(rows.map((r) => r.level), [0, 0, 0]);
  assert.deepEqual(rows.map((r) => r.lanes), ["", "", ""]);
});

test("at a branch point the earlier child steps in and the last keeps the lane, with a connector", () => {
  // a ─┬─ b ─ c      pre-order: a, b, c, d
  //    └─ d
  const rows = [node("a", null), node("b", "a"), node("c", "b"), node("d", "a")];
  drawLanes(rows);
  assert.deepEqual(rows.map((r) => r.level), [0, 1, 1, 0]);
  assert.equal(rows[1].branchStart, true);
  assert.equal(rows[3].continues, true);
  assert.equal(rows[1].lanes, "├");
  assert.equal(rows[2].lanes, "│");
  assert.equal(rows[3].lanes, "");
});

test("the lane of the current path is drawn heavy", () => {
  const rows = [node("a", null), node("b", "a"), node("d", "a", { onPath: true })];
  drawLanes(rows);
  assert.equal(rows[1].lanes, "┣");
});

test("deep nesting draws at most MAX_LANES columns and a run of folded entries keeps its key", () => {
  const rows = [node("r", null)];
  let parent = "r";
  for (let i = 0; i < MAX_LANES + 5; i += 1) {
    rows.push(node(`x${i}`, parent), node(`y${i}`, parent));
    parent = `x${i}`;
  }
  // pre-order: each x subtree comes before its sibling y
  const ordered = [];
  const kids = new Map();
  for (const r of rows) if (r.parentId) (kids.get(r.parentId) || kids.set(r.parentId, []).get(r.parentId)).push(r);
  const walk = (r) => {
    ordered.push(r);
    (kids.get(r.id) || []).forEach(walk);
  };
  walk(rows[0]);
  drawLanes(ordered);
  const deepest = Math.max(...ordered.map((r) => r.level));
  assert.equal(deepest, MAX_LANES + 5);
  assert.ok(ordered.every((r) => r.lanes.length <= MAX_LANES + 1));

  const runRows = [node("a", null), { kind: "run", firstId: "b", lastId: "z", parentId: "a" }, node("after", "z")];
  drawLanes(runRows);
  assert.deepEqual(runRows.map((r) => r.level), [0, 0, 0]);
});

test("filters hide bookkeeping, tool steps and non-user rows but keep the leaf and the hit shown", () => {
  const label = node("l", null, { type: "label" });
  const tool = node("t", null, { type: "message", role: "toolResult" });
  const silent = node("s", null, { type: "message", role: "assistant" });
  const said = { entry: { message: { content: [] } } };
  assert.equal(rowVisible(label, "default"), false);
  assert.equal(rowVisible(label, "all"), true);
  assert.equal(rowVisible(tool, "no-tools"), false);
  assert.equal(rowVisible(silent, "no-tools", said), false);
  assert.equal(rowVisible(silent, "user"), false);
  assert.equal(rowVisible({ ...silent, current: true }, "user"), true);
  assert.equal(rowVisible(silent, "user", undefined, "s"), true);
  assert.equal(rowVisible(node("n", null, { label: "v1" }), "labeled"), true);
});
