import assert from "node:assert/strict";
import { test } from "node:test";

import { Beat, httpBeat } from "../lib/presence.js";
import { httpPost } from "../lib/sender.js";
import { secretsWarning } from "../lib/share.js";

const wait = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

test("beats go out only while the session is on piweb and sent, and follow the server's pace", async () => {
  const sent = [];
  let active = false;
  const beat = new Beat({
    everyMs: 20,
    active: () => active,
    send: async (leaving) => {
      sent.push(leaving);
      return { heartbeat: 0.05 };
    },
  });
  beat.start();
  await wait(70);
  assert.deepEqual(sent, [], "no beat before the session reached piweb");
  active = true;
  await wait(45);
  assert.ok(sent.length >= 1, "a beat once it is there");
  assert.equal(beat.everyMs, 50, "the pace the server asked for");
  const before = sent.length;
  await wait(120);
  assert.ok(sent.length - before <= 3, `about one beat per 50 ms, got ${sent.length - before}`);
  assert.ok(sent.every((leaving) => leaving === false));
  beat.stop();
});

test("leaving is said once, after the beats stop, and never waits longer than asked", async () => {
  const sent = [];
  const beat = new Beat({ everyMs: 10, active: () => true, send: async (leaving) => sent.push(leaving) });
  beat.start();
  await wait(35);
  assert.equal(await beat.leave(100), true);
  const count = sent.length;
  await wait(40);
  assert.equal(sent.length, count, "no beat after leaving");
  assert.equal(sent.at(-1), true);

  const slow = new Beat({ active: () => true, send: () => new Promise(() => {}) });
  const started = Date.now();
  // The package's own timers never keep Pi alive; this one keeps the test's process up meanwhile.
  const alive = setInterval(() => {}, 1000);
  assert.equal(await slow.leave(60), false);
  clearInterval(alive);
  assert.ok(Date.now() - started < 500);
});

test("a beat that fails is skipped, and a private or unsent session says nothing on leaving", async () => {
  const failing = new Beat({ active: () => true, send: async () => Promise.reject(new Error("down")) });
  assert.equal(await failing.tick(), false);
  const sent = [];
  const quiet = new Beat({ active: () => false, send: async (leaving) => sent.push(leaving) });
  assert.equal(await quiet.leave(50), false);
  assert.deepEqual(sent, []);
});

test("pushes and beats name the device; beats say which Pi session", async () => {
  const calls = [];
  const fetchImpl = async (url, init) => {
    calls.push({ url, init });
    return new Response(JSON.stringify({ sessionId: 3, heartbeat: 15 }), { status: 200 });
  };
  const post = httpPost({ server: "http://piweb", token: "t", device: "laptop", fetchImpl });
  await post({ header: "{}", from: { lines: 0 }, to: { lines: 1 } }, ["line"]);
  const control = JSON.parse(calls[0].init.body.split("\n")[0]);
  assert.equal(control.device, "laptop");
  assert.equal(calls[0].init.body.split("\n")[1], "line");

  const beat = httpBeat({ server: "http://piweb", token: "t", device: "laptop", fetchImpl });
  assert.deepEqual(await beat("pi-1", true), { sessionId: 3, heartbeat: 15 });
  assert.equal(calls[1].url, "http://piweb/api/sync/presence/");
  assert.deepEqual(JSON.parse(calls[1].init.body), { piId: "pi-1", device: "laptop", leaving: true });

  const refused = httpBeat({
    server: "http://piweb",
    token: "t",
    device: "laptop",
    fetchImpl: async () => new Response(JSON.stringify({ error: "no such session" }), { status: 404 }),
  });
  await assert.rejects(refused("pi-2", false), /no such session/);
});

test("a share warns of the secrets the link would show, not of redacted ones or other branches", () => {
  const findings = [
    { entryId: "a", kind: "aws-key", redacted: false },
    { entryId: "b", kind: "github-token", redacted: false },
    { entryId: "c", kind: "aws-key", redacted: true },
  ];
  assert.equal(
    secretsWarning({ findings, scanned: true }, null),
    "The link would show 2 secrets piweb found (aws-key, github-token).",
  );
  assert.equal(
    secretsWarning({ findings, scanned: true }, [{ id: "root" }, { id: "a" }]),
    "The link would show 1 secret piweb found (aws-key).",
  );
  assert.equal(secretsWarning({ findings, scanned: true }, [{ id: "c" }]), "");
  assert.match(secretsWarning({ findings: [], scanned: false }, null), /not scanned/);
});
