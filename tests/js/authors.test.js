// Who wrote an entry: the card's words and the tree's "by <person>" filters.
import assert from "node:assert/strict";
import { test } from "node:test";

import { authorMatches, authorText, peopleOf } from "../../static/sessions_app/authors.js";
import { rowVisible } from "../../static/sessions_app/tree_layout.js";

const author = (kind, name, userId, extra = {}) => ({ kind, name, userId, via: "", imported: false, label: name, ...extra });
const record = (a) => ({ id: "x", type: "message", entry: { type: "message", message: { role: "user", content: "hi" } }, author: a });

test("a card names the author the way a person reads it", () => {
  assert.equal(authorText(author("user", "eddie", 1)), "by eddie");
  assert.equal(authorText(author("device", "eddie", 1, { label: "eddie via laptop" })), "by eddie via laptop");
  assert.equal(authorText(author("run", "eddie", 1, { label: "run started by eddie" })), "run started by eddie");
  assert.equal(authorText(author("user", "eddie", 1, { imported: true, label: "imported by eddie" })), "imported by eddie");
  assert.equal(authorText(null), "");
});

test("the by-person filter keeps a person's own, device and run entries and nothing else", () => {
  const filter = "author:7";
  assert.equal(authorMatches(record(author("user", "eddie", 7)), filter), true);
  assert.equal(authorMatches(record(author("device", "eddie", 7)), filter), true);
  assert.equal(authorMatches(record(author("run", "eddie", 7)), filter), true);
  assert.equal(authorMatches(record(author("user", "ada", 8)), filter), false);
  assert.equal(authorMatches(record(author("system", "compaction-worker", null)), filter), false);
  assert.equal(authorMatches(record(null), filter), false);
  assert.equal(authorMatches(undefined, filter), false);
  // Through the tree's filter: the leaf is always drawn, other rows by their author.
  const row = { kind: "node", id: "x", type: "message", role: "user" };
  assert.equal(rowVisible(row, filter, record(author("user", "ada", 8)), null), false);
  assert.equal(rowVisible({ ...row, current: true }, filter, record(author("user", "ada", 8)), null), true);
  assert.equal(rowVisible(row, filter, record(author("user", "eddie", 7)), null), true);
});

test("the people to filter by are the named writers of the loaded entries", () => {
  const people = peopleOf([
    record(author("user", "eddie", 7)),
    record(author("run", "eddie", 7)),
    record(author("user", "ada", 8)),
    record(author("link", "", null)),
    record(author("system", "compaction-worker", null)),
  ]);
  assert.deepEqual([...people], [["7", "eddie"], ["8", "ada"]]);
});
