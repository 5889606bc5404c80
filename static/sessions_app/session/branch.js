// @ts-check
// The branch panel: the selected entry's path, newest first, older pages as it is scrolled up, the
// sibling switchers, and the message being streamed. `select` keeps the three panels in step.
import { api, clear, el, query } from "../api.js";
import { copyText } from "../dialogs.js";
import { describeEntry, textOf } from "../format.js";
import { renderEntry } from "../render.js";
import { authorTag } from "./attribution.js";
import { clearContext, loadContext } from "./context.js";
import { showCosts } from "./costs.js";
import { MarkdownStream } from "./markdown_stream.js";
import { $, BRANCH_FIRST, BRANCH_STEP, CONTEXT_PAUSE, NEAR, base, cardDecorators, hooks, showError, state } from "./page.js";
import { pathWindow } from "./paging.js";
import { phone, showPanel, tree } from "./tree_panel.js";

const branchBox = $("branch");
const entryTools = $("entry-tools");

// A branch is drawn scrolled to its end, where the selected entry is. Cards skipped by content-visibility
// are laid out at a guessed height and grow once shown, so until the reader scrolls up, any card that
// changes size puts the end back in view.
let keepEnd = false;
let endTop = 0;
function toEnd() {
  branchBox.scrollTop = branchBox.scrollHeight;
  endTop = branchBox.scrollTop;
}
const settle = new ResizeObserver(() => {
  if (keepEnd) toEnd();
});
branchBox.addEventListener(
  "scroll",
  () => {
    if (branchBox.scrollTop < endTop - 2) keepEnd = false;
  },
  { passive: true },
);

// The selected entry's comments and actions follow its card, as a chat puts them under a message. They
// are moved, never redrawn, so an open comment box and its listeners survive a redraw.
function placeEntryTools(id) {
  const card = branchBox.querySelector(`:scope > .branch-item[data-id="${CSS.escape(id)}"]`);
  if (card) card.after(entryTools);
  else branchBox.appendChild(entryTools);
}

// Select an entry: the tree marks it, the branch panel draws its path, then the context is projected.
export async function select(id, { fromTree = false, show = false } = {}) {
  state.selectedId = id;
  if (show && phone.matches) showPanel("branch");
  if (!fromTree) tree.select(id);
  else tree.selectedId = id;
  history.replaceState(null, "", `#entry=${encodeURIComponent(id)}`);
  const token = ++state.selectToken;
  // Named as people read it; the id stays in the tooltip for those who need it.
  const info = $("selected-info");
  info.textContent = describeEntry(state.entries.get(id));
  info.title = id;
  hooks.updateActions();
  document.dispatchEvent(new CustomEvent("piweb:selected", { detail: { id } }));
  // A click draws the branch first, then the context: its small request answers the click without
  // sharing the server (or this page's main thread). Moving through the tree (arrow keys, quick clicks)
  // loads only the context it stops at. The first screen asks for the context with the tree and the
  // branch: it is read from running sums, as cheap at the leaf of a long path as of a short one.
  // Callers that need the context wait for state.contextLoaded.
  clearContext(id);
  const drawn = renderBranch(id, token)
    .then(() => {
      // The branch brought the entry if the page had not read it yet.
      if (token === state.selectToken && !state.entries.has(id) && shownPath.records.has(id)) info.textContent = describeEntry(shownPath.records.get(id));
    })
    .catch((e) => showError(e.message));
  state.branchDrawn = drawn;
  const turn = state.ready ? drawn.then(() => new Promise((resolve) => setTimeout(resolve, CONTEXT_PAUSE))) : Promise.resolve();
  state.contextLoaded = turn
    .then(() => (token === state.selectToken ? loadContext(id, token) : null))
    .catch((e) => showError(e.message));
  await drawn;
}

