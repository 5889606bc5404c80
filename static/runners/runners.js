// @ts-check
// Runners page: register one (its token shown once, inside the commands that start it), list the runners
// I may use with their state, revoke mine.
import { api, clear, el } from "../sessions_app/api.js";
import { confirmAction } from "../sessions_app/dialogs.js";

const rows = /** @type {HTMLElement} */ (document.getElementById("runner-rows"));
const errorLine = /** @type {HTMLElement} */ (document.getElementById("runners-error"));
const empty = /** @type {HTMLElement} */ (document.getElementById("runners-empty"));
const fresh = /** @type {HTMLElement} */ (document.getElementById("new-runner"));
const commands = /** @type {HTMLElement} */ (document.getElementById("runner-commands"));

function fail(error) {
  errorLine.textContent = error.message;
}

async function load() {
  try {
    const { body } = await api("GET", "/api/runners/");
    clear(rows);
    empty.hidden = body.results.length > 0;
    for (const runner of body.results) {
      const revoke = el("button", {
        type: "button",
        class: "danger",
        text: "Revoke",
        onclick: async () => {
          const ok = await confirmAction({ title: `Revoke the runner ${runner.name}?`, text: "It is disconnected at once and its run in progress stops.", confirm: "Revoke" });
          if (ok) api("DELETE", `/api/runners/${runner.id}/`).then(load).catch(fail);
        },
      });
      rows.appendChild(
        el(
          "tr",
          { dataset: { runner: runner.name } },
          el("td", {}, runner.name, " ", el("code", { class: "muted", text: `${runner.tokenId}…` })),
          el("td", { text: runner.team ? `team ${runner.team.name}` : "me" }),
          el("td", {}, el("span", { class: `runner-state ${runner.online ? "online" : "offline"}`, text: runner.online ? "online" : "offline" })),
          el("td", { text: runner.workspaces.join(", ") || "—" }),
          el("td", { text: runner.piVersion || "—" }),
          el("td", { text: runner.tools.join(", ") || "—" }),
          el("td", {}, revoke),
        ),
      );
    }
    document.body.dataset.ready = "true";
  } catch (error) {
    fail(error);
  }
}

/** @type {HTMLFormElement} */ (document.getElementById("runner-form")).addEventListener("submit", async (event) => {
  event.preventDefault();
  const form = /** @type {Piweb.NamedForm} */ (event.target);
  try {
    const team = form.elements.team.value;
    const { body } = await api("POST", "/api/runners/", { name: form.elements.name.value.trim(), teamId: team ? Number(team) : null });
    commands.textContent = [
      "pipx install ./clients/piweb-sync   # once, from a piweb checkout: gives piweb-runner",
      `export PIWEB_URL=${commands.dataset.server} PIWEB_RUNNER_TOKEN=${body.token}`,
      "piweb-runner --workspace ~/src/your-project",
    ].join("\n");
    fresh.hidden = false;
    form.reset();
    load();
  } catch (error) {
    fail(error);
  }
});

/** @type {HTMLElement} */ (document.getElementById("copy-commands")).addEventListener("click", () => {
  navigator.clipboard?.writeText(commands.textContent || "").catch(() => {});
});

load();
// Runners come and go: keep their state current while the page is open.
setInterval(() => document.visibilityState === "visible" && load(), 10000);
