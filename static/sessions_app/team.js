// @ts-check
// One team's page: the sessions shared with the team, searched by name, folder, file or owner.
import { api, clear, el, query } from "./api.js";

// The template always has these elements.
const teamId = /** @type {HTMLElement} */ (document.getElementById("team-name")).dataset.team;
const rows = /** @type {HTMLElement} */ (document.getElementById("team-session-rows"));
const form = /** @type {Piweb.NamedForm} */ (document.getElementById("team-search"));

async function load() {
  const q = form.elements.q.value.trim();
  try {
    const { body } = await api("GET", `/api/teams/${teamId}/sessions/${query({ q })}`);
    clear(rows);
    const empty = /** @type {HTMLElement} */ (document.getElementById("team-sessions-empty"));
    empty.hidden = body.results.length > 0;
    empty.textContent = q ? `No session of this team matches “${q}”.` : "No session is shared with this team yet.";
    for (const session of body.results) {
      rows.appendChild(
        el(
          "tr",
          { dataset: { session: String(session.id) } },
          el("td", {}, el("a", { href: `/sessions/${session.id}/`, text: session.title || session.name || session.sourceFilename || `Session ${session.id}` })),
          el("td", { text: session.owner }),
          el("td", {}, el("code", { text: session.cwd })),
          el("td", { text: session.access === "editor" ? "edit" : "read" }),
          el("td", { text: String(session.messageCount) }),
          el("td", { text: new Date(session.updatedAt).toLocaleString() }),
        ),
      );
    }
    document.body.dataset.ready = "true";
  } catch (error) {
    /** @type {HTMLElement} */ (document.getElementById("team-error")).textContent = error.message;
  }
}

form.addEventListener("submit", (event) => {
  event.preventDefault();
  const q = form.elements.q.value.trim();
  history.replaceState(null, "", q ? `?q=${encodeURIComponent(q)}` : location.pathname);
  load();
});
form.elements.q.value = new URLSearchParams(location.search).get("q") || "";
load();
