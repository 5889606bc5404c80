// @ts-check
// Teams in the app: create a team, invite by username with a role, change roles, remove members, and
// answer invitations. Everything goes through the REST API.
import { api, clear, el } from "./api.js";
import { ask, confirmAction } from "./dialogs.js";
import { money } from "../costs/money.js";

// The teams page always has these elements.
const box = /** @type {HTMLElement} */ (document.getElementById("teams"));
const errorLine = /** @type {HTMLElement} */ (document.getElementById("teams-error"));
const me = document.querySelector(".topbar .who")?.textContent.trim();
const ROLES = ["viewer", "editor", "owner"];

function fail(error) {
  errorLine.textContent = error.message;
}

function say(text) {
  errorLine.textContent = "";
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
      const select = /** @type {HTMLSelectElement} */ (role);
      select.addEventListener("change", async () => {
        try {
          await api("PATCH", `/api/teams/${team.id}/members/${encodeURIComponent(member.username)}/`, { role: select.value });
          say(`${member.username} is now ${select.value} in ${team.name}.`);
        } catch (error) {
          select.value = member.role;
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
    el("div", { class: "toolbar" }, el("h2", {}, el("a", { href: `/teams/${team.id}/`, text: team.name })), el("span", { class: "tag", text: `you: ${team.role || "member"}` }), team.managedByProvider ? el("span", { class: "tag", title: "Members join and leave with the identity provider's groups", text: "SSO groups" }) : null, el("span", { class: "spacer" }), invite),
    usage,
    el("div", { class: "table-wrap" }, el("table", { class: "plain" }, el("thead", {}, el("tr", {}, el("th", { text: "Member" }), el("th", { text: "Role" }), el("th", {}, el("span", { class: "visually-hidden", text: "Actions" })))), el("tbody", {}, ...rows))),
    owner ? defaultShareControl(team) : el("p", { class: "small muted", text: team.defaultShare ? `Members' new imported and synced sessions are shared with the team (${team.defaultShare}); unshare one on its page to keep it private.` : "" }),
    owner ? pendingList(team) : null,
  );
}

// "Platform · as viewer · from demo": the team is an object {id, name} in the API's answer.
function invitationText(invite) {
  const team = invite.team && typeof invite.team === "object" ? invite.team.name : invite.team;
  return `${team || "A team"} · as ${invite.role}${invite.invitedBy ? ` · from ${invite.invitedBy}` : ""}`;
}

// Owners: the invitations nobody has answered yet, each with Withdraw.
function pendingList(team) {
  const list = el("ul", { class: "plain-list pending-invitations", "aria-label": `Pending invitations of ${team.name}` });
  const section = el("div", { class: "pending", hidden: true }, el("h3", { text: "Pending invitations" }), list);
  api("GET", `/api/teams/${team.id}/invitations/`)
    .then(({ body }) => {
      section.hidden = !body.results.length;
      for (const invite of body.results) {
        const withdraw = el("button", {
          type: "button",
          class: "danger",
          text: "Withdraw",
          onclick: () =>
            api("DELETE", `/api/teams/${team.id}/invitations/${invite.id}/`)
              .then(() => {
                say(`Invitation of ${invite.username} to ${team.name} withdrawn.`);
                load();
              })
              .catch(fail),
        });
        list.appendChild(el("li", { dataset: { invitation: String(invite.id) } }, el("span", { text: `${invite.username} · as ${invite.role}${invite.invitedBy ? ` · by ${invite.invitedBy}` : ""}` }), withdraw));
      }
    })
    .catch(fail);
  return section;
}

// Owners: share members' new imported and synced sessions with the team by default.
function defaultShareControl(team) {
  const select = el(
    "select",
    { "aria-label": `Default sharing of ${team.name}`, class: "default-share" },
    el("option", { value: "", text: "not shared", selected: !team.defaultShare }),
    el("option", { value: "viewer", text: "shared, team can read", selected: team.defaultShare === "viewer" }),
    el("option", { value: "editor", text: "shared, team can edit", selected: team.defaultShare === "editor" }),
  );
  select.addEventListener("change", async () => {
    try {
      await api("PATCH", `/api/teams/${team.id}/`, { defaultShare: select.value || null });
      say(select.value ? `Members' new imported and synced sessions are now shared with ${team.name} (${select.value}).` : `New sessions are no longer shared with ${team.name} by default.`);
    } catch (error) {
      select.value = team.defaultShare || "";
      fail(error);
    }
  });
  return el("p", { class: "small" }, el("label", {}, "Members' new imported and synced sessions: ", select));
}

async function loadInvitations() {
  let answer;
  try {
    answer = await api("GET", "/api/invitations/");
  } catch (_) {
    return; // a server without invitations adds members directly
  }
  const list = /** @type {HTMLElement} */ (document.getElementById("invitation-list"));
  clear(list);
  const items = answer.body.results || answer.body || [];
  /** @type {HTMLElement} */ (document.getElementById("invitations")).hidden = !items.length;
  for (const invite of items) {
    const act = (what) => () => api("POST", `/api/invitations/${invite.id}/${what}/`).then(() => load()).catch(fail);
    list.appendChild(
      el(
        "li",
        { dataset: { invitation: String(invite.id) } },
        el("span", { class: "invitation-text", text: invitationText(invite) }),
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

/** @type {HTMLElement} */ (document.getElementById("new-team-button")).addEventListener("click", async () => {
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
