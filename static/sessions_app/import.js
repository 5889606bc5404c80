// @ts-check
// Bringing session files in: drop or choose .jsonl files (or a folder of them); each is uploaded in turn
// with a progress bar of its own, and ends as done (what was stored, what was skipped) or failed (why).
import { clear, csrfToken, el } from "./api.js";
import { humanBytes } from "./format.js";

const zone = /** @type {HTMLElement} */ (document.getElementById("dropzone"));
const input = /** @type {HTMLInputElement} */ (document.getElementById("file-input"));
// Only where the browser can pick folders.
const folderInput = /** @type {HTMLInputElement | null} */ (document.getElementById("folder-input"));
const list = /** @type {HTMLElement} */ (document.getElementById("import-list"));

// One file's progress block: phase, name, bytes, bar and result.
/** @param {File} file */
function itemFor(file) {
  const phase = el("span", { class: "progress-phase", text: "Waiting" });
  const text = el("span", { class: "progress-text", text: humanBytes(file.size) });
  const bar = el("progress", { class: "progress-bar", max: "100", value: "0" });
  const result = el("div", { class: "import-result", hidden: true });
  const node = el(
    "li",
    { class: "import-item", dataset: { state: "waiting", file: file.name } },
    el("div", { class: "progress-label" }, phase, " ", el("span", { class: "progress-file mono", text: file.webkitRelativePath || file.name }), " ", text),
    bar,
    result,
  );
  return { node, phase, text, bar, result };
}

function finish(item, state, phaseText, nodes) {
  item.node.dataset.state = state;
  item.phase.textContent = phaseText;
  item.text.textContent = "";
  // A failed file shows no bar at all: a full bar beside "Failed" reads as a success.
  if (state === "failed") item.bar.hidden = true;
  else item.bar.value = 100;
  clear(item.result).append(...nodes);
  item.result.hidden = false;
}

function report(body) {
  const s = body.session;
  const title = s.title || s.name || s.piId;
  const ahead = body.serverOnly ? ` piweb holds ${body.serverOnly} ${body.serverOnly === 1 ? "entry" : "entries"} this file does not have (added here since), and keeps them.` : "";
  const summary = body.created
    ? `Imported ${s.entryCount} entries.`
    : body.appended > 0
      ? `Appended ${body.appended} new ${body.appended === 1 ? "entry" : "entries"} to the existing session.${ahead}`
      : `This session is already stored; nothing new in this file.${ahead}`;
  const nodes = [el("p", {}, el("strong", { text: summary }), " ", el("a", { href: `/sessions/${s.id}/`, class: "open-imported", text: `Open “${title}”` }))];
  if (body.migrated) nodes.push(el("p", { class: "muted", text: "The file was migrated from an older session format." }));
  // The server lists the first skipped lines and counts them all.
  const skipped = body.skippedLines || [];
  const total = body.skippedCount ?? skipped.length;
  if (total) {
    nodes.push(el("h3", { text: `${total} line${total === 1 ? "" : "s"} skipped` }));
    const rows = skipped.map((line) => el("tr", {}, el("td", { class: "num", text: line.line }), el("td", { text: line.reason })));
    nodes.push(el("table", { class: "skipped" }, el("thead", {}, el("tr", {}, el("th", { text: "Line" }), el("th", { text: "Reason" }))), el("tbody", {}, rows)));
    if (total > skipped.length) nodes.push(el("p", { class: "muted", text: `…and ${total - skipped.length} more.` }));
  } else {
    nodes.push(el("p", { class: "muted", text: "No lines were skipped." }));
  }
  return nodes;
}

const failure = (message) => [el("p", { class: "error", role: "alert", text: message })];

// Upload one file; resolves when it is done or failed (never rejects: the next file goes on).
/**
 * @param {File} file
 * @param {ReturnType<typeof itemFor>} item
 * @returns {Promise<void>}
 */
