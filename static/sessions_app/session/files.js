// @ts-check
// The files view, in the context panel's place: every file the selected entry's branch read or changed,
// the most recently touched first, with +/− line counts; a file opens to its diffs (newest first, each
// linking to the entry that made it) and its text at the entry when the branch shows it. It follows the
// selection while shown; hidden, it asks nothing.
import { api, clear, el, query } from "../api.js";
import { counts, renderHunks } from "../diff.js";
import { $, CONTEXT_PAUSE, base, hooks, showError, state } from "./page.js";
import { phone, showPanel } from "./tree_panel.js";

const panel = $("context-panel");
const view = $("files-view");
const list = $("files-list");
const detail = $("file-detail");
const status = $("files-status");
const commands = $("files-commands");
const toggle = $("files-toggle");

/** @type {{ leaf: string | null, path: string | null, token: number }} */
let shown = { leaf: null, path: null, token: 0 };
let timer = 0;

const KIND_TEXT = { created: "created", written: "written", edited: "edited", read: "read" };

/** @param {string} name */
function setView(name) {
  const files = name === "files";
  panel.dataset.view = name;
  view.hidden = !files;
  toggle.textContent = files ? "Context" : "Files";
  toggle.setAttribute("aria-expanded", String(files));
  $("context-heading").textContent = files ? "Files" : "Context";
  if (files && state.selectedId && shown.leaf !== state.selectedId) load(state.selectedId, null);
}

/** A link that selects the entry in the tree (and shows the branch on a phone). @param {string} id @param {string} text */
function entryLink(id, text) {
  return el("a", {
    href: `#entry=${encodeURIComponent(id)}`,
    class: "entry-link",
    text,
    title: id,
    onclick: (/** @type {Event} */ event) => {
      event.preventDefault();
      hooks.select(id, { show: true });
    },
  });
}

const ALL_FILES = 5000; // the most the API lists at once; the first answer lists the newest 200

/** @param {string} leaf @param {string | null} path @param {boolean} [all] */
async function load(leaf, path, all = false) {
  const token = ++shown.token;
  shown = { leaf, path, token };
  view.setAttribute("aria-busy", "true");
  status.textContent = path ? `Loading ${path}…` : "Loading the files of this branch…";
  try {
    const { body } = await api("GET", `${base}/files/${query(path ? { leaf, path } : all ? { leaf, limit: ALL_FILES } : { leaf })}`);
    if (token !== shown.token) return;
    if (path) drawFile(body.file);
    else drawList(body);
  } catch (error) {
    if (token !== shown.token) return;
    // The file open before is not on the newly selected entry's branch: its list instead.
    if (path && error.status === 404) return load(leaf, null);
    status.textContent = `The files could not be loaded: ${error.message}`;
  } finally {
    if (token === shown.token) view.removeAttribute("aria-busy");
  }
}

function drawList(body) {
  detail.hidden = true;
  list.hidden = false;
  clear(list);
  const changed = body.files.filter((f) => f.changeCount > 0).length;
  status.textContent = body.fileCount
    ? `${body.fileCount.toLocaleString()} ${body.fileCount === 1 ? "file" : "files"} on this branch` +
      (body.hasMore ? `; the ${body.files.length} touched last, ${changed} of them changed` : `, ${changed} changed`)
    : "This branch has read or changed no files yet.";
  for (const file of body.files) {
    const open = el(
      "button",
      { type: "button", class: "file-row", title: file.absolute, onclick: () => load(/** @type {string} */ (shown.leaf), file.path) },
      el("span", { class: "file-path mono", text: file.path }),
      el("span", { class: "file-kinds muted small", text: file.kinds.map((k) => KIND_TEXT[k] || k).join(", ") }),
      file.changeCount ? counts(file.added, file.removed) : null,
    );
    list.appendChild(el("li", { dataset: { path: file.path } }, open));
  }
  if (body.hasMore) {
    const more = el("button", { type: "button", class: "link", text: `Show all ${body.fileCount.toLocaleString()} files`, onclick: () => load(/** @type {string} */ (shown.leaf), null, true) });
    list.appendChild(el("li", {}, more));
  }
  clear(commands);
  commands.hidden = !body.commandCount;
  if (body.commandCount) {
    commands.append(
      el("p", {
        class: "muted",
        text:
          body.commandCount === 1
            ? "1 shell command ran on this branch; what it changed is not known:"
            : `${body.commandCount.toLocaleString()} shell commands ran on this branch; what they changed is not known. The newest:`,
      }),
      el("ul", { class: "plain-list" }, ...body.commands.map((c) => el("li", {}, el("code", { text: c.command }), " ", entryLink(c.entryId, c.isError ? "failed: show in the tree" : "show in the tree")))),
    );
  }
}

