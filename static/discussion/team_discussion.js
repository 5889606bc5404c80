// @ts-check
// On the teams page: each team's "viewers may comment" switch (owners change it, members see it).
import { api, el } from "../sessions_app/api.js";

const box = document.getElementById("teams");

async function addSwitch(card) {
  if (card.querySelector(".viewers-comment")) return;
  const team = card.dataset.team;
  const { body } = await api("GET", `/api/teams/${team}/discussion/`);
  const input = el("input", { type: "checkbox", checked: body.viewersMayComment, disabled: !body.canChange });
  const note = el("span", { class: "muted small", role: "status" });
  input.addEventListener("change", async () => {
    try {
      await api("PUT", `/api/teams/${team}/discussion/`, { viewersMayComment: input.checked });
      note.textContent = input.checked ? "Viewers may comment." : "Only owners and editors comment now.";
    } catch (error) {
      input.checked = !input.checked;
      note.textContent = error.message;
    }
  });
  card.appendChild(el("label", { class: "check viewers-comment" }, input, " Viewers may comment on sessions shared with this team ", note));
}

// Runs only where the page has the teams box (below).
function scan() {
  /** @type {HTMLElement} */ (box).querySelectorAll("section.team[data-team]").forEach((card) => addSwitch(card).catch(() => {}));
}

if (box) {
  new MutationObserver(scan).observe(box, { childList: true });
  scan();
}
