import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";

import { Spool } from "../lib/spool.js";

function setup() {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "pi-piweb-"));
  const file = path.join(root, "session.jsonl");
  fs.writeFileSync(file, JSON.stringify({ type: "session", version: 3, id: "s1" }) + "\n");
  return { dir: path.join(root, "state"), file };
}

const line = (id, text = "x") => JSON.stringify({ type: "message", id, text }) + "\n";

test("only complete lines are spooled, and a character split across writes stays whole", () => {
  const { dir, file } = setup();
  const spool = new Spool(dir, "s1");
  const bytes = Buffer.from(line("a", "é✓"));
  fs.appendFileSync(file, bytes.subarray(0, bytes.length - 4));
  assert.equal(spool.capture(file), 0);
  fs.appendFileSync(file, bytes.subarray(bytes.length - 4));
  assert.equal(spool.capture(file), 1);
  assert.deepEqual(spool.records.map((r) => [r.n, r.id, r.line]), [[1, "a", line("a", "é✓").trimEnd()]]);
  assert.equal(spool.records[0].end, fs.statSync(file).size);
});

test("what waits survives a restart, in order, and acknowledged lines leave the spool", () => {
  const { dir, file } = setup();
  const first = new Spool(dir, "s1");
  fs.appendFileSync(file, line("a") + line("b") + line("c"));
  first.capture(file);
  first.ack(first.records[0], "a", 7);
  const again = new Spool(dir, "s1");
  assert.deepEqual(again.records.map((r) => r.id), ["b", "c"]);
  assert.deepEqual(again.state.acked.lastId, "a");
  assert.equal(again.state.serverId, 7);
  fs.appendFileSync(file, line("d"));
  assert.equal(again.capture(file), 1);
  assert.deepEqual(again.records.map((r) => r.n), [2, 3, 4]);
});

test("a lost spool tail is read again from the session file", () => {
  const { dir, file } = setup();
  const spool = new Spool(dir, "s1");
  fs.appendFileSync(file, line("a") + line("b"));
  spool.capture(file);
  const kept = fs.readFileSync(spool.spoolPath, "utf8").split("\n")[0] + "\n";
  fs.writeFileSync(spool.spoolPath, kept + '{"n":2,"en'); // a crash mid-write
  const again = new Spool(dir, "s1");
  assert.deepEqual(again.records.map((r) => r.id), ["a"]);
  again.capture(file);
  assert.deepEqual(again.records.map((r) => r.id), ["a", "b"]);
});

test("a rewritten file starts over and asks the server to match by id", () => {
  const { dir, file } = setup();
  const spool = new Spool(dir, "s1");
  fs.appendFileSync(file, line("a") + line("b"));
  spool.capture(file);
  spool.ack(spool.records[1], "b", 1);
  fs.writeFileSync(file, JSON.stringify({ type: "session", version: 3, id: "s1" }) + "\n" + line("a2"));
  assert.equal(spool.capture(file), 1);
  assert.equal(spool.state.reset, true);
  assert.deepEqual(spool.state.acked.lines, 0);
  assert.deepEqual(spool.records.map((r) => [r.n, r.id]), [[1, "a2"]]);
});

test("batches keep to the line and byte limits but always carry one line", () => {
  const { dir, file } = setup();
  const spool = new Spool(dir, "s1");
  fs.appendFileSync(file, line("a", "1".repeat(100)) + line("b") + line("c") + line("d"));
  spool.capture(file);
  assert.deepEqual(spool.batch(2, 1e6).map((r) => r.id), ["a", "b"]);
  assert.deepEqual(spool.batch(10, 10).map((r) => r.id), ["a"]);
  assert.deepEqual(spool.batch(10, 1e6).map((r) => r.id), ["a", "b", "c", "d"]);
});

test("off and private sessions spool nothing; private drops what waited", () => {
  const { dir, file } = setup();
  const spool = new Spool(dir, "s1");
  fs.appendFileSync(file, line("a"));
  spool.capture(file);
  spool.state.private = true;
  spool.drop();
  fs.appendFileSync(file, line("b"));
  assert.equal(spool.capture(file), 0);
  assert.equal(new Spool(dir, "s1").pending, 0);
  assert.deepEqual(Spool.waiting(dir), []);
});
