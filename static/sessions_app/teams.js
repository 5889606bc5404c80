// Teams in the app: create a team, invite by username with a role, change roles, remove members, and
// answer invitations. Everything goes through the REST API.
import { api, clear, el } from "./api.js";
import { ask, confirmAction } from "./dialogs.js";
import { money } from "../costs/money.js";

const box = document.getElementById("teams");
const me = document.querySelector(".topbar .who")?.textContent.trim();
const ROLES = ["viewer", "editor", "owner"];

function fail(error) {
  document.getElementById("teams-error").textContent = error.message;
}

function say(text) {
  document.getElementById("teams-error").textContent = "";
  const note = document.getElementById("teams-note") || el("p", { id: "teams-note", class: "muted", role: "status" });
  note.textContent = text;
  box.before(note);
}

function teamCard(team) {
  const owner = team.role === "owner";
  const rows = team.members.map((member) => {
    const role = owner
      ? el("select", { "aria-label": `Role of ${member.username}`, class: "member-role" }, ...ROLES.map((r) => el("option", { value: r, text: r, selected: r === member.role })))
      : el("span", { class: "tag", text: member.role });
    if (owner) {
      role.addEventListener("change", async () => {
        try {
          await api("PATCH", `/api/teams/${team.id}/members/${encodeURIComponent(member.username)}/`, { role: role.value });
          say(`${member.username} is now ${role.value} in ${team.name}.`);
        } catch (error) {
          role.value = member.role;
          fail(error);
        }
      });
    }
    const remove = owner
      ? el("button", {
          type: "button",
          class: "danger remove-member",
          text: member.username === me ? "Leave" : "Remove",
          onclick: async () => {
            const ok = await confirmAction({ title: `Remove ${member.username} from ${team.name}?`, text: "They lose access to the sessions shared with this team at once.", confirm: "Remove" });
            if (!ok) return;
            api("DELETE", `/api/teams/${team.id}/members/${encodeURIComponent(member.username)}/`).then(load).catch(fail);
          },
        })
      : null;
    return el("tr", { dataset: { member: member.username } }, el("td", { text: member.username }), el("td", {}, role), el("td", {}, remove));
  });
  const invite = owner ? el("button", { type: "button", class: "invite-button", text: "Invite…" }) : null;
  if (invite) {
    invite.addEventListener("click", async () => {
      const form = await ask("invite-dialog");
      if (!form) return;
      const username = form.elements.username.value.trim();
      try {
        const { status } = await api("POST", `/api/teams/${team.id}/members/`, { username, role: form.elements.role.value });
        say(status === 202 ? `Invitation sent to ${username}: they join once they accept.` : `${username} was added to ${team.name}.`);
        load();
      } catch (error) {
        fail(error);
      }
    });
  }
  // A team's usage is that of the sessions shared with it; its owners see it.
  const usage = owner ? el("p", { class: "team-usage muted small", text: "Usage of the shared sessions: …" }) : null;
  if (usage) showTeamUsage(team, usage);
  return el(
    "section",
    { class: "card team", dataset: { team: String(team.id) } },
    el("div", { class: "toolbar" }, el("h2", { text: team.name }), el("span", { class: "tag", text: `you: ${team.role || "member"}` }), el("span", { class: "spacer" }), invite),
    usage,
    el("div", { class: "table-wrap" }, el("table", { class: "plain" }, el("thead", {}, el("tr", {}, el("th", { text: "Member" }), el("th", { text: "Role" }), el("th", {}, el("span", { class: "visually-hidden", text: "Actions" })))), el("tbody", {}, ...rows))),
  );
}

async function loadInvitations() {
  let answer;
  try {
    answer = await api("GET", "/api/invitations/");
  } catch (_) {
    return; // a server without invitations adds members directly
  }
  const list = document.getElementById("invitation-list");
  clear(list);
  const items = answer.body.results || answer.body || [];
  document.getElementById("invitations").hidden = !items.length;
  for (const invite of items) {
    const act = (what) => () => api("POST", `/api/invitations/${invite.id}/${what}/`).then(() => load()).catch(fail);
    list.appendChild(
      el(
        "li",
        { dataset: { invitation: String(invite.id) } },
        el("span", { text: `${invite.team || invite.teamName || "A team"} · as ${invite.role}${invite.invitedBy ? ` · from ${invite.invitedBy}` : ""}` }),
        el("button", { type: "button", class: "primary", text: "Accept", onclick: act("accept") }),
        el("button", { type: "button", text: "Decline", onclick: act("decline") }),
      ),
    );
  }
}

async function showTeamUsage(team, line) {
  try {
    const { body } = await api("GET", `/api/teams/${team.id}/usage/`);
    const t = body.totals;
    line.textContent = `Usage of the ${body.sessions.toLocaleString()} shared sessions: ${money(t.cost)} · ${t.tokens.toLocaleString()} tokens · `;
    line.appendChild(el("a", { href: "/usage/", text: "details" }));
  } catch {
    line.textContent = "";
  }
}

async function load() {
  try {
    const { body } = await api("GET", "/api/teams/");
    const teams = body.results || body;
    clear(box);
    if (!teams.length) box.appendChild(el("p", { class: "empty", text: "You are in no team yet. Create one to share sessions with people." }));
    teams.forEach((team) => box.appendChild(teamCard(team)));
    await loadInvitations();
    document.body.dataset.ready = "true";
  } catch (error) {
    fail(error);
  }
}

document.getElementById("new-team-button").addEventListener("click", async () => {
  const form = await ask("team-dialog");
  if (!form) return;
  try {
    await api("POST", "/api/teams/", { name: form.elements.name.value.trim() });
    say(`Team “${form.elements.name.value.trim()}” created: you are its owner.`);
    load();
  } catch (error) {
    fail(error);
  }
});

load();