// The part of the selected entry's path that is drawn: ids root first, from depth firstDepth (the
// path's depths are consecutive). A click on one of its entries draws that entry's branch at once from
// it, and the request only confirms it (or brings what was missing).
/** @type {{ id: string | null, ids: string[], records: Map<string, any>, firstDepth: number, hasMore: boolean }} */
let shownPath = { id: null, ids: [], records: new Map(), firstDepth: 0, hasMore: false };
let olderLoading = null;

function cachedBranch(id) {
  const part = pathWindow(shownPath.ids.length, shownPath.ids.indexOf(id), shownPath.firstDepth, shownPath.hasMore, BRANCH_FIRST);
  if (!part) return null;
  return {
    entries: shownPath.ids.slice(part.from, part.to).map((x) => shownPath.records.get(x)),
    firstDepth: part.firstDepth,
    hasMore: part.hasMore,
  };
}

const sameBranch = (a, b) =>
  a.hasMore === b.hasMore && a.entries.length === b.entries.length && a.entries.every((r, i) => r.id === b.entries[i].id);

async function renderBranch(id, token) {
  const cached = cachedBranch(id);
  if (cached) drawBranch(id, cached);
  // One small request for the newest part of the path, read segment by segment on the server.
  const { body } = await api("GET", `${base}/path/${query({ leaf: id, limit: BRANCH_FIRST, render: 1 })}`);
  if (token !== state.selectToken) return;
  await state.treeLoaded; // the sibling switchers need the tree
  if (token !== state.selectToken) return;
  for (const record of body.entries) if (!state.entries.has(record.id)) state.entries.set(record.id, record);
  if (!cached || !sameBranch(cached, body)) drawBranch(id, body);
}

// The next older page of the drawn path, put above what is shown without moving it.
function loadOlder() {
  if (!shownPath.hasMore || olderLoading) return olderLoading;
  const { id, firstDepth } = shownPath;
  const token = state.selectToken;
  branchBox.setAttribute("aria-busy", "true");
  olderLoading = (async () => {
    await null; // a branch drawn at once from the last one gets its context promise after this turn
    await state.contextLoaded; // the context panel of this selection goes first
    if (token !== state.selectToken) return;
    const params = { leaf: id, beforeDepth: firstDepth, limit: BRANCH_STEP, render: 1 };
    const { body } = await api("GET", `${base}/path/${query(params)}`);
    if (token !== state.selectToken || shownPath.id !== id || shownPath.firstDepth !== firstDepth) return;
    for (const record of body.entries) if (!state.entries.has(record.id)) state.entries.set(record.id, record);
    const height = branchBox.scrollHeight;
    const older = branchBox.querySelector(".older");
    const anchor = older ? older.nextSibling : branchBox.firstChild;
    const cards = document.createDocumentFragment();
    for (const record of body.entries) cards.append(...branchCard(record, id));
    branchBox.insertBefore(cards, anchor);
    shownPath.ids = body.entries.map((r) => r.id).concat(shownPath.ids);
    for (const record of body.entries) shownPath.records.set(record.id, record);
    shownPath.firstDepth = body.firstDepth ?? 0;
    shownPath.hasMore = body.hasMore;
    olderNotice();
    showCosts(id);
    branchBox.scrollTop += branchBox.scrollHeight - height;
  })()
    .catch((e) => showError(e.message))
    .finally(() => {
      olderLoading = null;
      branchBox.removeAttribute("aria-busy");
    });
  return olderLoading.then(fillBranch);
}

// While the top of the drawn path is in reach (scrolled up, or a path too short to fill the panel),
// bring the next older page.
function fillBranch() {
  if (shownPath.hasMore && branchBox.scrollTop < NEAR) loadOlder();
}

function olderNotice() {
  const old = branchBox.querySelector(":scope > .older");
  if (!shownPath.hasMore) {
    if (old) old.remove();
    return;
  }
  if (old) {
    /** @type {Element} */ (old.querySelector(".older-count")).textContent = `the newest ${shownPath.ids.length.toLocaleString()}`;
    return;
  }
  const more = el("button", { type: "button", class: "link", text: "show older entries" });
  more.addEventListener("click", () => loadOlder());
  branchBox.prepend(el("p", { class: "muted small older" }, "Older entries on this path are not shown (", el("span", { class: "older-count", text: `the newest ${shownPath.ids.length.toLocaleString()}` }), " are; more load as you scroll up). ", more));
}

