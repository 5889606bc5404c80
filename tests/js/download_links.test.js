// The export dialog's download addresses.
import assert from "node:assert/strict";
import { test } from "node:test";

import { downloadUrl } from "../../static/sessions_app/download_links.js";

test("the Pi file is the plain export address, whatever scope or entry is chosen", () => {
  assert.equal(downloadUrl({ session: 7 }), "/api/sessions/7/export/");
  assert.equal(downloadUrl({ session: 7, format: "jsonl", scope: "tree", at: "a1" }), "/api/sessions/7/export/");
});

test("a branch document ends at the chosen entry; a tree document names no entry", () => {
  assert.equal(downloadUrl({ session: 7, format: "markdown", at: "a 1" }), "/api/sessions/7/export/?format=markdown&scope=branch&at=a+1");
  assert.equal(downloadUrl({ session: 7, format: "html", scope: "tree", at: "a1" }), "/api/sessions/7/export/?format=html&scope=tree");
  assert.equal(downloadUrl({ session: 7, format: "html" }), "/api/sessions/7/export/?format=html&scope=branch");
});

test("a share link's token goes with every download", () => {
  assert.equal(downloadUrl({ session: 3, link: "t/k" }), "/api/sessions/3/export/?link=t%2Fk");
  assert.equal(downloadUrl({ session: 3, format: "markdown", scope: "tree", link: "tk" }), "/api/sessions/3/export/?format=markdown&scope=tree&link=tk");
});
