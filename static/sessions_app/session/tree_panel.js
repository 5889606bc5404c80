// @ts-check
// The tree panel: the virtualized tree, the entries its rows show (fetched as they come into view), the
// filter and the phone's panel tabs.
import { api, query } from "../api.js";
import { TreeView } from "../tree.js";
import { $, PAGE, base, cfg, hooks, remember, showError, state } from "./page.js";

// Small sessions are read whole, a page at a time after the last entry read (search and previews everywhere).
export async function loadEntriesSince() {
  for (;;) {
    const { body } = await api("GET", `${base}/entries/${query({ since: state.cursorId, limit: PAGE })}`);
    for (const record of body.entries) {
      if (record.id) {
        remember(record);
        state.cursorId = record.id;
      } else if (record.seq > state.lastSeq) {
        state.lastSeq = record.seq;
      }
    }
    if (body.lastSeq !== null && body.lastSeq > state.lastSeq && !body.hasMore) state.lastSeq = body.lastSeq;
    if (!body.hasMore) return;
  }
}

// A selection's branch goes first: requests for tree rows would hold up its request. A click draws the
// tree before it selects, so look again after this turn and after each wait.
async function branchFirst() {
  let current = null;
  while (current !== state.branchDrawn) {
    await null;
    current = state.branchDrawn;
    await current;
  }
}

// Rows in view whose entries are not loaded yet are fetched in one request per batch. Until the first
// screen is drawn they only queue: the branch request brings most of them (the path around the leaf).
const RECORDS_BATCH = 100; // the most ids the entries endpoint takes at once
let wanted = new Set();
const unavailable = new Set(); // asked for and not returned: never asked again
let fetching = false;
async function wantRecords(ids) {
  if (state.full) return;
  ids.forEach((id) => state.entries.has(id) || unavailable.has(id) || wanted.add(id));
  if (fetching || !state.ready) return;
  fetching = true;
  try {
    while (wanted.size) {
      await branchFirst();
      const batch = [...wanted].filter((id) => !state.entries.has(id)).slice(0, RECORDS_BATCH);
      wanted = new Set([...wanted].filter((id) => !batch.includes(id) && !state.entries.has(id)));
      if (!batch.length) break;
      const search = new URLSearchParams(batch.map((id) => ["id", id]));
      try {
        const { body } = await api("GET", `${base}/entries/?${search}`);
        for (const record of body.entries) if (!state.entries.has(record.id)) state.entries.set(record.id, record);
        batch.forEach((id) => state.entries.has(id) || unavailable.add(id));
      } catch (error) {
        break; // the rows keep their placeholders; the next render asks again
      }
      tree.render();
    }
  } finally {
    fetching = false;
  }
}

// Set by initTree, which main.js calls before anything draws.
/** @type {TreeView} */
export let tree;

export async function loadTree() {
  const { body } = await api("GET", `${base}/tree/${query(state.treeParams)}`);
  state.leafId = body.leafId;
  state.nodes = new Map(body.items.filter((i) => i.kind === "node").map((i) => [i.id, i]));
  $("session-counts").textContent = `${body.entryCount.toLocaleString()} entries`;
  tree.selectedId = state.selectedId;
  tree.setItems(body.items);
}

// Phone: one panel at a time.
export const phone = window.matchMedia("(max-width: 900px)");
export function showPanel(name) {
  $("panels").dataset.show = name;
  /** @type {NodeListOf<HTMLButtonElement>} */ (document.querySelectorAll(".panel-tabs button")).forEach((b) => b.setAttribute("aria-selected", String(b.dataset.panel === name)));
}

const SHOW_ALL_ENTRIES = 100;

export function initTree() {
  tree = new TreeView({
    scroller: $("tree-scroll"),
    onSelect: (id) => hooks.select(id, { fromTree: true, show: true }),
    onActivate: (id) => {
      hooks.select(id, { fromTree: true });
      hooks.openNavigate();
    },
    onExpandRun: (run) => {
      state.treeParams = { around: run.firstId };
      loadTree().catch((e) => showError(e.message));
    },
    recordFor: (id) => state.entries.get(id),
    wantRecords,
  });
  // A short session shows every entry, as Pi's /tree does; a long one folds its straight runs.
  if (cfg.entryCount <= SHOW_ALL_ENTRIES) tree.autoExpand = SHOW_ALL_ENTRIES;

  $("tree-filter").addEventListener("change", (event) => {
    tree.filter = /** @type {HTMLSelectElement} */ (event.target).value;
    tree.rebuild();
  });
  /** @type {NodeListOf<HTMLButtonElement>} */ (document.querySelectorAll(".panel-tabs button")).forEach((b) => b.addEventListener("click", () => showPanel(b.dataset.panel)));
}
