// @ts-check
// The owner's view of secrets found in the session: a badge on each entry holding one, and a dialog
// that lists them (entry, kind, where; never the secret) and redacts one or all.
import { api, clear, el } from "../api.js";
import { $, base, hooks } from "./page.js";

let tree = null;

export async function initSecrets(treeView) {
  tree = treeView;
  $("secrets-button").addEventListener("click", () => (/** @type {HTMLDialogElement} */ ($("secrets-dialog"))).showModal());
  $("secrets-redact-all").addEventListener("click", () => redact({ all: true }));
  document.addEventListener("piweb:secrets", () => refresh().catch(() => {}));
  await refresh();
}

async function refresh() {
  const { body } = await api("GET", `${base}/secrets/`);
  const open = body.findings.filter((f) => !f.redacted);
  // A comment's secret is in the comment, not in the entry it is on: the entry's mark stays off.
  tree.secretIds = new Set(open.filter((f) => !f.commentId).map((f) => f.entryId).filter(Boolean));
  tree.render();
  const button = $("secrets-button");
  button.hidden = open.length === 0;
  button.textContent = open.length === 1 ? "1 secret…" : `${open.length} secrets…`;
  const list = clear($("secrets-list"));
  for (const finding of open) {
    list.append(
      el(
        "li",
        { dataset: { findingId: String(finding.id) } },
        el("button", { type: "button", class: "link", text: finding.commentId ? `comment on ${finding.entryId}` : finding.entryId || `line ${finding.seq}`, onclick: () => show(finding.entryId) }),
        el("span", { class: "tag", text: finding.kind }),
        el("span", { class: "muted small", title: `${finding.path} @ ${finding.start}–${finding.end}`, text: ` ${wherePath(finding.path, Boolean(finding.commentId))} ` }),
        el("button", { type: "button", class: "danger small", text: "Redact", onclick: () => redact({ findingIds: [finding.id] }) }),
      ),
    );
  }
  if (!open.length) /** @type {HTMLDialogElement} */ ($("secrets-dialog")).close();
}

// Where in an entry a secret sits, as people say it (the JSON pointer stays in the tooltip).
/**
 * @param {string} path
 * @param {boolean} inComment
 */
export function wherePath(path, inComment) {
  if (inComment) return "in the comment";
  if (/^\/message\/content(\/\d+\/text)?$/.test(path)) return "in the message text";
  if (/^\/message\/content\/\d+\/(arguments|input)(\/|$)/.test(path)) return "in a tool call's arguments";
  if (/^\/message\/content\/\d+\/thinking$/.test(path)) return "in the thinking";
  if (/^\/message\/(command|output)$/.test(path)) return "in a shell command or its output";
  if (/^\/(summary|name|label)$/.test(path)) return `in the ${path.slice(1)}`;
  return "in the entry";
}

function show(entryId) {
  if (!entryId) return;
  /** @type {HTMLDialogElement} */ ($("secrets-dialog")).close();
  tree.select(entryId);
  hooks.select(entryId, { show: true });
}

async function redact(body) {
  try {
    await api("POST", `${base}/secrets/redact/`, body);
  } catch (error) {
    $("secrets-list").prepend(el("li", { class: "error", text: error.message }));
    return;
  }
  // The redacted lines are read again: entries cached by the page still hold the old text.
  location.reload();
}