function upload(file, item) {
  return new Promise((resolve) => {
    if (!file.size) {
      finish(item, "failed", "Failed", failure("The file is empty: a Pi session file has at least its header line."));
      resolve();
      return;
    }
    item.node.dataset.state = "uploading";
    item.phase.textContent = "Uploading";
    item.text.textContent = `0 of ${humanBytes(file.size)}`;
    const form = new FormData();
    form.append("file", file, file.name);
    const xhr = new XMLHttpRequest();
    xhr.open("POST", "/api/sessions/import/");
    xhr.setRequestHeader("X-CSRFToken", csrfToken());
    xhr.setRequestHeader("Accept", "application/json");
    xhr.upload.addEventListener("progress", (event) => {
      if (!event.lengthComputable) return;
      // The upload is the first half of the bar; storing the entries is the second.
      item.bar.value = (event.loaded / event.total) * 50;
      item.text.textContent = `${humanBytes(event.loaded)} of ${humanBytes(event.total)}`;
    });
    xhr.upload.addEventListener("load", () => {
      item.node.dataset.state = "storing";
      item.phase.textContent = "Storing entries";
      item.text.textContent = "";
      item.bar.removeAttribute("value"); // indeterminate while the server parses and stores
    });
    xhr.addEventListener("load", () => {
      let body = null;
      try {
        body = JSON.parse(xhr.responseText);
      } catch (_) {
        body = null;
      }
      if (xhr.status >= 200 && xhr.status < 300 && body) finish(item, "done", "Done", report(body));
      else finish(item, "failed", "Failed", failure((body && body.error) || `The server answered ${xhr.status}.`));
      resolve();
    });
    xhr.addEventListener("error", () => {
      finish(item, "failed", "Failed", failure("The upload was interrupted."));
      resolve();
    });
    xhr.send(form);
  });
}

let queue = Promise.resolve();
// Files are uploaded one after another, in the order given; each shows its own state at once.
function uploadAll(files) {
  const chosen = [...files].filter((f) => f && (!f.webkitRelativePath || /\.jsonl$/i.test(f.name)));
  if (!chosen.length) return;
  list.hidden = false;
  for (const file of chosen) {
    const item = itemFor(file);
    list.appendChild(item.node);
    queue = queue.then(() => upload(file, item));
  }
  queue.then(() => (document.body.dataset.importsDone = String(list.querySelectorAll(".import-item").length)));
}

// Files dropped with folders among them: walk the folders for their .jsonl files.
async function droppedFiles(transfer) {
  const entries = [...(transfer.items || [])].map((i) => (i.webkitGetAsEntry ? i.webkitGetAsEntry() : null));
  if (!entries.length || entries.some((e) => !e)) return [...transfer.files];
  const files = [];
  const walk = async (entry) => {
    if (entry.isFile) {
      if (entries.includes(entry) || /\.jsonl$/i.test(entry.name)) files.push(await new Promise((ok, fail) => entry.file(ok, fail)));
      return;
    }
    const reader = entry.createReader();
    for (;;) {
      const batch = await new Promise((ok, fail) => reader.readEntries(ok, fail));
      if (!batch.length) break;
      for (const child of batch) await walk(child);
    }
  };
  for (const entry of entries) await walk(entry);
  return files;
}

input.addEventListener("change", () => {
  uploadAll(input.files);
  input.value = "";
});
if (folderInput) {
  folderInput.addEventListener("change", () => {
    uploadAll(folderInput.files);
    folderInput.value = "";
  });
}
zone.addEventListener("click", (event) => {
  if (event.target === input || event.target === folderInput || /** @type {Element} */ (event.target).closest("label")) return;
  input.click();
});
zone.addEventListener("keydown", (event) => {
  if (event.key === "Enter" || event.key === " ") input.click();
});
zone.addEventListener("dragover", (event) => {
  event.preventDefault();
  zone.classList.add("over");
});
zone.addEventListener("dragleave", () => zone.classList.remove("over"));
zone.addEventListener("drop", async (event) => {
  event.preventDefault();
  zone.classList.remove("over");
  uploadAll(await droppedFiles(event.dataTransfer));
});

// Handlers are attached: tests (and anything waiting on the page) can act.
document.body.dataset.ready = "true";
