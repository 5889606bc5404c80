// @ts-check
// The session list's organizing: a pin star and a checkbox on each row, the bulk bar with its preview
// dialog, and the saved filters menu beside the search form.
import { api, clear, el } from "../sessions_app/api.js";
import { plural } from "../sessions_app/format.js";

const config = /** @type {Piweb.OrganizeListConfig} */ (
  JSON.parse(/** @type {HTMLElement} */ (document.getElementById("organize-config")).textContent || "{}")
);
const pinned = new Set(config.pinned);
/** @type {Set<number>} */
const selected = new Set();
const bar = /** @type {HTMLElement} */ (document.getElementById("bulk-bar"));
const count = /** @type {HTMLElement} */ (document.getElementById("bulk-count"));
const rows = [.../** @type {NodeListOf<HTMLTableRowElement>} */ (document.querySelectorAll("table.sessions tbody tr[data-session-id]"))];

function showSelection() {
  bar.hidden = selected.size === 0;
  count.textContent = `${plural(selected.size, "session")} selected`;
}

/** @param {HTMLButtonElement} star @param {boolean} on */
function drawStar(star, on) {
  star.textContent = on ? "★" : "☆";
  star.setAttribute("aria-pressed", String(on));
  star.title = on ? "Unpin" : "Pin for me";
}

// One leading cell per row: select it for a bulk action, pin it for yourself.
const head = document.querySelector("table.sessions thead tr");
/** @type {HTMLInputElement | null} */
let all = null;
if (head) {
  all = el("input", { type: "checkbox", id: "select-all", "aria-label": "Select every session on this page" });
  head.prepend(el("th", { class: "pick" }, all));
  all.addEventListener("change", () => {
    for (const box of document.querySelectorAll("input.pick-session")) {
      const input = /** @type {HTMLInputElement} */ (box);
      input.checked = /** @type {HTMLInputElement} */ (all).checked;
      const id = Number(input.value);
      if (input.checked) selected.add(id);
      else selected.delete(id);
    }
    showSelection();
  });
}
for (const row of rows) {
  const id = Number(row.dataset.sessionId);
  const name = row.querySelector(".session-link")?.textContent || `session ${id}`;
  const box = el("input", { type: "checkbox", class: "pick-session", value: String(id), "aria-label": `Select ${name}` });
  box.addEventListener("change", () => {
    if (box.checked) selected.add(id);
    else selected.delete(id);
    if (all) all.checked = selected.size === rows.length;
    showSelection();
  });
  const star = el("button", { type: "button", class: "pin-star", "aria-label": `Pin ${name}` });
  drawStar(star, pinned.has(id));
  star.addEventListener("click", async () => {
    const on = !pinned.has(id);
    try {
      await api(on ? "POST" : "DELETE", `/api/sessions/${id}/pin/`);
      if (on) pinned.add(id);
      else pinned.delete(id);
      drawStar(star, on);
    } catch (error) {
      alert(/** @type {Error} */ (error).message);
    }
  });
  row.prepend(el("td", { class: "pick" }, box, star));
}

// -- bulk actions: a preview first, then the run -----------------------------------------------------

const dialog = /** @type {HTMLDialogElement} */ (document.getElementById("bulk-dialog"));
const form = /** @type {Piweb.NamedForm} */ (dialog.querySelector("form"));
const preview = /** @type {HTMLElement} */ (document.getElementById("bulk-preview"));
const runButton = /** @type {HTMLButtonElement} */ (document.getElementById("bulk-run"));
const TITLES = { archive: "Archive", restore: "Restore", tag: "Tag", untag: "Untag", share: "Share with a team", delete: "Delete" };
let action = "";

function request(previewOnly) {
  const tag = /** @type {HTMLSelectElement} */ (form.elements.tag).value;
  const team = /** @type {HTMLSelectElement} */ (form.elements.team).value;
  return {
    action,
    sessions: [...selected],
    tagId: tag ? Number(tag) : null,
    teamId: team ? Number(team) : null,
    access: /** @type {HTMLSelectElement} */ (form.elements.access).value,
    preview: previewOnly,
  };
}

/**
 * @param {any} plan
 * @param {boolean} done
 * @returns {HTMLElement[]}
 */
function describe(plan, done) {
  const c = plan.counts;
  /** @type {(HTMLElement | null)[]} */
  const lines = [
    el("p", { class: "bulk-change" }, done ? `${plural(c.change, "session")} changed.` : `${plural(c.change, "session")} will change.`),
    c.unchanged ? el("p", { class: "bulk-unchanged muted" }, `${plural(c.unchanged, "session")} already so: unchanged.`) : null,
    c.missing ? el("p", { class: "bulk-missing muted" }, `${plural(c.missing, "session")} not found.`) : null,
  ];
  const refused = [...plan.refused, ...plan.failed];
  if (refused.length) {
    lines.push(el("p", { class: "bulk-refused" }, `${plural(refused.length, "session")} you may not change:`));
    lines.push(el("ul", { class: "bulk-refused-list" }, refused.map((r) => el("li", null, `${r.name}: ${r.reason}`))));
  }
  return /** @type {HTMLElement[]} */ (lines.filter(Boolean));
}

