// The session list: create an empty session and open it.
import { api } from "./api.js";
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

// Handlers are attached: tests (and anything waiting on the page) can act.
document.body.dataset.ready = "true";
