// @ts-check
// The unread count beside "Inbox" in the header. A session page's socket brings changes as they happen;
// other pages ask again now and then. The page itself comes with the count.
import { api } from "../sessions_app/api.js";

const POLL_MS = 60000;
const link = document.getElementById("inbox-link");
const count = document.getElementById("inbox-count");

function show(unread) {
  // Runs only where the header has the link (below); checked here too for the type checker.
  if (!link || !count || typeof unread !== "number") return;
  count.textContent = String(unread);
  count.hidden = unread === 0;
  link.dataset.unread = String(unread);
  link.setAttribute("aria-label", unread ? `Inbox, ${unread} unread` : "Inbox");
}

async function refresh() {
  try {
    const { body } = await api("GET", "/api/inbox/");
    show(body.unread);
  } catch (_) {
    // signed out or offline: the count stays as it was
  }
}

if (link) {
  // The page came with the count (data-unread); the first poll is a minute away like the next ones.
  let live = false;
  document.addEventListener("piweb:socket", (event) => {
    live = true;
    if (event.detail.type === "inbox") show(event.detail.unread);
  });
  document.addEventListener("piweb:inbox", (event) => show(event.detail.unread));
  setInterval(() => live || refresh(), POLL_MS);
}