async function showPreview() {
  runButton.disabled = true;
  clear(preview).append("Checking…");
  try {
    const { body } = await api("POST", "/api/sessions/bulk/", request(true));
    clear(preview).append(...describe(body, false));
    runButton.disabled = body.counts.change === 0;
  } catch (error) {
    clear(preview).append(el("p", { class: "error" }, /** @type {Error} */ (error).message));
  }
}

/** @param {HTMLSelectElement} select @param {{value: string, text: string}[]} options */
function fill(select, options) {
  clear(select).append(...options.map((o) => el("option", { value: o.value }, o.text)));
}

for (const button of /** @type {NodeListOf<HTMLButtonElement>} */ (bar.querySelectorAll("button[data-bulk]"))) {
  // Tagging needs a tag of one's teams, sharing a team.
  const bulk = button.dataset.bulk;
  if ((bulk === "tag" || bulk === "untag") && !config.tags.length) button.hidden = true;
  if (bulk === "share" && !config.teams.length) button.hidden = true;
  button.addEventListener("click", () => {
    action = /** @type {HTMLElement} */ (button).dataset.bulk || "";
    /** @type {HTMLElement} */ (document.getElementById("bulk-title")).textContent = `${TITLES[action]}: ${plural(selected.size, "session")}`;
    const tagged = action === "tag" || action === "untag";
    /** @type {HTMLElement} */ (document.getElementById("bulk-tag-field")).hidden = !tagged;
    /** @type {HTMLElement} */ (document.getElementById("bulk-team-field")).hidden = action !== "share";
    /** @type {HTMLElement} */ (document.getElementById("bulk-access-field")).hidden = action !== "share";
    fill(/** @type {HTMLSelectElement} */ (form.elements.tag), config.tags.map((t) => ({ value: String(t.id), text: `${t.name} (${t.teamName})` })));
    fill(/** @type {HTMLSelectElement} */ (form.elements.team), config.teams.map((t) => ({ value: String(t.id), text: t.name })));
    runButton.textContent = TITLES[action];
    runButton.classList.toggle("danger", action === "delete");
    dialog.returnValue = "";
    dialog.showModal();
    showPreview();
  });
}
for (const name of ["tag", "team", "access"]) /** @type {HTMLSelectElement} */ (form.elements[name]).addEventListener("change", showPreview);
/** @type {HTMLElement} */ (dialog.querySelector("[data-cancel]")).addEventListener("click", () => dialog.close());
form.addEventListener("submit", async (event) => {
  event.preventDefault();
  runButton.disabled = true;
  try {
    const { body } = await api("POST", "/api/sessions/bulk/", request(false));
    clear(preview).append(...describe(body, true));
    runButton.hidden = true;
    // The list is read again once the dialog closes, showing what changed.
    dialog.addEventListener("close", () => location.reload(), { once: true });
    /** @type {HTMLElement} */ (dialog.querySelector("[data-cancel]")).textContent = "Close";
  } catch (error) {
    clear(preview).append(el("p", { class: "error" }, /** @type {Error} */ (error).message));
  }
});
/** @type {HTMLElement} */ (document.getElementById("bulk-clear")).addEventListener("click", () => {
  selected.clear();
  for (const box of document.querySelectorAll("input.pick-session")) /** @type {HTMLInputElement} */ (box).checked = false;
  if (all) all.checked = false;
  showSelection();
});

// -- saved filters -----------------------------------------------------------------------------------

const saveForm = /** @type {Piweb.NamedForm | null} */ (document.getElementById("save-filter-form"));
if (saveForm) {
  saveForm.addEventListener("submit", async (event) => {
    event.preventDefault();
    const team = /** @type {HTMLSelectElement} */ (saveForm.elements.team).value;
    const body = {
      name: /** @type {HTMLInputElement} */ (saveForm.elements.name).value.trim(),
      query: /** @type {HTMLInputElement} */ (saveForm.elements.query).value,
      teamId: team ? Number(team) : null,
    };
    try {
      await api("POST", "/api/saved-filters/", body);
      location.reload();
    } catch (error) {
      alert(/** @type {Error} */ (error).message);
    }
  });
}
for (const button of document.querySelectorAll("#saved-filters .delete-filter")) {
  button.addEventListener("click", async () => {
    const item = /** @type {HTMLElement} */ (button.closest("li"));
    try {
      await api("DELETE", `/api/saved-filters/${item.dataset.filterId}/`);
      item.remove();
    } catch (error) {
      alert(/** @type {Error} */ (error).message);
    }
  });
}

document.body.dataset.organizeReady = "true";
