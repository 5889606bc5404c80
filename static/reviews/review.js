// @ts-check
// The session page's review panel: request a review of the session or of the branch the page shows,
// approve or request changes, ask again, withdraw. Each action calls the API, then the page reloads to
// show the panel, the bar's status and the outdated banner as the server draws them; a change made
// elsewhere (the socket's "review" event) offers the same.
import { api } from "../sessions_app/api.js";

const panel = document.getElementById("reviews");
// The panel is a dialog the bar's review button opens; after an action the page reloads with it open.
const dialog = /** @type {HTMLDialogElement | null} */ (document.getElementById("reviews-dialog"));
const REOPEN = "piweb:reviews-open";

function reopen() {
  sessionStorage.setItem(REOPEN, "1");
  location.reload();
}

document.getElementById("review-status")?.addEventListener("click", () => dialog?.showModal());
if (dialog && sessionStorage.getItem(REOPEN) === "1") {
  sessionStorage.removeItem(REOPEN);
  dialog.showModal();
}
const errorLine = document.getElementById("review-error");

/** @param {unknown} error */
function show(error) {
  if (!errorLine) return;
  const body = /** @type {{ body?: { error?: string } }} */ (error).body;
  errorLine.textContent = body?.error || (error instanceof Error ? error.message : String(error));
}

/** @param {() => Promise<unknown>} action */
async function run(action) {
  try {
    await action();
    reopen();
  } catch (error) {
    show(error);
  }
}

/** The node the page shows: the one named in the address, else the session's leaf. */
function shownNode() {
  const named = new URLSearchParams(location.hash.slice(1)).get("entry");
  return named || panel?.dataset.leaf || null;
}

if (panel) {
  const session = panel.dataset.session;
  // Someone else decided, asked, withdrew, or a new entry outdated a review: offer the fresh panel.
  document.addEventListener("piweb:event", (event) => {
    const message = /** @type {CustomEvent<Piweb.EventMessage>} */ (event).detail;
    if (message.event !== "review" || !errorLine || document.getElementById("reviews-changed")) return;
    const button = document.createElement("button");
    button.type = "button";
    button.id = "reviews-changed";
    button.textContent = "Reviews changed: show them";
    button.addEventListener("click", () => reopen());
    errorLine.replaceChildren(button);
  });
  const form = /** @type {Piweb.NamedForm | null} */ (document.getElementById("review-request"));
  form?.addEventListener("submit", (event) => {
    event.preventDefault();
    const controls = form.elements;
    const names = String(controls.reviewers.value)
      .split(/[\s,]+/)
      .map((name) => name.replace(/^@/, ""))
      .filter(Boolean);
    /** @type {Record<string, unknown>} */
    const body = { reviewers: names, note: String(controls.note.value) };
    if (controls.scope.value === "branch") body.entryId = shownNode();
    if (controls.team) body.teamId = Number(controls.team.value);
    run(() => api("POST", `/api/sessions/${session}/reviews/`, body));
  });
  panel.querySelectorAll("article.review").forEach((article) => {
    const id = /** @type {HTMLElement} */ (article).dataset.review;
    const decide = /** @type {Piweb.NamedForm | null} */ (article.querySelector("form.review-decide"));
    decide?.addEventListener("submit", (event) => {
      event.preventDefault();
      const button = /** @type {HTMLButtonElement | null} */ (/** @type {SubmitEvent} */ (event).submitter);
      const note = String(decide.elements.note.value);
      run(() => api("POST", `/api/reviews/${id}/decision/`, { decision: button?.value || "approved", note }));
    });
    article.querySelectorAll("button[data-action]").forEach((button) => {
      const action = /** @type {HTMLElement} */ (button).dataset.action;
      button.addEventListener("click", () => run(() => api("POST", `/api/reviews/${id}/${action}/`)));
    });
  });
}
