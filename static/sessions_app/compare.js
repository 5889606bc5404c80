// @ts-check
// Branch compare: two nodes' projected contexts side by side, with messages added, removed or changed
// and the token difference. Messages are matched by their source entry and position in it. The Files tab
// compares the two branches by their work: the files each changed after they parted, with the diffs.
import { api, clear, el, query } from "./api.js";
import { counts, renderHunks } from "./diff.js";
import { renderContextMessage } from "./render.js";

// The template always has these elements.
/** @type {Piweb.ComparePageConfig} */
const cfg = JSON.parse(/** @type {HTMLElement} */ (document.getElementById("compare-config")).textContent);
const summary = /** @type {HTMLElement} */ (document.getElementById("compare-summary"));
const base = `/api/sessions/${cfg.session}`;
const LIMIT = 400; // messages drawn per side; the counts and tokens cover all

async function context(leaf) {
  const { body } = await api("GET", `${base}/context/${query({ leaf, head: 40, tail: LIMIT - 40, llm: false, render: 80 })}`);
  return body;
}

function keyed(body) {
  const seen = new Map();
  return body.messages.map((item) => {
    const n = seen.get(item.entryId) || 0;
    seen.set(item.entryId, n + 1);
    return { key: `${item.entryId || "?"}#${n}`, item, text: JSON.stringify(item.message) };
  });
}

function column(box, list, other, onlyLabel) {
  const index = new Map(other.map((m) => [m.key, m]));
  let only = 0;
  let changed = 0;
  for (const m of list) {
    const match = index.get(m.key);
    const state = !match ? onlyLabel : match.text === m.text ? "same" : "changed";
    if (state === onlyLabel) only += 1;
    if (state === "changed") changed += 1;
    const card = renderContextMessage(m.item);
    box.appendChild(el("div", { class: `cmp ${state}`, dataset: { state, entry: m.item.entryId || "" } }, el("span", { class: "state", text: state === "same" ? "" : state }), card));
  }
  return { only, changed };
}

async function start() {
  if (!cfg.a || !cfg.b) {
    summary.textContent = "Pick two entries: on the session page, select one, press Compare…, then select the other and press Compare again.";
    return;
  }
  try {
    const [a, b] = await Promise.all([context(cfg.a), context(cfg.b)]);
    /** @type {HTMLElement} */ (document.getElementById("col-a")).textContent = `A · ${cfg.a} · ${a.messageCount} messages · ≈ ${a.estimate.tokens.toLocaleString()} tokens`;
    /** @type {HTMLElement} */ (document.getElementById("col-b")).textContent = `B · ${cfg.b} · ${b.messageCount} messages · ≈ ${b.estimate.tokens.toLocaleString()} tokens`;
    const ka = keyed(a);
    const kb = keyed(b);
    const left = column(/** @type {HTMLElement} */ (document.getElementById("compare-a")), ka, kb, "removed");
    const right = column(/** @type {HTMLElement} */ (document.getElementById("compare-b")), kb, ka, "added");
    const diff = b.estimate.tokens - a.estimate.tokens;
    summary.append(
      el("span", { id: "cmp-added", text: `${right.only} added` }),
      el("span", { id: "cmp-removed", text: `${left.only} removed` }),
      el("span", { id: "cmp-changed", text: `${right.changed} changed` }),
      el("strong", { id: "cmp-tokens", text: `B − A: ${diff >= 0 ? "+" : "−"}${Math.abs(diff).toLocaleString()} tokens` }),
    );
    if (a.skippedMessages || b.skippedMessages) summary.append(el("span", { class: "muted", text: "Long contexts: only their first and last messages are drawn." }));
    document.body.dataset.ready = "true";
  } catch (error) {
    summary.textContent = error.message;
  }
}

// -- by files ---------------------------------------------------------------------------------------------

/** @param {string} id @returns {HTMLElement} */
const byId = (id) => /** @type {HTMLElement} */ (document.getElementById(id));
const FILES_SHOWN = 500; // files per list; the counts cover all
const KIND_TEXT = { created: "created", written: "written", edited: "edited" };
let filesAsked = false;

/** @param {string} id @param {string} text */
function entryLink(id, text) {
  return el("a", { href: `/sessions/${cfg.session}/#entry=${encodeURIComponent(id)}`, class: "entry-link", text, title: id });
}

/** One side's own changes to a file, newest first, each anchored to the entry that made it. */
function sideChanges(side) {
  return side.changes.map((change) =>
    el(
      "div",
      { class: "file-change", dataset: { entry: change.entryId } },
      el("p", { class: "small change-head" }, el("strong", { text: KIND_TEXT[change.kind] || change.kind }), " ", counts(change.added, change.removed), " · ", entryLink(change.entryId, change.entryId)),
      renderHunks(change.hunks, change.numbered),
    ),
  );
}

