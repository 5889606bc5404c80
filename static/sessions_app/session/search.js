// @ts-check
// Search: every hit of the session, listed by the server in tree order, a page at a time.
import { api, query as queryString } from "../api.js";
import { $, base, hooks, showError, state } from "./page.js";
import { hitCountText, pageOf, stepIndex } from "./paging.js";
import { queryTerms } from "../search_terms.js";
import { loadTree, tree } from "./tree_panel.js";

// Typing asks for the first page (the count and the hits marked in place); Enter / ↓ go to the next
// hit, Shift+Enter / ↑ to the previous, loading further pages as the steps reach them. Each hit is
// opened in the tree: folded branches above it open, and a hit inside a folded run or far from what
// is drawn loads the tree around it.
const HIT_PAGE = 200;
/**
 * The hits of the query in the box: ids by hit index, as their pages arrive.
 * @type {{ query: string, total: number, ids: string[], pages: Set<number>, at: number, incomplete: boolean, ready: boolean, loaded: Promise<void> | null, pending: boolean }}
 */
export const hits = { query: "", total: 0, ids: [], pages: new Set(), at: -1, incomplete: false, ready: false, loaded: null, pending: false };
let searchTimer = null;
let stepping = Promise.resolve();

function showHitCount() {
  $("search-hits").textContent = hitCountText(hits);
  /** @type {HTMLButtonElement} */ ($("search-prev")).disabled = /** @type {HTMLButtonElement} */ ($("search-next")).disabled = !hits.total || hits.pending;
}

async function loadHitPage(query, page) {
  const params = { q: query, offset: page * HIT_PAGE, limit: HIT_PAGE };
  const { body } = await api("GET", `${base}/search/${queryString(params)}`);
  if (query !== hits.query) return;
  // Other modules show their own hits of the first page (comments.js: matching comments).
  if (page === 0) document.dispatchEvent(new CustomEvent("piweb:search", { detail: { query, body } }));
  hits.total = body.total;
  hits.incomplete = body.incomplete;
  hits.ready = true;
  for (const hit of body.hits) {
    hits.ids[hit.index] = hit.entryId;
    tree.hitIds.add(hit.entryId);
  }
  hits.pages.add(page);
  tree.render();
}

// Start (or, with keep, refresh after the session changed) the list for a query.
export function startSearch(query, { keep = false } = {}) {
  const at = keep && query === hits.query ? hits.at : -1;
  Object.assign(hits, { query, total: 0, ids: [], pages: new Set(), at, incomplete: false, ready: false, loaded: null, pending: false });
  tree.hitIds = new Set();
  tree.terms = queryTerms(query);
  tree.render();
  if (!query) document.dispatchEvent(new CustomEvent("piweb:search", { detail: { query, body: {} } }));
  if (query) {
    const loaded = loadHitPage(query, 0).then(() => {
      if (hits.query !== query) return;
      hits.at = Math.min(hits.at, hits.total - 1);
      showHitCount();
    });
    hits.loaded = loaded.catch((error) => showError(error.message));
  }
  showHitCount();
  return hits.loaded || Promise.resolve();
}

async function hitAt(index) {
  const page = pageOf(index, HIT_PAGE);
  if (!hits.pages.has(page)) await loadHitPage(hits.query, page);
  return hits.ids[index];
}

async function revealHit(id) {
  tree.reveal = id;
  tree.unfoldTo(id);
  if (!tree.hasRow(id)) {
    state.treeParams = { around: id };
    await loadTree();
    tree.unfoldTo(id);
  }
  await hooks.select(id);
}

async function stepHit(step) {
  const query = /** @type {HTMLInputElement} */ ($("tree-search")).value.trim();
  if (!query) return;
  clearTimeout(searchTimer);
  if (query !== hits.query || hits.loaded === null) startSearch(query);
  await hits.loaded;
  if (query !== hits.query || !hits.total) return;
  hits.at = stepIndex(hits.at, step, hits.total);
  showHitCount();
  const id = await hitAt(hits.at);
  if (id) await revealHit(id);
}

// Steps run one after another, so a quick series of Enters ends on the hit it counted to.
function nextHit(step) {
  stepping = stepping.then(() => stepHit(step)).catch((error) => showError(error.message));
}

export function openSearch(query, entryId) {
  /** @type {HTMLInputElement} */ ($("tree-search")).value = query;
  stepping = stepping
    .then(async () => {
      await startSearch(query);
      const index = entryId ? hits.ids.indexOf(entryId) : -1;
      if (!entryId) return stepHit(1);
      hits.at = index;
      showHitCount();
      return revealHit(entryId);
    })
    .catch((error) => showError(error.message));
}

export function initSearch() {
  $("tree-search").addEventListener("input", (event) => {
    clearTimeout(searchTimer);
    const query = /** @type {HTMLInputElement} */ (event.target).value.trim();
    // Until the new query is asked, the counter says so instead of keeping the last query's answer.
    hits.pending = query !== hits.query;
    if (hits.pending) $("search-hits").textContent = hitCountText({ ...hits, query });
    searchTimer = setTimeout(() => {
      if (query !== hits.query) startSearch(query);
      else {
        hits.pending = false;
        showHitCount();
      }
    }, 250);
  });
  $("tree-search").addEventListener("keydown", (event) => {
    if (event.key === "Enter") {
      event.preventDefault();
      nextHit(event.shiftKey ? -1 : 1);
    } else if (event.key === "Escape") {
      /** @type {HTMLInputElement} */ (event.target).value = "";
      clearTimeout(searchTimer);
      tree.reveal = null;
      startSearch("");
      tree.rebuild();
    }
  });
  $("search-next").addEventListener("click", () => nextHit(1));
  $("search-prev").addEventListener("click", () => nextHit(-1));
  document.addEventListener("keydown", (event) => {
    const typing = /^(INPUT|TEXTAREA|SELECT)$/.test(/** @type {Element} */ (document.activeElement).tagName);
    if (event.key === "/" && !typing) {
      event.preventDefault();
      $("tree-search").focus();
    }
  });
}