function drawFile(file) {
  list.hidden = true;
  commands.hidden = true;
  detail.hidden = false;
  status.textContent = "";
  const back = el("button", { type: "button", class: "link", text: "← All files", onclick: () => load(/** @type {string} */ (shown.leaf), null) });
  const head = el("div", { class: "file-head" }, back, el("h3", { class: "file-path mono", text: file.path, title: file.absolute }), counts(file.added, file.removed));
  const changes = file.changes.map((change) => {
    const lines = renderHunks(change.hunks, change.numbered);
    return el(
      "section",
      { class: "file-change", dataset: { entry: change.entryId } },
      el("p", { class: "small change-head" }, el("strong", { text: KIND_TEXT[change.kind] || change.kind }), " ", counts(change.added, change.removed), " · ", entryLink(change.entryId, "show in the tree")),
      lines,
    );
  });
  let content;
  if (file.content !== null && file.content !== undefined) {
    const note = file.commandsSince
      ? `As the branch last saw it (at ${file.contentEntryId}); ${file.commandsSince} shell ${file.commandsSince === 1 ? "command" : "commands"} ran after and may have changed it.`
      : `As the branch last saw it, at ${file.contentEntryId}.`;
    content = el("details", { class: "file-content" }, el("summary", { text: "Content at this entry" }), el("p", { class: "muted small", text: note }), el("pre", { class: "mono", text: file.content }));
  } else {
    // Said, never guessed: the branch holds no whole text of the file to start from.
    const why = file.changes.length
      ? "the branch changed it without reading or writing it whole first, or an edit did not apply exactly to the text it had."
      : "the branch read only part of it.";
    content = el("p", { class: "muted small file-unknown", text: `Content at this entry: not known; ${why}` });
  }
  clear(detail).append(head, content, ...(changes.length ? changes : [el("p", { class: "muted small", text: "Only read on this branch." })]));
  detail.scrollTop = 0;
}

// A successful edit or write result changed a file: its tree row is marked, and the "Changed files" filter
// keeps such rows (of every branch whose entries the page holds).
/** @param {any} record */
export function changedAFile(record) {
  const message = record && record.entry && record.entry.message;
  return Boolean(message && message.role === "toolResult" && (message.toolName === "edit" || message.toolName === "write") && message.isError !== true);
}

/** @param {import("../tree.js").TreeView} tree */
export function initFiles(tree) {
  tree.decorators.push((row) =>
    row.kind === "node" && changedAFile(tree.recordFor(row.id)) ? el("span", { class: "badge changed", text: "changed", title: "This tool result changed a file (an edit or a write)" }) : null,
  );
  tree.filters.set("changed-files", (node) => changedAFile(tree.recordFor(node.id)));
  toggle.addEventListener("click", () => {
    const next = panel.dataset.view === "files" ? "context" : "files";
    setView(next);
    if (phone.matches) showPanel(next);
  });
  /** @type {NodeListOf<HTMLButtonElement>} */ (document.querySelectorAll(".panel-tabs button")).forEach((b) => {
    if (b.dataset.panel === "files") b.addEventListener("click", () => setView("files"));
    else if (b.dataset.panel === "context") b.addEventListener("click", () => setView("context"));
  });
  // It follows the selection while shown, after a short pause so moving through the tree asks once.
  document.addEventListener("piweb:selected", (event) => {
    const id = /** @type {CustomEvent} */ (event).detail.id;
    if (panel.dataset.view !== "files") return;
    clearTimeout(timer);
    const path = shown.path;
    timer = window.setTimeout(() => load(id, path).catch((e) => showError(e.message)), CONTEXT_PAUSE);
  });
}
