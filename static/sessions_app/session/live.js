// @ts-check
// Live updates: the socket's events and states bring the page up to date over HTTP (catchUp), a run's
// text streams into the branch panel, and a closed access stops everything that could write.
import { api } from "../api.js";
import { LiveSession } from "../live.js";
import { endStream, select, streamDelta, streamTool } from "./branch.js";
import { hits, startSearch } from "./search.js";
import { $, base, cfg, showError, showOperation, state } from "./page.js";
import { loadEntriesSince, loadTree } from "./tree_panel.js";

let catching = null;
let again = false;
let followNext = false;
// Fetch whatever the page is missing; calls while one runs coalesce into one more pass, and a
// request to follow the leaf is kept for that pass.
export async function catchUp({ follow }) {
  followNext = followNext || follow;
  if (catching) {
    again = true;
    return catching;
  }
  catching = (async () => {
    do {
      again = false;
      const following = followNext || state.selectedId === state.leafId;
      followNext = false;
      if (state.full) await loadEntriesSince();
      else {
        const { body } = await api("GET", `${base}/`);
        if (body.lastSeq !== null) state.lastSeq = body.lastSeq;
      }
      await loadTree();
      if (hits.query) startSearch(hits.query, { keep: true }); // new entries may hold new hits
      if (following && state.leafId) await select(state.leafId);
      else if (state.selectedId) await select(state.selectedId);
    } while (again);
  })();
  try {
    await catching;
  } catch (error) {
    showError(error.message);
  } finally {
    catching = null;
  }
}

const STATUS_TEXT = { connecting: "connecting…", live: "live", offline: "reconnecting…", denied: "access ended" };
// A frozen link shows the session as it was when the link was made: its socket only watches for the
// link's end, so its pill never says "live".
const FROZEN_TITLE = "A frozen link: the session as it was when the link was made. Later changes do not appear.";

let socket = null;
// The page's socket (presence sends through it).
export const liveSocket = () => socket;

export function initLive() {
  socket = new LiveSession({
    session: cfg.session,
    currentSeq: () => state.lastSeq,
    onOpen: () => document.dispatchEvent(new CustomEvent("piweb:live-open")),
    onPresence: (message) => document.dispatchEvent(new CustomEvent("piweb:presence", { detail: message })),
    // After failed reconnections, ask over HTTP whether this page may still read the session at all.
    checkAccess: () => api("GET", `${base}/`).then(
      () => true,
      (error) => ![401, 403, 404].includes(error.status),
    ),
    onStatus: (status) => {
      const badge = $("live-status");
      const frozen = badge.dataset.frozen === "true" && status === "live";
      badge.dataset.state = frozen ? "frozen" : status;
      badge.textContent = frozen ? "frozen" : STATUS_TEXT[status] || status;
      if (frozen) badge.title = FROZEN_TITLE;
      // Back online: events may have been missed, so whether a run is active is asked again.
      if (status === "live") document.dispatchEvent(new CustomEvent("piweb:live"));
      if (status === "denied") {
        // Access was taken away (share revoked, link revoked or expired): stop offering anything.
        document.body.dataset.revoked = "true";
        /** @type {NodeListOf<HTMLButtonElement | HTMLTextAreaElement>} */ (document.querySelectorAll("#node-actions button, #composer button, #composer textarea, #branch .run-action")).forEach((n) => {
          n.disabled = true;
        });
        const banner = $("error-banner");
        banner.textContent = "Your access to this session ended: it was revoked, or it expired, or you signed out.";
        banner.hidden = false;
      }
    },
    onState: (message) => {
      // The first screen loads once; until then the socket's position is what start() reads anyway.
      if (!state.ready) return;
      if ((message.seq !== null && message.seq > state.lastSeq) || message.leafId !== state.leafId) {
        catchUp({ follow: false });
      }
    },
    onEvent: (message) => {
      if (!state.ready) {
        state.missed = true;
        return;
      }
      switch (message.event) {
        case "run_delta":
          // Thinking and tool-call argument deltas are not shown while streaming; the saved entry has them.
          if (!message.kind || message.kind === "text") streamDelta(message.delta || "");
          return;
        case "run_tool":
          streamTool(message);
          return;
        case "run_queued":
        case "run_started":
          // Pi on a runner: say where it works and who asked (piweb's own loop needs no banner).
          if (message.runner) showOperation(`Pi is working on ${message.runner}${message.by ? `, started by ${message.by}` : ""}…`);
          document.dispatchEvent(new CustomEvent("piweb:run", { detail: message })); // steering.js
          return;
        case "runner_state":
          showOperation(
            message.online
              ? `Pi is working on ${message.runner}…`
              : `${message.runner} lost its connection: Pi works on there, and what it writes arrives when it is back.`,
          );
          return;
        case "run_ended":
          if (message.runner !== undefined || /^Pi is working on |lost its connection/.test($("operation-text").textContent || "")) showOperation("");
          endStream();
          document.dispatchEvent(new CustomEvent("piweb:run", { detail: message }));
          // piweb runs no tools: continue_in_pi.js offers to continue this branch in Pi.
          if (message.toolUse) document.dispatchEvent(new CustomEvent("piweb:tool-use", { detail: {} }));
          break;
        case "branch_summary_start":
          showOperation("Summarizing a branch…");
          return;
        case "compaction_start":
          showOperation("Compacting…");
          return;
        case "secrets_found":
          // The scanner recorded findings: the owner's list and the tree's marks are read again.
          document.dispatchEvent(new CustomEvent("piweb:secrets"));
          return;
        case "entries_redacted":
          // Lines this page may hold were rewritten on the server; what is drawn is the old text.
          showError("Secrets were redacted from this session: reload the page to see the redacted text.");
          return;
        case "branch_summary_end":
        case "compaction_end":
          showOperation("");
          if (message.status === "failed" && message.errorMessage) showError(message.errorMessage);
          break;
        default:
          // Events of apps above sessions (a review changed): their page parts listen for them.
          document.dispatchEvent(new CustomEvent("piweb:event", { detail: message }));
          break;
      }
      // A sequence past ours means entries we have not seen: fetch them (this also fills any gap left by
      // an event that never arrived).
      if ((typeof message.seq === "number" && message.seq > state.lastSeq) || message.event === "leaf_moved") {
        endStream({ all: message.event === "run_ended" });
        catchUp({ follow: state.followRun }); // a run started from this page is followed onto its branch
      }
    },
  });
}
