// @ts-check
// Presence: who else has this session open and which node each has selected — a list of people in
// the header and their initials at the tree rows they are on. The page tells the socket its selected
// node when it changes and every heartbeat; a tab that stops beating drops out on the server. A Pi
// writing the session live (the Pi package) is shown too: "live from Pi on <device>" in the header and
// a terminal mark at the entry it wrote last.
import { el } from "../api.js";
import { icon } from "../icons.js";
import { $, hooks, state } from "./page.js";
import { liveSocket } from "./live.js";

const WATCH_MS = 250; // how often the selection is compared with what was last sent
/** @type {Piweb.Viewer[]} */
let viewers = [];
/** @type {string | null} */
let you = null;
let beatMs = 4000;
let sentNode;
let beating = null;

export function initials(name) {
  const words = String(name || "?").trim().split(/\s+/).filter(Boolean);
  if (words.length > 1) return (words[0][0] + words[1][0]).toUpperCase();
  return (words[0] || "?").slice(0, 2).toUpperCase();
}

// A colour per person, far from the next person's: steps of the golden angle keep any run of account
// numbers apart ("user-1", "user-2", … were one degree apart before); other keys are hashed (FNV-1a) first.
export function hue(text) {
  const account = /^user-(\d+)$/.exec(String(text));
  let n = account ? Number(account[1]) : 0x811c9dc5;
  if (!account) for (const c of String(text)) n = Math.imul(n ^ /** @type {number} */ (c.codePointAt(0)), 0x01000193) >>> 0;
  return Math.round((n * 137.508) % 360);
}

// One entry per person (a person with two tabs is one avatar at two nodes); link visitors and each
// writing Pi apart.
function people() {
  const byPerson = new Map();
  for (const v of viewers) {
    const id = v.kind === "user" ? `user-${v.userId}` : v.key;
    const person = byPerson.get(id) || { id, name: v.name, kind: v.kind, device: v.device || "", nodes: new Set(), you: false };
    if (v.node) person.nodes.add(v.node);
    if (v.key === you) person.you = true;
    byPerson.set(id, person);
  }
  return [...byPerson.values()];
}

/** What a writing Pi is called: "live from Pi on laptop (Ada)". */
function piTitle(person) {
  return `live from Pi on ${person.device || "a device"} (${person.name})`;
}

function avatar(person, small) {
  const pi = person.kind === "pi";
  const title = pi ? piTitle(person) : `${person.name}${person.you ? " (you)" : ""}`;
  const visitor = person.kind === "link";
  return el(
    "span",
    {
      class: `avatar${small ? " small" : ""}${person.you ? " you" : ""}${visitor ? " visitor" : ""}${pi ? " pi" : ""}`,
      text: visitor || pi ? undefined : initials(person.name),
      title,
      role: "img", // a picture of the person, named by the label (a bare span may not carry one)
      "aria-label": title,
      dataset: { person: person.name },
      style: { "--avatar-hue": hue(person.id) },
    },
    visitor ? icon("link") : pi ? icon("terminal") : null,
  );
}

// The header says a Pi is writing this session now, and where: new entries are on their way.
function drawWriters() {
  const writers = people().filter((p) => p.kind === "pi");
  let badge = $("pi-live");
  if (!writers.length) {
    if (badge) badge.remove();
    return;
  }
  if (!badge) {
    badge = el("span", { id: "pi-live", class: "live pi-live", role: "status" });
    $("live-status").before(badge);
  }
  const devices = [...new Set(writers.map((p) => p.device || "a device"))];
  badge.replaceChildren(icon("terminal"), ` live from Pi on ${devices.join(", ")}`);
  badge.title = writers.map(piTitle).join("\n");
}

function drawList() {
  let box = $("presence");
  if (!box) {
    box = el("span", { id: "presence", class: "presence", role: "group", "aria-label": "Who has this session open" });
    $("live-status").before(box);
  }
  const shown = people();
  box.replaceChildren(
    ...shown.map((person) => {
      const node = avatar(person, false);
      const [first] = person.nodes;
      if (first && !person.you) {
        node.classList.add("jump");
        node.title += person.kind === "pi" ? " — click to see what it wrote last" : " — click to see their node";
        // A control, for the keyboard as well as the mouse.
        node.setAttribute("role", "button");
        node.setAttribute("aria-label", node.title);
        node.tabIndex = 0;
        node.addEventListener("click", () => hooks.select(first));
        node.addEventListener("keydown", (event) => {
          if (event.key !== "Enter" && event.key !== " ") return;
          event.preventDefault();
          hooks.select(first);
        });
      }
      return node;
    }),
  );
  box.hidden = shown.length < 2; // alone: nothing to show
}

// Initials of the others at the rows they have selected; redrawn with the rows.
function markRows() {
  const rows = /** @type {NodeListOf<HTMLElement>} */ (document.querySelectorAll("#tree-scroll .tree-rows [data-id]"));
  const at = new Map();
  for (const person of people()) {
    if (person.you) continue;
    for (const node of person.nodes) {
      if (!at.has(node)) at.set(node, []);
      at.get(node).push(person);
    }
  }
  for (const row of rows) {
    const old = row.querySelector(":scope > .presence-marks");
    const here = at.get(row.dataset.id);
    if (!here && !old) continue;
    if (old) old.remove();
    if (here) row.appendChild(el("span", { class: "presence-marks" }, ...here.map((p) => avatar(p, true))));
  }
}

function beat() {
  const socket = liveSocket();
  if (socket && socket.send({ type: "presence", node: state.selectedId || null })) sentNode = state.selectedId;
}

function restartBeat() {
  clearInterval(beating);
  beating = setInterval(beat, beatMs);
}

export function initPresence() {
  document.addEventListener("piweb:live-open", () => {
    sentNode = undefined;
    beat();
  });
  document.addEventListener("piweb:presence", (event) => {
    const message = event.detail;
    viewers = Array.isArray(message.viewers) ? message.viewers : [];
    you = message.you;
    const every = Number(message.heartbeat) * 1000;
    if (every > 0 && every !== beatMs) {
      beatMs = every;
      restartBeat();
    }
    drawList();
    drawWriters();
    markRows();
  });
  setInterval(() => {
    if (state.selectedId !== sentNode) beat();
  }, WATCH_MS);
  // A hidden tab's timers may be slowed down past the server's expiry: say so at once on coming back.
  document.addEventListener("visibilitychange", () => document.visibilityState === "visible" && beat());
  restartBeat();
  const rows = document.querySelector("#tree-scroll .tree-rows");
  if (rows) new MutationObserver(markRows).observe(rows, { childList: true });
}
