// @ts-check
// API tokens page: create a token (its text is shown once), list mine, revoke one. All over the REST API.
import { api, clear, el } from "./api.js";
import { confirmAction } from "./dialogs.js";

const rows = document.getElementById("token-rows");

function fail(error) {
  document.getElementById("tokens-error").textContent = error.message;
}

function day(iso) {
  return iso ? new Date(iso).toLocaleString() : "never";
}

async function load() {
  try {
    const { body } = await api("GET", "/api/tokens/");
    clear(rows);
    document.getElementById("tokens-empty").hidden = body.results.length > 0;
    for (const token of body.results) {
      const revoke = el("button", {
        type: "button",
        class: "danger",
        text: "Revoke",
        onclick: async () => {
          const ok = await confirmAction({ title: `Revoke token ${token.id}…?`, text: "Anything using it stops working at once.", confirm: "Revoke" });
          if (ok) api("DELETE", `/api/tokens/${encodeURIComponent(token.id)}/`).then(load).catch(fail);
        },
      });
      rows.appendChild(
        el("tr", { dataset: { token: token.id } }, el("td", {}, el("code", { text: `${token.id}…` })), el("td", { text: token.name || "—" }), el("td", { text: day(token.created) }), el("td", { text: day(token.expiry) }), el("td", {}, revoke)),
      );
    }
    document.body.dataset.ready = "true";
  } catch (error) {
    fail(error);
  }
}

document.getElementById("token-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const form = /** @type {HTMLFormElement} */ (event.target);
  try {
    const { body } = await api("POST", "/api/tokens/", { name: (/** @type {any} */ (form.elements)).name.value.trim() /* a named control */ });
    document.getElementById("new-token-text").textContent = body.token;
    document.getElementById("new-token").hidden = false;
    form.reset();
    load();
  } catch (error) {
    fail(error);
  }
});

document.getElementById("copy-token").addEventListener("click", () => {
  navigator.clipboard?.writeText(document.getElementById("new-token-text").textContent).catch(() => {});
});

load();
