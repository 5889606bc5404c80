// @ts-check
// The session list: create an empty session and open it.
import { api, el, query } from "./api.js";
import { money } from "../costs/money.js";
import { plural } from "./format.js";
import { ask } from "./dialogs.js";

/** @type {HTMLElement} */ (document.getElementById("new-session-button")).addEventListener("click", async () => {
  const form = await ask("new-session-dialog");
  if (!form) return;
  const body = { name: form.elements.name.value.trim(), cwd: form.elements.cwd.value.trim() };
  try {
    const { body: session } = await api("POST", "/api/sessions/", body);
    location.href = `/sessions/${session.id}/`;
  } catch (error) {
    alert(error.message);
  }
});

// My sessions holding secrets not redacted yet carry a badge (the owner redacts them on the session page).
api("GET", "/api/secrets/")
  .then(({ body }) => {
    for (const { session, open } of body.sessions) {
      const cell = document.querySelector(`tr[data-session-id="${session}"] td.name`);
      if (!cell) continue;
      const text = open === 1 ? "1 secret" : `${open} secrets`;
      /** @type {Element} */ (cell.querySelector(".session-link")).after(" ", el("span", { class: "badge secret", text, title: "Secrets found in this session: open it to redact them" }));
    }
  })
  .catch(() => {}); // the badges are a hint; the list works without them
// Each listed session's cost, over all its branches, in one request for the page.
async function fillCosts() {
  const cells = [.../** @type {NodeListOf<HTMLElement>} */ (document.querySelectorAll("[data-cost-session]"))];
  if (!cells.length) return;
  try {
    const ids = cells.map((c) => c.dataset.costSession).join(",");
    const { body } = await api("GET", `/api/usage/sessions/${query({ ids })}`);
    for (const cell of cells) {
      const found = body.results[/** @type {string} */ (cell.dataset.costSession)];
      cell.textContent = found ? money(found.cost) : "–";
      if (found) cell.title = `${plural(found.tokens, "token")} in ${plural(found.messages, "assistant message")}, all branches`;
    }
  } catch {
    for (const cell of cells) cell.textContent = "–";
  }
}
fillCosts();

// Handlers are attached: tests (and anything waiting on the page) can act.
document.body.dataset.ready = "true";

// The filter bar is a plain GET form; empty fields stay out of the URL so a shared link names only the
// filters set.
const searchForm = /** @type {HTMLFormElement | null} */ (document.querySelector("form.filters"));
searchForm?.addEventListener("submit", () => {
  for (const field of /** @type {NodeListOf<HTMLInputElement | HTMLSelectElement>} */ (searchForm.querySelectorAll("#filter-bar [name]"))) {
    if (!field.value) field.disabled = true;
  }
});
