// The "My links" page: revoke after a confirmation (addresses are shown only when a link is created).
import { api } from "./api.js";
import { confirmAction } from "./dialogs.js";

document.querySelectorAll(".revoke-link").forEach((button) => {
  button.addEventListener("click", async () => {
    const ok = await confirmAction({
      title: "Revoke this link?",
      text: "Everyone who has it loses access at once, including pages already open.",
      confirm: "Revoke",
    });
    if (!ok) return;
    const row = button.closest("tr");
    try {
      await api("DELETE", `/api/links/${button.dataset.linkId}/`);
      row.dataset.state = "revoked";
      row.querySelector(".state").textContent = "revoked";
      button.closest("td").textContent = "revoked just now";
    } catch (error) {
      button.closest("td").append(` ${error.message}`);
    }
  });
});

// Handlers are attached: tests (and anything waiting on the page) can act.
document.body.dataset.ready = "true";
