// @ts-check
// The tags page: create, rename, recolour and delete a team's tags (its editors and owners).
import { api } from "../sessions_app/api.js";
import { confirmAction } from "../sessions_app/dialogs.js";

const problem = /** @type {HTMLElement} */ (document.getElementById("tags-error"));

/** @param {() => Promise<unknown>} act */
async function attempt(act) {
  problem.textContent = "";
  try {
    await act();
    location.reload();
  } catch (error) {
    problem.textContent = /** @type {Error} */ (error).message;
  }
}

/** @param {Piweb.NamedForm} form */
function fields(form) {
  return {
    name: /** @type {HTMLInputElement} */ (form.elements.name).value.trim(),
    colour: /** @type {HTMLSelectElement} */ (form.elements.colour).value,
  };
}

for (const section of /** @type {NodeListOf<HTMLElement>} */ (document.querySelectorAll(".team-tags"))) {
  const team = section.dataset.team;
  const create = /** @type {Piweb.NamedForm | null} */ (section.querySelector("form.tag-create"));
  create?.addEventListener("submit", (event) => {
    event.preventDefault();
    attempt(() => api("POST", `/api/teams/${team}/tags/`, fields(create)));
  });
  for (const row of /** @type {NodeListOf<HTMLElement>} */ (section.querySelectorAll(".tag-row"))) {
    const tag = row.dataset.tag;
    const edit = /** @type {Piweb.NamedForm | null} */ (row.querySelector("form.tag-edit"));
    if (!edit) continue;
    edit.addEventListener("submit", (event) => {
      event.preventDefault();
      attempt(() => api("PATCH", `/api/tags/${tag}/`, fields(edit)));
    });
    /** @type {HTMLElement} */ (row.querySelector(".delete-tag")).addEventListener("click", async () => {
      const name = fields(edit).name;
      const sure = await confirmAction({ title: `Delete the tag ${name}?`, text: "It comes off every session; the sessions stay.", confirm: "Delete" });
      if (sure) attempt(() => api("DELETE", `/api/tags/${tag}/`));
    });
  }
}
document.body.dataset.ready = "true";
