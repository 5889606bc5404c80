// @ts-check
// What every panel of the session page shares: the page's configuration, the state of what is loaded,
// and the banners. Panels are modules of their own (tree, search, branch, context, actions, composer,
// live); main.js starts them.
import { clear, el } from "../api.js";

/** @type {Piweb.SessionPageConfig} */
export const cfg = JSON.parse(/** @type {HTMLElement} */ (document.getElementById("session-config")).textContent);
export const base = `/api/sessions/${cfg.session}`;
// Sessions up to this size are read whole in the background (search and previews everywhere);
// bigger ones load entries only as they come into view.
export const PRELOAD_LIMIT = 20000;
export const PAGE = 5000;
// The branch panel draws the newest part of the path first (a screenful and some: a click answers at
// once); older entries come a page at a time as it is scrolled towards the top.
export const BRANCH_FIRST = 12;
export const BRANCH_STEP = 60;
export const NEAR = 200; // px from the panel's edge at which the next page of a long path or context is fetched
// The context panel draws the first messages (the prompt, a summary) and the newest ones; the ones between
// come a page at a time as the gap scrolls into view. All are counted in the estimate.
export const CONTEXT_HEAD = 10;
export const CONTEXT_TAIL = 40;
export const CONTEXT_STEP = 60;
export const CONTEXT_RENDERED = 20; // of the tail, the newest rendered (markdown, highlighting); older ones plain
export const CONTEXT_PAUSE = 120; // ms a selection is kept before its context is projected

/**
 * What the page holds of the session. Records are the API's entry rows, by entry id; nodes are the tree's
 * node items.
 * @type {{
 *   entries: Map<string, any>, cursorId: string | null, lastSeq: number, leafId: string | null,
 *   selectedId: string | null, full: boolean, treeParams: Record<string, string>, window: number,
 *   nodes: Map<string, any>, selectToken: number, followRun: boolean,
 *   ready?: boolean, missed?: boolean, treeLoaded?: Promise<void>, branchDrawn?: Promise<void>,
 *   contextLoaded?: Promise<unknown>,
 * }}
 */
export const state = {
  entries: new Map(),
  cursorId: null,
  lastSeq: -1,
  leafId: null,
  selectedId: null,
  full: cfg.entryCount <= PRELOAD_LIMIT,
  treeParams: {},
  window: cfg.contextWindow,
  nodes: new Map(),
  selectToken: 0, // bumped by each selection: work for an older one stops
  followRun: false, // a run started from this page: its new entries are followed as they arrive
};

/**
 * An element the session template always has; callers narrow it where they need a particular kind.
 * @param {string} id
 * @returns {HTMLElement}
 */
export const $ = (id) => /** @type {HTMLElement} */ (document.getElementById(id));

// What panels ask of each other (select an entry, catch up with the server, ...), set by main.js. Calls
// go through here so the modules depend on one another one way only: production hashes each module's name
// from its imports, which a cycle would make impossible.
/**
 * @type {{
 *   select: (id: string, options?: { fromTree?: boolean, show?: boolean }) => Promise<void>,
 *   openNavigate: () => Promise<void>,
 *   updateActions: () => void,
 *   catchUp: (options: { follow: boolean }) => Promise<void>,
 * }}
 */
export const hooks = {
  select: async () => {},
  openNavigate: async () => {},
  updateActions: () => {},
  catchUp: async () => {},
};

// Functions that add controls to a branch card (steering.js adds Regenerate and Edit), called with the
// card's node and its record each time a card is drawn.
export const cardDecorators = [];

export function showError(message) {
  const banner = $("error-banner");
  clear(banner);
  banner.hidden = !message;
  if (!message) return;
  banner.append(el("span", { text: message }), el("button", { type: "button", class: "link close", text: "Dismiss", onclick: () => (banner.hidden = true) }));
}

export function showOperation(text) {
  $("operation-text").textContent = text || "";
  $("operation-banner").hidden = !text;
}

export function showNotice(text) {
  showOperation("");
  const banner = $("operation-banner");
  $("operation-text").textContent = text;
  (/** @type {HTMLElement} */ (banner.querySelector(".spinner"))).hidden = true;
  banner.hidden = false;
  setTimeout(() => {
    if ($("operation-text").textContent === text) banner.hidden = true;
    (/** @type {HTMLElement} */ (banner.querySelector(".spinner"))).hidden = false;
  }, 8000);
}

// The page was drawn with the name as of this sequence; a rename after it (here or by anyone) retitles it.
let namedAt = typeof cfg.lastSeq === "number" ? cfg.lastSeq : -1;

export function remember(record) {
  state.entries.set(record.id, record);
  if (record.seq > state.lastSeq) state.lastSeq = record.seq;
  if (record.type === "session_info" && record.seq > namedAt) {
    namedAt = record.seq;
    const name = record.entry && typeof record.entry.name === "string" ? record.entry.name.trim() : "";
    if (name) retitle(name);
  }
}

/** @param {string} name */
export function retitle(name) {
  const title = document.getElementById("session-title");
  if (title) title.textContent = name;
  document.title = `${name} · piweb`;
}
