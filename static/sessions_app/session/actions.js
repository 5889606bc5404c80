// @ts-check
// The node actions (continue here, fork, clone, label, compact, compare), rename and delete, and the
// operations they start (a branch summary, a compaction) followed until they end.
import { api, query } from "../api.js";
import { describeEntry } from "../format.js";
import { ask, confirmAction } from "../dialogs.js";
import { setEditor } from "./composer.js";
import { $, base, cfg, hooks, showError, showNotice, showOperation, state } from "./page.js";


function selectedRecord() {
  return state.entries.get(/** @type {string} */ (state.selectedId));
}

function isUserMessage(record) {
  return record && record.type === "message" && record.entry.message && record.entry.message.role === "user";
}

export function updateActions() {
  const none = !state.selectedId;
  /** @type {NodeListOf<HTMLButtonElement>} */ (document.querySelectorAll("#node-actions button")).forEach((button) => {
    const needsEdit = ["navigate", "label", "compact"].includes(/** @type {string} */ (button.dataset.action));
    button.disabled =
      (none && button.dataset.action !== "compact") ||
      (needsEdit && !cfg.canEdit) ||
      document.body.dataset.revoked === "true";
  });
}

export async function openNavigate() {
  if (!cfg.canEdit || !state.selectedId) return;
  const form = await ask("navigate-dialog", (f) => {
    // The summary's instructions mean something only when a summary is asked for.
    const options = /** @type {HTMLFieldSetElement} */ ($("navigate-summary-options"));
    const box = /** @type {HTMLInputElement} */ (f.elements.summarize);
    options.disabled = true;
    box.onchange = () => (options.disabled = !box.checked);
  });
  if (!form) return;
  const summarize = /** @type {HTMLInputElement} */ (form.elements.summarize).checked;
  const body = { targetId: state.selectedId, summarize, replaceInstructions: /** @type {HTMLInputElement} */ (form.elements.replace).checked };
  if (form.elements.instructions.value.trim()) body.customInstructions = form.elements.instructions.value;
  try {
    const answer = await api("POST", `${base}/navigate/`, body);
    if (answer.status === 202) {
      await trackOperation(answer.body.operationId, "Summarizing the branch you left…");
      return;
    }
    setEditor(answer.body.editorText);
    await hooks.catchUp({ follow: true });
  } catch (error) {
    showError(error.message);
  }
}

export async function trackOperation(operationId, text) {
  showOperation(text);
  try {
    for (;;) {
      const { body } = await api("GET", `/api/operations/${operationId}/`);
      if (body.status === "succeeded") {
        if (body.result) setEditor(body.result.editorText);
        await hooks.catchUp({ follow: true });
        return body;
      }
      if (body.status === "failed" || body.status === "cancelled") {
        showError(explain(body.error) || `The operation was ${body.status}.`);
        return body;
      }
      await new Promise((resolve) => setTimeout(resolve, 700));
    }
  } finally {
    showOperation("");
  }
}

async function fork() {
  const record = selectedRecord();
  const user = isUserMessage(record);
  const form = await ask("fork-dialog", (f) => {
    $("fork-position").hidden = !user;
    f.elements.name.value = `${currentName()} (fork)`;
  });
  if (!form) return;
  const body = { entryId: state.selectedId, mode: form.elements.mode.value };
  if (user) body.position = /** @type {HTMLInputElement} */ (form.elements.before).checked ? "before" : "at";
  try {
    const { body: answer } = await api("POST", `${base}/fork/`, body);
    await nameCopy(answer.session.id, form.elements.name.value);
    if (answer.editorText) sessionStorage.setItem(`piweb-editor-${answer.session.id}`, answer.editorText);
    location.href = `/sessions/${answer.session.id}/`;
  } catch (error) {
    showError(error.message);
  }
}

function currentName() {
  return $("session-title").textContent.trim() || "Session";
}

// A fork or clone gets its own name (a session_info entry in the copy), so the two are told apart.
async function nameCopy(id, name) {
  if (name && name.trim()) await api("PATCH", `/api/sessions/${id}/`, { name: name.trim() }).catch(() => null);
}

async function clone() {
  const form = await ask("clone-dialog", (f) => {
    f.elements.name.value = `${currentName()} (copy)`;
  });
  if (!form) return;
  try {
    const { body } = await api("POST", `${base}/clone/`, { entryId: state.selectedId });
    await nameCopy(body.session.id, form.elements.name.value);
    location.href = `/sessions/${body.session.id}/`;
  } catch (error) {
    showError(error.message);
  }
}