// One entry of the path: its card, and the sibling switcher on a line of its own when it has no header.
// The whole text of a message (or summary), for its Copy button.
function messageText(record) {
  const e = record.entry || {};
  if (e.type === "branch_summary" || e.type === "compaction") return e.summary || "";
  if (e.type === "custom_message") return textOf(e.content);
  if (e.type !== "message" || !e.message) return "";
  return textOf(e.message.content);
}

function branchCard(record, selectedId) {
  const node = renderEntry(record, (id) => state.entries.get(id));
  node.dataset.id = record.id;
  node.classList.add("branch-item");
  if (record.id === selectedId) node.classList.add("selected");
  const text = messageText(record);
  const head = node.querySelector(":scope > header");
  if (text && head) {
    const copy = el("button", { type: "button", class: "icon small copy-message", text: "Copy", "aria-label": "Copy this message", title: "Copy this message's text" });
    copy.addEventListener("click", (event) => {
      event.stopPropagation();
      copyText(text, copy);
    });
    head.appendChild(copy);
  }
  for (const decorate of cardDecorators) decorate(node, record);
  const by = head && authorTag(record);
  if (by) head.appendChild(by);
  const info = state.nodes.get(record.id);
  if (info && info.label) node.prepend(el("span", { class: "badge label", text: info.label }));
  if (info && info.omitted) node.classList.add("omitted");
  node.addEventListener("click", (event) => {
    if (/** @type {Element} */ (event.target).closest("summary, a, button, pre, table")) return;
    if (state.selectedId !== record.id) select(record.id);
  });
  const siblings = tree.siblingsOf(record.id);
  // In a card's header; a collapsible card gets it on a line of its own (no control inside a summary).
  const header = node.querySelector(":scope > header");
  if (siblings && header) header.appendChild(siblingSwitcher(siblings));
  else if (siblings) return [el("div", { class: "sibling-line", dataset: { for: record.id } }, siblingSwitcher(siblings)), node];
  return [node];
}

function drawBranch(id, body) {
  const path = body.entries;
  shownPath = {
    id,
    ids: path.map((r) => r.id),
    records: new Map(path.map((r) => [r.id, r])),
    firstDepth: body.firstDepth ?? 0,
    hasMore: body.hasMore,
  };
  clear(branchBox);
  const cards = document.createDocumentFragment();
  for (const record of path) cards.append(...branchCard(record, id));
  branchBox.appendChild(cards);
  olderNotice();
  if (!path.length) branchBox.appendChild(el("p", { class: "empty", text: "This session has no entries yet." }));
  placeEntryTools(id);
  streaming.card = null;
  if (streaming.text) streamCard(); // a redraw while a reply is written keeps it in view
  // Cards laid out after this (images, a summary's markdown, cards skipped until shown) can still grow
  // the path: stay at its end.
  settle.disconnect();
  toEnd();
  keepEnd = true;
  settle.observe(branchBox); // the panel itself shrinks when the cost line below it fills in
  for (const child of branchBox.children) settle.observe(child);
  fillBranch();
  showCosts(id);
}

// ‹ 2/3 › on a message with alternatives: go to the newest tip of the neighbouring branch.
function siblingSwitcher({ ids, index }) {
  const go = (step) => (event) => {
    event.stopPropagation();
    event.preventDefault();
    const target = ids[(index + step + ids.length) % ids.length];
    select(tree.tipOf(target));
  };
  return el(
    "span",
    { class: "siblings", role: "group", "aria-label": "Alternatives" },
    el("button", { type: "button", class: "sibling-prev", "aria-label": "Previous alternative", text: "‹", onclick: go(-1) }),
    el("span", { class: "sibling-pos", text: `${index + 1}/${ids.length}` }),
    el("button", { type: "button", class: "sibling-next", "aria-label": "Next alternative", text: "›", onclick: go(1) }),
  );
}

