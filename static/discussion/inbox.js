// @ts-check
// The inbox page: comments that mention me or answer my threads, and reviews, newest first; opening one marks it
// read; the email choice (all, mentions only, none) is kept per user.
import { api, clear, el } from "../sessions_app/api.js";

// The template always has these elements.
const list = /** @type {HTMLElement} */ (document.getElementById("inbox-items"));
const choice = /** @type {HTMLSelectElement} */ (document.getElementById("email-choice"));
const note = /** @type {HTMLElement} */ (document.getElementById("inbox-note"));

function announce(unread) {
  document.dispatchEvent(new CustomEvent("piweb:inbox", { detail: { unread } }));
}

async function markRead(body) {
  const { body: answer } = await api("POST", "/api/inbox/read/", body);
  announce(answer.unread);
}

const WHAT = { mention: "mentioned you on ", reply: "replied in your thread on " };

function item(line) {
  const anchor = line.entryId ? `#entry=${encodeURIComponent(line.entryId)}` : "";
  const href = `/sessions/${line.sessionId}/${anchor}`;
  // A line that is not a comment (a review) carries its own words: its snippet says what happened.
  const own = !(line.kind in WHAT);
  const what = own ? `${line.snippet} on ` : WHAT[line.kind];
  return el(
    "li",
    { class: `inbox-item${line.read ? "" : " unread"}`, dataset: { id: String(line.id), kind: line.kind } },
    el(
      "a",
      {
        href,
        onclick: () => {
          if (!line.read) markRead({ ids: [line.id] }).catch(() => {});
        },
      },
      el("strong", { text: line.author }),
      ` ${what}`,
      el("em", { text: line.sessionName }),
    ),
    own ? "" : el("p", { class: "small", text: line.snippet }),
    el("time", { class: "muted small", datetime: line.createdAt, text: new Date(line.createdAt).toLocaleString() }),
  );
}

async function load() {
  const { body } = await api("GET", "/api/inbox/");
  clear(list);
  if (!body.items.length) list.appendChild(el("li", { class: "muted", text: "Nothing yet." }));
  body.items.forEach((line) => list.appendChild(item(line)));
  choice.value = body.email;
  announce(body.unread);
}

/** @type {HTMLElement} */ (document.getElementById("mark-all-read")).addEventListener("click", async () => {
  await markRead({ all: true });
  await load();
});
choice.addEventListener("change", async () => {
  try {
    await api("PUT", "/api/inbox/settings/", { email: choice.value });
    note.textContent = "Saved.";
  } catch (error) {
    note.textContent = error.message;
  }
});
load().catch((error) => (note.textContent = error.message));