/** A file changed on one side only: its summary opens to its diffs. @param {any} file @param {"left" | "right"} which */
function oneSided(file, which) {
  const side = file[which];
  return el(
    "details",
    { class: "cmp-file", dataset: { path: file.path } },
    el("summary", { title: file.absolute }, el("span", { class: "file-path mono", text: file.path }), " ", el("span", { class: "muted small", text: side.kinds.map((k) => KIND_TEXT[k] || k).join(", ") }), " ", counts(side.added, side.removed)),
    ...sideChanges(side),
  );
}

/** A file changed on both sides: the two sides' diffs side by side, and how the two versions differ. */
function twoSided(file) {
  const sideColumn = (/** @type {string} */ label, side) =>
    el("div", { class: "compare-col", dataset: { side: label } }, el("p", { class: "small" }, el("strong", { text: label }), " ", counts(side.added, side.removed)), ...sideChanges(side));
  let versions;
  if (file.sameContent === true) versions = el("p", { class: "muted small versions", text: "Both branches end with the same text of this file." });
  else if (file.contentDiff) {
    versions = el(
      "details",
      { class: "versions" },
      el("summary", {}, "A's text → B's text ", counts(file.contentDiff.added, file.contentDiff.removed)),
      renderHunks(file.contentDiff.hunks, true),
    );
  } else {
    versions = el("p", { class: "muted small versions", text: "How the two versions differ is not known: a branch changed the file without its whole text (or it is too long to compare)." });
  }
  return el(
    "section",
    { class: "cmp-file both", dataset: { path: file.path } },
    el("h3", { class: "file-path mono", text: file.path, title: file.absolute }),
    versions,
    el("div", { class: "compare-grid" }, sideColumn("A", file.left), sideColumn("B", file.right)),
  );
}

/** @param {HTMLElement} box @param {HTMLElement[]} items */
function fill(box, items) {
  clear(box).append(...(items.length ? items : [el("p", { class: "muted small", text: "None." })]));
}

function drawFiles(body) {
  const line = byId("files-summary");
  const { onlyLeft, onlyRight, both } = body.counts;
  clear(line).append(
    el("span", { id: "files-only-a-count", text: `${onlyLeft} only on A` }),
    el("span", { id: "files-only-b-count", text: `${onlyRight} only on B` }),
    el("span", { id: "files-both-count", text: `${both} on both` }),
  );
  if (body.sharedChanges) {
    line.append(el("span", { class: "muted", text: `${body.sharedChanges} ${body.sharedChanges === 1 ? "change" : "changes"} made before the branches parted: on both, left out` }));
  }
  if (body.hasMore) line.append(el("span", { class: "muted", text: `Only the ${FILES_SHOWN} changed last of each list are drawn.` }));
  fill(byId("files-both"), body.both.map(twoSided));
  fill(byId("files-only-a"), body.onlyLeft.map((/** @type {any} */ f) => oneSided(f, "left")));
  fill(byId("files-only-b"), body.onlyRight.map((/** @type {any} */ f) => oneSided(f, "right")));
}

async function loadFiles() {
  if (filesAsked) return;
  if (!cfg.a || !cfg.b) {
    byId("files-summary").textContent = "Pick two entries to compare their branches' files.";
    return;
  }
  filesAsked = true;
  const view = byId("files-view");
  view.setAttribute("aria-busy", "true");
  byId("files-summary").textContent = "Comparing the files of both branches…";
  try {
    const { body } = await api("GET", `${base}/files/${query({ leaf: cfg.a, against: cfg.b, limit: FILES_SHOWN })}`);
    drawFiles(body);
    view.dataset.ready = "true";
  } catch (error) {
    filesAsked = false;
    byId("files-summary").textContent = `The files could not be compared: ${error.message}`;
  } finally {
    view.removeAttribute("aria-busy");
  }
}

/** @param {"context" | "files"} name */
function showTab(name) {
  for (const tab of ["context", "files"]) {
    byId(`tab-${tab}`).setAttribute("aria-selected", String(tab === name));
    byId(`${tab}-view`).hidden = tab !== name;
  }
  // The tab is kept in the address, so a link (or a reload) opens it again.
  history.replaceState(null, "", name === "files" ? "#files" : location.pathname + location.search);
  if (name === "files") loadFiles();
}

byId("tab-context").addEventListener("click", () => showTab("context"));
byId("tab-files").addEventListener("click", () => showTab("files"));
if (location.hash === "#files") showTab("files");

start();
