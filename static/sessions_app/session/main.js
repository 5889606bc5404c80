// @ts-check
// The session page's entry module: tree, branch and context panels (and the branch's files) kept in step, node actions, the
// composer, live updates, sharing and "Continue in Pi".
import { api, setShareToken } from "../api.js";
import { initContinueInPi } from "../continue_in_pi.js";
import { initSharing } from "../sharing.js";
import { initActions, openNavigate, updateActions } from "./actions.js";
import { initAttribution } from "./attribution.js";
import { initBranch, select } from "./branch.js";
import { initComments } from "./comments.js";
import { initComposer, setEditor } from "./composer.js";
import { initContext } from "./context.js";
import { initDownloads } from "./downloads.js";
import { initFiles } from "./files.js";
import { initHandoff } from "./handoff.js";
import { catchUp, initLive } from "./live.js";
import { base, cfg, hooks, showError, state } from "./page.js";
import { initPresence } from "./presence.js";
import { initSearch, openSearch } from "./search.js";
import { initSecrets } from "./secrets.js";
import { initShortcuts } from "./shortcuts.js";
import { askRunsOnce, initSteering } from "./steering.js";
import { initTree, loadEntriesSince, loadTree, tree } from "./tree_panel.js";

setShareToken(cfg.shareToken);
Object.assign(hooks, { select, openNavigate, updateActions, catchUp });
initTree();
initSearch();
initBranch();
initContext();
initActions();
initComposer();
initHandoff();
initDownloads();
initSteering();
initLive();
initPresence();
initAttribution();
initShortcuts();
initContinueInPi({ sessionId: cfg.session, onError: showError });
initSharing(cfg.session);
initComments(tree);
initFiles(tree);

async function start() {
  const handedBack = sessionStorage.getItem(`piweb-editor-${cfg.session}`);
  if (handedBack !== null) {
    sessionStorage.removeItem(`piweb-editor-${cfg.session}`);
    setEditor(handedBack);
  }
  // Tree, branch and context start together: the leaf comes with the page, so nothing waits for the tree.
  const named = new URLSearchParams(location.hash.slice(1)).get("entry");
  const first = named || cfg.leafId;
  state.treeLoaded = loadTree();
  // The page came with the session's last seq (read before the tree, so the socket's catch-up covers
  // anything appended meanwhile); a link's page asks its scope for it.
  const seqKnown = !state.full && typeof cfg.lastSeq === "number";
  if (seqKnown && /** @type {number} */ (cfg.lastSeq) > state.lastSeq) state.lastSeq = /** @type {number} */ (cfg.lastSeq);
  const seqLoaded = state.full || seqKnown
    ? null
    : api("GET", `${base}/`).then(({ body }) => {
        if (body.lastSeq !== null && body.lastSeq > state.lastSeq) state.lastSeq = body.lastSeq;
      });
  const selected = first ? select(first) : Promise.resolve();
  await state.treeLoaded;
  if (first) tree.select(first);
  if (state.full) {
    await loadEntriesSince();
    tree.rebuild();
  }
  await Promise.all([selected, seqLoaded]);
  if (!first && state.leafId) await select(state.leafId);
  else if (!first) updateActions();
  if (cfg.isOwner) initSecrets(tree).catch((error) => showError(error.message));
  askRunsOnce();
  state.ready = true;
  document.body.dataset.ready = "true";
  tree.render(); // rows drawn before the path arrived now show its entries; the rest are fetched
  if (state.missed) catchUp({ follow: false });
  // Opened from a search (?q=): the search is active, at the hit named in the address or the first.
  const query = (new URLSearchParams(location.search).get("q") || "").trim();
  if (query) openSearch(query, named);
}

start().catch((error) => showError(error.message));
