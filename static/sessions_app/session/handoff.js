// @ts-check
// "Hand over…": give the session to a teammate who may change it, with a note. They hear of it in their
// inbox and by mail (a mention on the current entry, which the team sees in the discussion too).
import { api, clear, el } from "../api.js";
import { ask } from "../dialogs.js";
import { $, base, showError } from "./page.js";

export function initHandoff() {
  const button = $("handoff-button");
  if (!button) return;
  button.addEventListener("click", async () => {
    let people = [];
    try {
      const { body } = await api("GET", `${base}/handoff/`);
      people = body.results || [];
    } catch (error) {
      showError(error.message);
      return;
    }
    if (!people.length) {
      showError("Nobody else may change this session yet: share it with a teammate for editing first.");
      return;
    }
    const form = await ask("handoff-dialog", (blank) => {
      const picker = /** @type {HTMLSelectElement} */ (/** @type {unknown} */ (blank.elements.to));
      clear(picker);
      for (const person of people) {
        const label = person.name ? `${person.name} (${person.username})` : person.username;
        picker.appendChild(el("option", { value: String(person.id), text: label }));
      }
    });
    if (!form) return;
    try {
      await api("POST", `${base}/handoff/`, {
        userId: Number(form.elements.to.value),
        note: String(form.elements.note.value || ""),
      });
      const chosen = people.find((p) => String(p.id) === form.elements.to.value);
      button.textContent = `Handed to ${chosen ? chosen.username : "a teammate"}`;
    } catch (error) {
      showError(error.message);
    }
  });
}
