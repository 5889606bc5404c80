// @ts-check
// Who wrote each entry, on the page: the author on its card, and the tree filters "Mine" and
// "By <person>" (the people who wrote the entries loaded so far).
import { el } from "../api.js";
import { AUTHOR_FILTER, authorText, peopleOf } from "../authors.js";
import { $, cfg, state } from "./page.js";

export function authorTag(record) {
  const text = authorText(record.author);
  if (!text) return null;
  const via = record.author.kind === "run" ? `run ${record.author.via}` : "";
  return el("span", { class: "author muted small", text, title: via || text });
}

let counted = -1;
function refreshOptions() {
  if (state.entries.size === counted) return;
  counted = state.entries.size;
  const select = /** @type {HTMLSelectElement} */ ($("tree-filter"));
  let group = document.getElementById("author-filters");
  if (!group) {
    group = el("optgroup", { id: "author-filters", label: "Written by" });
    select.appendChild(group);
  }
  const chosen = select.value;
  const mine = cfg.userId === null || cfg.userId === undefined ? null : String(cfg.userId);
  const people = [...peopleOf(state.entries.values())].filter(([id]) => id !== mine);
  people.sort((a, b) => a[1].localeCompare(b[1]));
  group.replaceChildren(
    ...(mine ? [el("option", { value: `${AUTHOR_FILTER}${mine}`, text: "Mine" })] : []),
    ...people.map(([id, name]) => el("option", { value: `${AUTHOR_FILTER}${id}`, text: `By ${name}` })),
  );
  select.value = chosen;
}

export function initAttribution() {
  refreshOptions();
  // Entries arrive as rows come into view: the people to filter by grow with them.
  new MutationObserver(refreshOptions).observe($("tree-scroll"), { childList: true, subtree: true });
  $("tree-filter").addEventListener("focus", refreshOptions);
}
