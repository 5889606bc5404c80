// The session list: create an empty session and open it.
"use strict";

(function (Pi) {
  document.getElementById("new-session-button").addEventListener("click", async () => {
    const form = await Pi.ask("new-session-dialog");
    if (!form) return;
    const body = { name: form.elements.name.value.trim(), cwd: form.elements.cwd.value.trim() };
    try {
      const { body: session } = await Pi.api("POST", "/api/sessions/", body);
      location.href = `/sessions/${session.id}/`;
    } catch (error) {
      alert(error.message);
    }
  });
})(window.Pi);
