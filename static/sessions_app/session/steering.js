// @ts-check
// Steering a run from the page. While a run of this session is queued or running (started here, in
// another tab, or before a reload) Send is off and Stop is offered; Stop or Escape ends the run and the
// reply written so far is kept, marked as stopped. Regenerate answers an assistant message again and Edit
// sends a changed user message: each goes in beside the original as a new branch, which the page follows.
import { api, el } from "../api.js";
import { textOf } from "../format.js";
import { $, base, cardDecorators, cfg, hooks, showError, state } from "./page.js";
import { runners } from "./runners.js";

const ACTIVE = new Set(["queued", "running"]);
const BUSY_NOTE = "A reply is being written. Stop (or Esc) ends it and keeps what was written so far.";
const REMOTE_NOTE = "Pi is working on a runner. Steer tells it something now; Follow up queues a message for after; Stop ends the run.";
const run = { id: null, active: false, mine: false, stopping: false, remote: false };
const ended = new Set(); // runs whose end was announced

export function runActive() {
  return run.active;
}

/** The run in progress: its id, and whether Pi runs it on a runner (then it takes Steer and Follow-up). */
export function currentRun() {
  return { id: run.id, active: run.active, remote: run.remote };
}

function canSteer() {
  const anywhere = (cfg.models || []).length || runners.length;
  return Boolean(cfg.canEdit && cfg.runsUrl && anywhere) && document.body.dataset.revoked !== "true";
}

function paint() {
  const send = /** @type {HTMLButtonElement} */ ($("composer-send"));
  const stop = /** @type {HTMLButtonElement} */ ($("composer-stop"));
  const steer = canSteer();
  stop.hidden = !(run.active && steer);
  stop.disabled = run.stopping;
  // Pi on a runner takes messages while it works: Send steers it, Follow up queues one for after.
  const steering = run.active && run.remote && steer;
  if (steer) send.disabled = run.active && !run.remote;
  send.textContent = steering ? "Steer" : "Send";
  send.title = steering ? "Pi reads this after its current step (Enter)" : "";
  const follow = $("composer-follow");
  if (follow) follow.hidden = !steering;
  document.body.dataset.run = run.active ? "active" : "idle";
  const note = $("composer-note");
  if (run.active && steer) note.textContent = run.stopping ? "Stopping…" : run.remote ? REMOTE_NOTE : BUSY_NOTE;
  else if ([BUSY_NOTE, REMOTE_NOTE, "Stopping…"].includes(note.textContent || "")) note.textContent = "";
  /** @type {NodeListOf<HTMLButtonElement>} */ (document.querySelectorAll("#branch .run-action")).forEach((button) => {
    button.disabled = run.active || !steer;
  });
}

// A run is queued or running: ``mine`` when this page asked for it, so its new entries are followed.
export function runStarted(id, { mine = false, remote = false } = {}) {
  // A quick run can end (on the socket) before the answer to the request that started it arrives.
  if (id && ended.has(id)) {
    if (mine) hooks.catchUp({ follow: true });
    return;
  }
  if (id && id !== run.id) run.remote = false;
  if (id) run.id = id;
  run.active = true;
  if (remote) run.remote = true;
  if (mine) {
    run.mine = true;
    state.followRun = true;
  }
  paint();
}

function runEnded(id) {
  if (id) ended.add(id);
  if (id && run.id && id !== run.id) return; // the end of an older run, told late
  const follow = run.mine;
  Object.assign(run, { id: null, active: false, mine: false, stopping: false, remote: false });
  state.followRun = false;
  paint();
  if (follow) hooks.catchUp({ follow: true });
}

// Ask the server whether a run is active: when the socket is live (at load and after a reconnect, when
// events may have been missed), or once the page is drawn if the socket is not live by then.
let asked = false;

async function refresh() {
  if (!cfg.runsUrl) return;
  asked = true;
  try {
    const { body } = await api("GET", cfg.runsUrl);
    const latest = (body.results || [])[0];
    if (latest && ACTIVE.has(latest.status)) runStarted(latest.runId, { remote: await onRunner(latest.runId) });
    else if (run.active) runEnded(null);
  } catch (_) {
    // The socket's run events still keep the buttons right.
  }
}

// A page that opens while Pi works on a runner (started in another tab, or by a teammate) steers it too.
async function onRunner(runId) {
  if (!canSteer()) return false;
  try {
    const { body } = await api("GET", `${base}/runs/remote/`);
    return body.runId === runId;
  } catch (_) {
    return false;
  }
}

