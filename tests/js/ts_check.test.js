// Every browser module is type-checked: tsc (make lint) checks only files that opt in with // @ts-check.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";

const STATIC = new URL("../../static/", import.meta.url).pathname;

function modules(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return name === "vendor" ? [] : modules(path);
    return name.endsWith(".js") ? [path] : [];
  });
}

test("every first-party module opts in to the type check", () => {
  const found = modules(STATIC);
  assert.ok(found.length > 40, `found only ${found.length} modules`);
  const unchecked = found.filter((path) => !readFileSync(path, "utf8").startsWith("// @ts-check\n"));
  assert.deepEqual(unchecked, []);
});