async function label() {
  const current = (state.nodes.get(/** @type {string} */ (state.selectedId)) || {}).label || "";
  const form = await ask("label-dialog", (f) => {
    f.elements.label.value = current;
  });
  if (!form) return;
  const value = form.elements.label.value.trim();
  try {
    await api("POST", `${base}/labels/`, { targetId: state.selectedId, label: value || null });
    await hooks.catchUp({ follow: false });
  } catch (error) {
    showError(error.message);
  }
}

// The server's "Nothing to compact" with the reason a person needs.
function explain(message) {
  const keep = cfg.compactKeepRecentTokens;
  if (!message || !keep || !/nothing to compact/i.test(message)) return message;
  return `${message}: compaction keeps the newest ${keep.toLocaleString()} tokens as they are and summarizes only older messages, and this path holds fewer.`;
}

// Why a compaction may have nothing to do, said before the click: it keeps the newest tokens verbatim
// and summarizes only what is older.
async function compactNote() {
  const note = $("compact-note");
  note.hidden = true;
  const keep = cfg.compactKeepRecentTokens;
  if (!keep || !state.leafId) return;
  try {
    const { body } = await api("GET", `${base}/context/${query({ leaf: state.leafId, head: 0, tail: 1, llm: false, render: 0 })}`);
    const held = body.breakdown ? body.breakdown.messages : body.estimate.tokens;
    if (held > keep) return;
    note.textContent =
      `Nothing to compact yet: compaction keeps the newest ${keep.toLocaleString()} tokens word for word and summarizes ` +
      `only what is older, and the current path holds about ${held.toLocaleString()} tokens of messages.`;
    note.hidden = false;
  } catch (_) {
    // The server says why when asked to compact; the note is only a warning ahead of it.
  }
}

async function compact() {
  const form = await ask("compact-dialog", () => compactNote());
  if (!form) return;
  const body = {};
  if (form.elements.instructions.value.trim()) body.customInstructions = form.elements.instructions.value;
  try {
    const answer = await api("POST", `${base}/compact/`, body);
    await trackOperation(answer.body.operationId, "Compacting…");
  } catch (error) {
    showError(explain(error.message));
  }
}

// Compare: the first press marks the selected entry, the second opens both contexts side by side.
let compareFrom = null;
function compare() {
  const button = /** @type {HTMLButtonElement} */ (document.querySelector('#node-actions button[data-action="compare"]'));
  if (!compareFrom || compareFrom === state.selectedId) {
    compareFrom = state.selectedId;
    button.textContent = "Compare with marked…";
    showNotice(`Marked ${describeEntry(compareFrom ? state.entries.get(compareFrom) : null)} for comparison: select another entry and press “Compare with marked…”.`);
    return;
  }
  const link = `/sessions/${cfg.session}/compare/${query({ a: compareFrom, b: state.selectedId })}`;
  compareFrom = null;
  button.textContent = "Compare…";
  location.href = link;
}

const ACTIONS = { navigate: openNavigate, fork, clone, label, compact, compare };

export function initActions() {
  if ($("rename-button")) {
    $("rename-button").addEventListener("click", async () => {
      const form = await ask("rename-dialog", (f) => (f.elements.name.value = currentName()));
      if (!form) return;
      try {
        const { body } = await api("PATCH", `${base}/`, { name: form.elements.name.value.trim() });
        $("session-title").textContent = body.name || currentName();
        document.title = `${$("session-title").textContent} · piweb`;
        await hooks.catchUp({ follow: false });
      } catch (error) {
        showError(error.message);
      }
    });
  }
  if ($("delete-button")) {
    $("delete-button").addEventListener("click", async () => {
      const ok = await confirmAction({
        title: `Delete “${currentName()}”?`,
        text: "The session, its whole tree and its share links are removed for everyone. Export it first if you may need it.",
        confirm: "Delete",
      });
      if (!ok) return;
      try {
        await api("DELETE", `${base}/`);
        location.href = "/";
      } catch (error) {
        showError(error.message);
      }
    });
  }
  /** @type {NodeListOf<HTMLButtonElement>} */ (document.querySelectorAll("#node-actions button")).forEach((button) => {
    button.addEventListener("click", () => ACTIONS[/** @type {keyof typeof ACTIONS} */ (button.dataset.action)]());
  });
}
