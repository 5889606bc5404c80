// @ts-check
// "Continue in Pi": on any node, the exact `piweb-sync pull …` command that brings its branch into Pi (or
// the file to save by hand). Self-contained: it adds its own button to the node actions, reads the selected
// node from the page address (#entry=…), and opens after a run that stopped to call a tool, which piweb
// does not run ("piweb:tool-use" event from the page).
import { api, append, clear, el, query } from "./api.js";
import { ask, copyText } from "./dialogs.js";

let session = null;
/** @type {(message: string) => void} */
let showError = () => {};

function selectedEntry() {
  const match = /(?:^#|&)entry=([^&]+)/.exec(location.hash);
  return match ? decodeURIComponent(match[1]) : null;
}

function commandRow(label, text) {
  const status = el("span", { class: "muted small", role: "status" });
  const copy = el("button", { type: "button", text: "Copy" });
  copy.addEventListener("click", () => copyText(text, copy, status));
  return el(
    "div",
    { class: "stack" },
    el("span", { class: "small", text: label }),
    el("div", { class: "buttons" }, el("code", { class: "mono small", text }), copy, status),
  );
}

/** @type {HTMLDialogElement | null} */
let dialog = null;
function ensureDialog() {
  if (dialog) return dialog;
  dialog = el(
    "dialog",
    { id: "continue-in-pi-dialog", "aria-labelledby": "continue-in-pi-title" },
    el(
      "form",
      { method: "dialog", class: "stack" },
      el("h3", { id: "continue-in-pi-title", text: "Continue in Pi" }),
      el("p", { class: "muted small", id: "continue-in-pi-intro" }),
      el("div", { class: "stack", id: "continue-in-pi-body" }),
      el("div", { class: "buttons" }, el("button", { type: "submit", value: "ok", class: "primary", text: "Done" })),
    ),
  );
  document.body.appendChild(dialog);
  return dialog;
}

export async function openContinueInPi(entry, intro) {
  let answer;
  try {
    answer = (await api("GET", `/api/sessions/${session}/continue-in-pi/${query({ entry })}`)).body;
  } catch (error) {
    showError(error.message);
    return;
  }
  const box = ensureDialog();
  // The dialog built above has these.
  /** @type {HTMLElement} */ (document.getElementById("continue-in-pi-intro")).textContent =
    intro ||
    (answer.entryId
      ? `Pi will resume at entry ${answer.entryId}, with this branch's context.`
      : "Pi will resume at this session's current leaf.");
  const body = clear(/** @type {HTMLElement} */ (document.getElementById("continue-in-pi-body")));
  append(body, [
    commandRow("1. Write the session into Pi's folder:", answer.command),
    commandRow("2. Continue it in Pi (piweb-sync push sends what Pi adds):", answer.resume),
    el(
      "p",
      { class: "small" },
      "Or ",
      el("a", { href: answer.download, download: answer.fileName, text: "download the file" }),
      ` and save it in ${answer.folder}/.`,
    ),
    el("p", { class: "muted small" }, "First time on this machine: ", el("code", { class: "mono", text: answer.setup })),
  ]);
  ask(box);
}

// Add the button to the node actions of the session page; errors go to the page's banner.
/** @param {{ sessionId: number, onError: (message: string) => void }} options */
export function initContinueInPi({ sessionId, onError }) {
  const actions = document.getElementById("node-actions");
  if (!actions) return;
  session = sessionId;
  showError = onError;
  const button = el("button", { type: "button", "data-continue-in-pi": true, text: "Continue in Pi" });
  button.addEventListener("click", () => openContinueInPi(selectedEntry()));
  actions.appendChild(button);

  document.addEventListener("piweb:tool-use", (event) => {
    const entry = (event.detail && event.detail.entryId) || null;
    openContinueInPi(entry, "The model asked to run a tool. piweb runs no tools: continue this branch in Pi, which does.");
  });
}
