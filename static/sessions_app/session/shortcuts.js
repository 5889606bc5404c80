// @ts-check
// The keyboard shortcuts of the session page, listed in a dialog that `?` opens (when not typing).
import { el } from "../api.js";
import { ask } from "../dialogs.js";

export const SHORTCUTS = [
  ["?", "Show these shortcuts"],
  ["/", "Search the tree"],
  ["Enter · Shift+Enter", "In the search box: next · previous match"],
  ["Esc", "In the search box: clear the search"],
  ["↑ ↓ · Home End", "In the tree: move to the next or previous entry · the first or last"],
  ["← →", "In the tree: fold or open a branch point; ← also goes to the parent"],
  ["Enter", "In the tree: continue from the selected entry"],
  ["Enter · Shift+Enter", "In the message box: send · new line"],
  ["Ctrl+V", "In the message box: attach a copied picture"],
  ["Esc", "While a reply is being written: stop it (what was written is kept)"],
];

let dialog = null;
function ensureDialog() {
  if (dialog) return dialog;
  const rows = SHORTCUTS.map(([keys, what]) => el("tr", {}, el("th", { scope: "row" }, el("kbd", { text: keys })), el("td", { text: what })));
  dialog = el(
    "dialog",
    { id: "shortcuts-dialog", "aria-labelledby": "shortcuts-title" },
    el(
      "form",
      { method: "dialog", class: "stack" },
      el("h3", { id: "shortcuts-title", text: "Keyboard shortcuts" }),
      el("table", { class: "plain shortcuts" }, el("tbody", {}, ...rows)),
      el("div", { class: "buttons" }, el("button", { type: "submit", value: "ok", class: "primary", autofocus: true, text: "Close" })),
    ),
  );
  document.body.appendChild(dialog);
  return dialog;
}

export function initShortcuts() {
  document.addEventListener("keydown", (event) => {
    const typing = /^(INPUT|TEXTAREA|SELECT)$/.test(/** @type {Element} */ (document.activeElement).tagName);
    if (event.key !== "?" || typing || event.ctrlKey || event.metaKey || document.querySelector("dialog[open]")) return;
    event.preventDefault();
    ask(ensureDialog());
  });
}