// The reply being written: its text so far is kept while the branch is redrawn around it, and shown as
// Markdown through the server's sanitizing renderer (never as raw fences), a snapshot at a time.
/** @type {{ card: HTMLElement | null, text: MarkdownStream | null, tools: HTMLElement[] }} */
export const streaming = { card: null, text: null, tools: [] };
// Called with streaming.text set.
function streamCard() {
  const body = el("div", { class: "stream-text" });
  streaming.card = el("article", { class: "msg msg-assistant streaming" }, el("header", {}, el("span", { class: "who", text: "Assistant" }), el("span", { class: "meta", text: "writing…" })), body);
  // The tools run so far stay under the reply when the branch is redrawn around it.
  streaming.card.append(...streaming.tools);
  branchBox.appendChild(streaming.card);
  /** @type {MarkdownStream} */ (streaming.text).attach(body);
}

export function streamDelta(delta) {
  if (!streaming.text) streaming.text = new MarkdownStream(() => (branchBox.scrollTop = branchBox.scrollHeight));
  if (!streaming.card || !streaming.card.isConnected) streamCard();
  streaming.text.append(String(delta));
}

/**
 * A tool Pi runs on a runner, shown under the reply being written: its name and what it works on while
 * it runs, then whether it worked and the end of its output. The saved entries replace all of it.
 * @param {Piweb.EventMessage} event
 */
export function streamTool(event) {
  if (!streaming.text) streaming.text = new MarkdownStream(() => (branchBox.scrollTop = branchBox.scrollHeight));
  if (!streaming.card || !streaming.card.isConnected) streamCard();
  const card = /** @type {HTMLElement} */ (streaming.card);
  const call = String(event.toolCallId || "");
  let line = /** @type {HTMLElement | null} */ (card.querySelector(`.tool-live[data-call="${CSS.escape(call)}"]`));
  if (!line) {
    const args = event.args && typeof event.args === "object" ? event.args : {};
    const what = args.path || args.command || args.pattern || "";
    line = el(
      "div",
      { class: "tool-live", dataset: { call, tool: event.toolName || "" } },
      el("span", { class: "tool-name", text: event.toolName || "tool" }),
      what ? el("code", { class: "tool-what", text: String(what).slice(0, 200) }) : null,
      el("span", { class: "tool-state muted", text: "running…" }),
      el("pre", { class: "tool-output", hidden: true }),
    );
    streaming.tools.push(line);
    card.appendChild(line);
  }
  const output = /** @type {HTMLElement} */ (line.querySelector(".tool-output"));
  if (event.output) {
    output.textContent = event.output.split("\n").slice(-12).join("\n");
    output.hidden = false;
  }
  if (event.phase === "end") {
    line.dataset.state = event.isError ? "failed" : "done";
    /** @type {HTMLElement} */ (line.querySelector(".tool-state")).textContent = event.isError ? "failed" : "done";
  }
  branchBox.scrollTop = branchBox.scrollHeight;
}

// The reply's entries arrived (or the run ended): its streamed text goes. A tool still running stays in
// view, under a card of its own, until its result arrives too.
export function endStream({ all = true } = {}) {
  if (streaming.card) streaming.card.remove();
  if (streaming.text) streaming.text.close();
  streaming.card = null;
  streaming.text = null;
  streaming.tools = all ? [] : streaming.tools.filter((line) => !line.dataset.state);
  if (streaming.tools.length) {
    streaming.text = new MarkdownStream(() => (branchBox.scrollTop = branchBox.scrollHeight));
    streamCard();
  }
}

export function initBranch() {
  branchBox.addEventListener("scroll", fillBranch, { passive: true });
}
