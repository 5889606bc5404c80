// Paging arithmetic: the part of a drawn path a click reuses, steps through search hits, the counter.
import assert from "node:assert/strict";
import { test } from "node:test";

import { gapCount, hitCountText, pageOf, pathWindow, stepIndex } from "../../static/sessions_app/session/paging.js";

test("a click on a drawn entry reuses at most `limit` entries ending at it", () => {
  assert.deepEqual(pathWindow(30, 29, 100, false, 12), { from: 18, to: 30, firstDepth: 118, hasMore: true });
  assert.deepEqual(pathWindow(5, 2, 0, false, 12), { from: 0, to: 3, firstDepth: 0, hasMore: false });
  assert.deepEqual(pathWindow(5, 2, 40, true, 12), { from: 0, to: 3, firstDepth: 40, hasMore: true });
  assert.equal(pathWindow(5, -1, 0, false, 12), null);
});

test("steps through hits wrap at both ends and start at the first or the last", () => {
  assert.equal(stepIndex(-1, 1, 7), 0);
  assert.equal(stepIndex(-1, -1, 7), 6);
  assert.equal(stepIndex(6, 1, 7), 0);
  assert.equal(stepIndex(0, -1, 7), 6);
  assert.equal(stepIndex(3, 1, 0), -1);
  assert.equal(pageOf(199, 200), 0);
  assert.equal(pageOf(200, 200), 1);
});

test("the counter counts matches before the first step and never shows the last query's answer", () => {
  const answered = { query: "fix", ready: true, total: 7, at: -1, incomplete: false };
  assert.equal(hitCountText(answered), "7 matches");
  assert.equal(hitCountText({ ...answered, total: 1 }), "1 match");
  assert.equal(hitCountText({ ...answered, at: 2 }), "3 of 7");
  assert.equal(hitCountText({ ...answered, total: 1234, at: 999 }), "1,000 of 1,234");
  assert.equal(hitCountText({ ...answered, total: 0 }), "no match");
  assert.equal(hitCountText({ ...answered, total: 0, pending: true }), "searching…");
  assert.equal(hitCountText({ ...answered, ready: false }), "searching…");
  assert.equal(hitCountText({ ...answered, total: 0, incomplete: true }), "too many candidates: try other words");
  assert.equal(hitCountText({ ...answered, query: "" }), "");
  assert.equal(gapCount(10, 250), 240);
  assert.equal(gapCount(10, 5), 0);
});