export async function stopRun() {
  if (!run.active || run.stopping) return;
  run.stopping = true;
  paint();
  try {
    await api("POST", `${base}/runs/stop/`);
  } catch (error) {
    if (error.status === 409) runEnded(null); // it had already ended
    else showError(error.message);
  } finally {
    run.stopping = false;
    if (run.active) paint();
  }
}

// The model and thinking level picked in the composer go with a regenerated or edited turn too.
function pickers() {
  const body = {};
  const model = /** @type {HTMLSelectElement} */ ($("composer-model"));
  const thinking = /** @type {HTMLSelectElement} */ ($("composer-thinking"));
  if (model.value) body.providerId = Number(model.value);
  if (thinking.value) body.thinkingLevel = thinking.value;
  return body;
}

async function startFrom(url, body, parentId) {
  try {
    const { body: answer } = await api("POST", url, { ...body, ...pickers() });
    runStarted(answer.runId, { mine: true });
    // The new branch grows from the parent: show the path to it while the answer is written.
    if (parentId) await hooks.select(parentId);
    return true;
  } catch (error) {
    if (error.status === 409) runStarted(error.body && error.body.activeRunId);
    showError(error.message);
    return false;
  }
}

function regenerate(record) {
  return startFrom(`${base}/runs/regenerate/`, { entryId: record.id }, record.entry.parentId);
}

// The user message's card becomes an editor; sending puts the new text beside the original.
function openEditor(node, record) {
  if (node.querySelector(".inline-edit")) return;
  const hidden = [...node.children].filter((child) => child.tagName !== "HEADER");
  const text = el("textarea", { class: "edit-text", rows: "4", "aria-label": "Edited message" });
  text.value = textOf(record.entry.message.content);
  const send = el("button", { type: "submit", class: "primary run-action", text: "Send as a new branch" });
  const cancel = el("button", { type: "button", text: "Cancel" });
  const form = el("form", { class: "inline-edit stack" }, text, el("div", { class: "buttons" }, cancel, send));
  const close = () => {
    form.remove();
    hidden.forEach((child) => (child.hidden = false));
  };
  cancel.addEventListener("click", close);
  text.addEventListener("keydown", (event) => {
    if (event.key === "Escape") {
      event.preventDefault();
      event.stopPropagation();
      close();
    } else if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      form.requestSubmit();
    }
  });
  form.addEventListener("click", (event) => event.stopPropagation());
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const prompt = text.value;
    if (!prompt.trim()) {
      showError("The edited message is empty: write what to send, or cancel.");
      return;
    }
    send.disabled = true;
    const ok = await startFrom(`${base}/runs/edit/`, { entryId: record.id, prompt }, null);
    // On failure the editor stays open with the text, so nothing typed is lost.
    if (ok) close();
    else send.disabled = run.active;
  });
  hidden.forEach((child) => (child.hidden = true));
  node.appendChild(form);
  text.focus();
  paint();
}

function decorate(node, record) {
  const e = record.entry || {};
  const role = e.type === "message" && e.message ? e.message.role : null;
  const head = node.querySelector(":scope > header");
  if (!head || !canSteer() || (role !== "assistant" && role !== "user")) return;
  const button =
    role === "assistant"
      ? el("button", { type: "button", class: "icon small run-action regenerate", text: "Regenerate", title: "Answer this turn again, as a new branch beside this answer" })
      : el("button", { type: "button", class: "icon small run-action edit-message", text: "Edit", title: "Edit this message and send it as a new branch beside it" });
  button.disabled = run.active;
  button.addEventListener("click", (event) => {
    event.stopPropagation();
    if (role === "assistant") regenerate(record);
    else openEditor(node, record);
  });
  head.appendChild(button);
}

export function initSteering() {
  cardDecorators.push(decorate);
  $("composer-stop").addEventListener("click", () => stopRun());
  document.addEventListener("piweb:run", (event) => {
    const message = event.detail || {};
    if (message.event === "run_ended") runEnded(message.run);
    else runStarted(message.run, { remote: Boolean(message.runner) });
  });
  document.addEventListener("piweb:live", () => refresh());
  document.addEventListener("keydown", (event) => {
    if (event.key !== "Escape" || !run.active || event.defaultPrevented) return;
    // Escape keeps its own meaning in dialogs, the search box and an open editor.
    if (document.querySelector("dialog[open]") || (/** @type {HTMLElement} */ (event.target)).closest("#tree-search, .inline-edit")) return;
    event.preventDefault();
    stopRun();
  });
  paint();
}

// After the first screen: whether a run is active, unless the socket already asked.
export function askRunsOnce() {
  return asked ? Promise.resolve() : refresh();
}

/** Repaint the buttons (after the runners arrive, say). */
export function repaint() {
  paint();
}
