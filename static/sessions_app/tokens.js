// @ts-check
// API tokens page: create a token (its text is shown once), list mine, revoke one. All over the REST API.
import { api, clear, el } from "./api.js";
import { confirmAction } from "./dialogs.js";

// The template always has these elements.
const rows = /** @type {HTMLElement} */ (document.getElementById("token-rows"));
const errorLine = /** @type {HTMLElement} */ (document.getElementById("tokens-error"));
const empty = /** @type {HTMLElement} */ (document.getElementById("tokens-empty"));
const newToken = /** @type {HTMLElement} */ (document.getElementById("new-token"));
const newTokenText = /** @type {HTMLElement} */ (document.getElementById("new-token-text"));

function fail(error) {
  errorLine.textContent = error.message;
}

function day(iso) {
  return iso ? new Date(iso).toLocaleString() : "never";
}

async function load() {
  try {
    const { body } = await api("GET", "/api/tokens/");
    clear(rows);
    empty.hidden = body.results.length > 0;
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

/** @type {HTMLFormElement} */ (document.getElementById("token-form")).addEventListener("submit", async (event) => {
  event.preventDefault();
  const form = /** @type {Piweb.NamedForm} */ (event.target);
  try {
    const { body } = await api("POST", "/api/tokens/", { name: form.elements.name.value.trim() });
    newTokenText.textContent = body.token;
    newToken.hidden = false;
    form.reset();
    load();
  } catch (error) {
    fail(error);
  }
});

/** @type {HTMLElement} */ (document.getElementById("copy-token")).addEventListener("click", () => {
  navigator.clipboard?.writeText(newTokenText.textContent).catch(() => {});
});

load();
