// The composer's picture checks and the image blocks it sends.
import assert from "node:assert/strict";
import { test } from "node:test";

import { imageBlock, pictureProblem } from "../../static/sessions_app/attachments.js";

const limits = { attached: 0, maxBytes: 2048, maxCount: 2 };

test("a picture of a known type and size is taken", () => {
  assert.equal(pictureProblem({ name: "a.png", type: "image/png", size: 100 }, limits), null);
  assert.equal(pictureProblem({ name: "a.webp", type: "image/webp", size: 2048 }, limits), null);
});

test("other files, large pictures and one too many are refused, naming the file and the limit", () => {
  assert.equal(pictureProblem({ name: "notes.txt", type: "text/plain", size: 5 }, limits), "notes.txt is not a PNG, JPEG, GIF or WebP picture.");
  assert.equal(pictureProblem({ name: "big.png", type: "image/png", size: 4096 }, limits), "big.png is 4 KiB; a picture may be at most 2 KiB.");
  assert.equal(pictureProblem({ name: "c.png", type: "image/png", size: 1 }, { ...limits, attached: 2 }), "At most 2 pictures go with one message.");
});

test("a data URL becomes Pi's image block; anything else none", () => {
  assert.deepEqual(imageBlock("data:image/png;base64,iVBORw0KGgo="), { type: "image", data: "iVBORw0KGgo=", mimeType: "image/png" });
  assert.equal(imageBlock("https://example.com/a.png"), null);
});
