// Every browser module is type-checked: tsc (make lint) checks only the files that opt in with a
// `// @ts-check` first line (tsconfig.json has checkJs off), so a new module without it would go unchecked.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const STATIC = join(ROOT, "static");

// First-party modules: third-party code lives under static/vendor/ and is not ours to annotate.
function modules(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((item) => {
    const path = join(dir, item.name);
    if (item.isDirectory()) return item.name === "vendor" ? [] : modules(path);
    return item.name.endsWith(".js") && !item.name.endsWith(".min.js") ? [path] : [];
  });
}

test("every first-party module under static/ starts with // @ts-check", () => {
  const found = modules(STATIC);
  assert.ok(found.length > 40, `found only ${found.length} modules under ${STATIC}`);
  const unchecked = found.filter((path) => readFileSync(path, "utf8").split(/\r?\n/, 1)[0].trim() !== "// @ts-check");
  assert.deepEqual(unchecked.map((path) => relative(ROOT, path)), [], "add `// @ts-check` as the first line of these modules");
});
