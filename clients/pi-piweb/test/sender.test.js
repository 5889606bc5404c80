import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";

import { Sender, Unreachable } from "../lib/sender.js";
import { Spool } from "../lib/spool.js";

const line = (id) => JSON.stringify({ type: "message", id }) + "\n";

function setup() {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "pi-piweb-"));
  const file = path.join(root, "session.jsonl");
  fs.writeFileSync(file, JSON.stringify({ type: "session", version: 3, id: "s1" }) + "\n");
  return { dir: path.join(root, "state"), file };
}

/** A stand-in server that stores lines by id, as piweb does, and can be switched off. */
function fakeServer() {
  const server = { up: true, stored: [], requests: [], cursor: { lines: 0 } };
  server.post = async (control, lines) => {
    server.requests.push({ control, lines });
    if (!server.up) throw new Unreachable("connection refused");
    if (!control.reset && control.from.lines !== server.cursor.lines) {
      return { status: 409, payload: { kind: "cursor", cursor: server.cursor } };
    }
    for (const text of lines) if (!server.stored.includes(text)) server.stored.push(text);
    server.cursor = { lines: control.to.lines };
    return { status: 200, payload: { sessionId: 5 } };
  };
  return server;
}

const wait = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

test("lines written in one burst go out in one request", async () => {
  const { dir, file } = setup();
  const server = fakeServer();
  const spool = new Spool(dir, "s1");
  const told = [];
  const onChange = (s) => told.push([s.status, spool.pending]);
  const sender = new Sender({ spool, post: server.post, file: () => file, delayMs: 20, onChange });
  for (const id of ["a", "b", "c"]) {
    fs.appendFileSync(file, line(id));
    spool.capture(file);
    sender.kick();
  }
  await wait(60);
  await sender.running;
  assert.equal(server.requests.length, 1);
  assert.deepEqual(server.requests[0].control.to, { lines: 3, bytes: fs.statSync(file).size });
  assert.equal(sender.status, "synced");
  assert.equal(spool.pending, 0);
  assert.deepEqual(told.at(-1), ["synced", 0]); // the footer learns that nothing waits any more
});

test("while the server is away lines wait; they go out once, in order, when it is back", async () => {
  const { dir, file } = setup();
  const server = fakeServer();
  server.up = false;
  const spool = new Spool(dir, "s1");
  const sender = new Sender({ spool, post: server.post, file: () => file, delayMs: 1, retryMs: [10] });
  fs.appendFileSync(file, line("a") + line("b"));
  spool.capture(file);
  await sender.drain();
  assert.equal(sender.status, "offline");
  assert.equal(spool.pending, 2);
  fs.appendFileSync(file, line("c"));
  spool.capture(file);
  server.up = true;
  await wait(40);
  await sender.running;
  assert.equal(sender.status, "synced");
  assert.deepEqual(server.stored.map((t) => JSON.parse(t).id), ["a", "b", "c"]);
});

test("lines spooled before Pi quit go out after it starts again", async () => {
  const { dir, file } = setup();
  const server = fakeServer();
  server.up = false;
  const before = new Spool(dir, "s1");
  const quitting = new Sender({ spool: before, post: server.post, file: () => file, retryMs: [10_000] });
  fs.appendFileSync(file, line("a") + line("b"));
  before.capture(file);
  await quitting.close(50);
  assert.deepEqual(Spool.waiting(dir), ["s1"]);

  server.up = true;
  const after = new Spool(dir, "s1");
  fs.appendFileSync(file, line("c"));
  after.capture(file);
  await new Sender({ spool: after, post: server.post, file: () => file }).drain();
  assert.deepEqual(server.stored.map((t) => JSON.parse(t).id), ["a", "b", "c"]);
  assert.equal(server.requests.filter((r) => r.lines.length).at(-1).control.from.lines, 0);
});

test("a server that holds less than acknowledged gets the file again from the top", async () => {
  const { dir, file } = setup();
  const server = fakeServer();
  const spool = new Spool(dir, "s1");
  const sender = new Sender({ spool, post: server.post, file: () => file });
  fs.appendFileSync(file, line("a"));
  spool.capture(file);
  await sender.drain();
  server.cursor = { lines: 0 }; // restored from an older backup
  server.stored = [];
  fs.appendFileSync(file, line("b"));
  spool.capture(file);
  await sender.drain();
  assert.deepEqual(server.stored.map((t) => JSON.parse(t).id), ["a", "b"]);
  assert.equal(sender.status, "synced");
});

test("a conflict stops this session and says why", async () => {
  const { dir, file } = setup();
  const spool = new Spool(dir, "s1");
  const post = async () => ({ status: 409, payload: { kind: "conflict", error: "entry a differs" } });
  const sender = new Sender({ spool, post, file: () => file });
  fs.appendFileSync(file, line("a"));
  spool.capture(file);
  await sender.drain();
  assert.equal(sender.status, "conflict");
  assert.equal(sender.reason, "entry a differs");
  assert.equal(spool.pending, 1);
});
