// The words a query marks in tree rows, read as the server reads the query.
import assert from "node:assert/strict";
import { test } from "node:test";

import { hasWorkTerms, markPieces, queryTerms } from "../../static/sessions_app/search_terms.js";

test("or and excluded words are not marked; phrases mark their words", () => {
  assert.deepEqual(queryTerms("order -error"), ["order"]);
  assert.deepEqual(queryTerms("cache or Redis"), ["cache", "redis"]);
  assert.deepEqual(queryTerms('"Feed parser" -"old code"'), ["feed", "parser"]);
  assert.deepEqual(queryTerms("images.py"), ["images", "py"]);
  assert.deepEqual(queryTerms(""), []);
});

test("matches are marked in any case and overlapping ones merge", () => {
  assert.deepEqual(markPieces("Fix the cache, then CACHE again", ["cache"]), [
    ["Fix the ", false],
    ["cache", true],
    [", then ", false],
    ["CACHE", true],
    [" again", false],
  ]);
  assert.deepEqual(markPieces("parsers", ["parse", "parser"]), [["parser", true], ["s", false]]);
  assert.deepEqual(markPieces("nothing here", ["zzz"]), [["nothing here", false]]);
});

test("path:, tool: and cmd: terms mark nothing; the words beside them do", () => {
  assert.deepEqual(queryTerms('path:src/app.py tool:edit cmd:"npm test" parser'), ["parser"]);
  assert.deepEqual(queryTerms("PATH:*.py"), []);
  assert.deepEqual(queryTerms("see a:b"), ["see", "a", "b"]);
  assert.equal(hasWorkTerms("fix path:src/"), true);
  assert.equal(hasWorkTerms("fix http://x"), false);
});
