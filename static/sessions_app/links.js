// The "My links" page: copy with feedback, revoke after a confirmation.
"use strict";

(function (Pi) {
  document.querySelectorAll(".copy-link").forEach((button) => {
    button.addEventListener("click", () => Pi.copyText(button.dataset.url, button, button.closest("td").querySelector(".copied")));
  });
  document.querySelectorAll(".revoke-link").forEach((button) => {
    button.addEventListener("click", async () => {
      const ok = await Pi.confirmAction({
        title: "Revoke this link?",
        text: "Everyone who has it loses access at once, including pages already open.",
        confirm: "Revoke",
      });
      if (!ok) return;
      const row = button.closest("tr");
      try {
        await Pi.api("DELETE", `/api/links/${button.dataset.linkId}/`);
        row.dataset.state = "revoked";
        row.querySelector(".state").textContent = "revoked";
        row.cells[3].textContent = "revoked just now";
        button.remove();
      } catch (error) {
        row.cells[3].textContent = error.message;
      }
    });
  });
})(window.Pi);
