// The session list: create an empty session and open it.
import { api, query } from "./api.js";
import { money } from "../costs/money.js";
import { ask } from "./dialogs.js";

document.getElementById("new-session-button").addEventListener("click", async () => {
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

// Each listed session's cost, over all its branches, in one request for the page.
async function fillCosts() {
  const cells = [...document.querySelectorAll("[data-cost-session]")];
  if (!cells.length) return;
  try {
    const ids = cells.map((c) => c.dataset.costSession).join(",");
    const { body } = await api("GET", `/api/usage/sessions/${query({ ids })}`);
    for (const cell of cells) {
      const found = body.results[cell.dataset.costSession];
      cell.textContent = found ? money(found.cost) : "–";
      if (found) cell.title = `${found.tokens.toLocaleString()} tokens in ${found.messages.toLocaleString()} assistant messages, all branches`;
    }
  } catch {
    for (const cell of cells) cell.textContent = "–";
  }
}
fillCosts();

// Handlers are attached: tests (and anything waiting on the page) can act.
document.body.dataset.ready = "true";
