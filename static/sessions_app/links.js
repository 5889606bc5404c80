// @ts-check
// The "My links" page: revoke after a confirmation (addresses are shown only when a link is created).
import { api, clear, el } from "./api.js";
import { confirmAction } from "./dialogs.js";

/** @type {NodeListOf<HTMLButtonElement>} */ (document.querySelectorAll(".revoke-link")).forEach((button) => {
  button.addEventListener("click", async () => {
    const ok = await confirmAction({
      title: "Revoke this link?",
      text: "Everyone who has it loses access at once, including pages already open.",
      confirm: "Revoke",
    });
    if (!ok) return;
    // Each button sits in a cell of its link's row, which has a state cell.
    const row = /** @type {HTMLTableRowElement} */ (button.closest("tr"));
    const cell = /** @type {HTMLTableCellElement} */ (button.closest("td"));
    try {
      await api("DELETE", `/api/links/${button.dataset.linkId}/`);
      row.dataset.state = "revoked";
      /** @type {Element} */ (row.querySelector(".state")).textContent = "revoked";
      cell.textContent = "revoked just now";
    } catch (error) {
      cell.append(` ${error.message}`);
    }
  });
});

// Who opened each link, when and how often (one line per viewer and day), asked for on demand.
/** @type {NodeListOf<HTMLButtonElement>} */ (document.querySelectorAll(".show-views")).forEach((button) => {
  button.addEventListener("click", async () => {
    const box = /** @type {HTMLElement} */ (button.nextElementSibling);
    try {
      const { body } = await api("GET", `/api/links/${button.dataset.linkId}/views/`);
      clear(box);
      box.append(el("div", { text: body.opens === 1 ? "Opened once" : `Opened ${body.opens.toLocaleString()} times` }));
      for (const view of body.views) {
        const who = view.viewer || "anonymous";
        const when = new Date(view.lastAt).toLocaleString();
        box.append(el("div", { class: "muted", text: `${view.day} · ${who} · ${view.count}× (last ${when})` }));
      }
      box.hidden = false;
    } catch (error) {
      box.textContent = error.message;
      box.hidden = false;
    }
  });
});

// Handlers are attached: tests (and anything waiting on the page) can act.
document.body.dataset.ready = "true";
