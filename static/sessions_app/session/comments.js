// @ts-check
// Comments on entries: a badge on each commented row of the tree, the "Open threads" filter, and the
// selected entry's threads under its card (reply, edit, delete, resolve, reopen, @mention), folded into
// one control until opened so the branch keeps its room for reading.
// Counts are asked for only for the rows drawn, and threads only for the entry selected, so a session
// with many comments opens as fast as one without. Changes arrive over the session socket as hints;
// the counts and threads are then read again over HTTP.
import { api, clear, el, query } from "../api.js";
import { plural } from "../format.js";
import { icon } from "../icons.js";
import { html } from "../render.js";
import { $, base, cfg, hooks, showError, state } from "./page.js";

const url = `${base}/comments/`;
const COUNTS_BATCH = 500; // ids per counts request
const counts = new Map(); // entry id → {comments, open}; {comments: 0} once asked and found empty
const asked = new Set();
let pending = new Set();
let timer = null;
let openEntries = null; // entry ids with an open thread, while the "Open threads" filter is on
let canComment = false;
let tree = null;
let shownFor = null;
let threadsOpen = false; // stays as the reader left it from one entry to the next

function countFor(id) {
  if (!counts.has(id) && !asked.has(id)) want([id]);
  return counts.get(id);
}

function want(ids) {
  ids.forEach((id) => pending.add(id));
  if (!timer) timer = setTimeout(fetchCounts, 30);
}

async function fetchCounts() {
  timer = null;
  const ids = [...pending].slice(0, COUNTS_BATCH);
  pending = new Set([...pending].slice(COUNTS_BATCH));
  ids.forEach((id) => asked.add(id));
  try {
    const { body } = await api("GET", url + query({ entries: ids.join(",") }));
    canComment = body.canComment;
    ids.forEach((id) => counts.set(id, body.counts[id] || { comments: 0, open: 0 }));
    tree.render();
  } catch (error) {
    ids.forEach((id) => asked.delete(id)); // asked again at the next drawing
  }
  if (pending.size) timer = setTimeout(fetchCounts, 30);
}

function badge(row) {
  if (row.kind !== "node") return null;
  const count = countFor(row.id);
  if (!count || !count.comments) return null;
  const open = count.open > 0;
  return el(
    "span",
    {
      class: `badge comments${open ? " open" : ""}`,
      title: open ? `${plural(count.comments, "comment")}, ${plural(count.open, "open thread")}` : `${plural(count.comments, "comment")}, all resolved`,
      dataset: { comments: String(count.comments), open: String(count.open) },
    },
    icon("comment"),
    ` ${count.comments}`,
  );
}

async function refreshCount(entryId) {
  const { body } = await api("GET", url + query({ entries: entryId }));
  counts.set(entryId, body.counts[entryId] || { comments: 0, open: 0 });
  if (openEntries) {
    if (body.counts[entryId] && body.counts[entryId].open) openEntries.add(entryId);
    else openEntries.delete(entryId);
    tree.rebuild();
  } else tree.render();
}

async function loadOpen() {
  const { body } = await api("GET", url + query({ open: "true" }));
  openEntries = new Set(Object.keys(body.counts));
  for (const [id, count] of Object.entries(body.counts)) counts.set(id, count);
}

// -- the selected entry's threads ------------------------------------------------------------------------

async function showThreads(entryId) {
  shownFor = entryId;
  const section = $("comments");
  section.hidden = false;
  let body;
  try {
    ({ body } = await api("GET", url + query({ entryId })));
  } catch (error) {
    if (shownFor === entryId) section.hidden = true; // an entry outside this viewer's scope
    return;
  }
  if (shownFor !== entryId) return;
  canComment = body.canComment;
  const box = clear($("comment-threads"));
  for (const thread of body.threads) box.appendChild(drawThread(thread));
  $("comment-form").hidden = !canComment;
  const toggle = $("comments-toggle");
  /** @type {Element} */ (toggle.querySelector(".comments-count")).textContent = body.threads.length ? `Comments (${plural(body.threads.length, "thread")})` : "Comment";
  // A link holder has nothing to see under an empty heading; a signed-in reader who may not comment is
  // told why instead of finding no box.
  section.hidden = cfg.readOnly && !body.threads.length;
  let refused = document.getElementById("comment-refused");
  if (!canComment && !cfg.readOnly) {
    if (!refused) {
      refused = el("p", { id: "comment-refused", class: "muted small", text: "Only the owner and editors comment on this session: its team has turned viewers' comments off." });
      $("comment-form").after(refused);
    }
  } else if (refused) refused.remove();
  const total = body.threads.reduce((n, t) => n + (t.deleted ? 0 : 1) + t.replies.filter((r) => !r.deleted).length, 0);
  const open = body.threads.filter((t) => !t.resolved && !t.deleted).length;
  counts.set(entryId, { comments: total, open });
  toggle.classList.toggle("has-open", open > 0);
  tree.render();
}

/** @param {boolean} open */
function openThreads(open, { focus = false } = {}) {
  threadsOpen = open;
  const section = $("comments");
  $("comments-toggle").setAttribute("aria-expanded", String(open));
  $("comments-body").hidden = !open;
  section.classList.toggle("open", open);
  if (!open) return;
  section.scrollIntoView({ block: "nearest" });
  // Opened to write the first comment: the box is ready. With threads to read, reading comes first.
  if (focus && !$("comment-form").hidden && !$("comment-threads").childElementCount) $("comment-text").focus();
}

function drawComment(comment) {
  const head = el(
    "div",
    { class: "comment-head small" },
    el("strong", { text: comment.author || "someone" }),
    " ",
    el("time", { class: "muted", datetime: comment.createdAt, text: new Date(comment.createdAt).toLocaleString() }),
    comment.editedAt ? el("span", { class: "muted", text: " · edited" }) : null,
  );
  const node = el("div", { class: "comment", dataset: { id: String(comment.id) } }, head);
  if (comment.deleted) {
    node.classList.add("deleted");
    node.appendChild(el("p", { class: "muted small", text: "This comment was deleted." }));
    return node;
  }
  node.appendChild(html(comment.html, "md comment-body"));
  if (comment.mine && !cfg.shareToken) {
    node.appendChild(
      el(
        "div",
        { class: "comment-actions" },
        el("button", { type: "button", class: "link small", text: "Edit", onclick: () => editComment(node, comment) }),
        el("button", { type: "button", class: "link small", text: "Delete", onclick: () => deleteComment(comment) }),
      ),
    );
  }
  return node;
}

function drawThread(thread) {
  const box = el("article", { class: `thread${thread.resolved ? " resolved" : ""}`, dataset: { thread: String(thread.id) } });
  box.appendChild(drawComment(thread));
  for (const reply of thread.replies) box.appendChild(drawComment(reply));
  const signedIn = !cfg.shareToken;
  const bar = el("div", { class: "thread-actions small" });
  if (thread.resolved) bar.appendChild(el("span", { class: "muted", text: `Resolved by ${thread.resolvedBy || "someone"} ` }));
  if (signedIn) {
    bar.appendChild(
      el("button", {
        type: "button",
        class: "link small",
        text: thread.resolved ? "Reopen" : "Resolve",
        onclick: () => setResolved(thread.id, !thread.resolved),
      }),
    );
  }
  if (signedIn && canComment) {
    bar.appendChild(el("button", { type: "button", class: "link small", text: "Reply", onclick: () => openReply(box, thread) }));
  }
  box.appendChild(bar);
  return box;
}

function openReply(box, thread) {
  if (box.querySelector("form")) return;
  const text = /** @type {HTMLTextAreaElement} */ (el("textarea", { rows: 2, "aria-label": "Reply", placeholder: "Reply…" }));
  const form = /** @type {HTMLFormElement} */ (el("form", { class: "reply-form" }, text, el("button", { type: "submit", text: "Reply" })));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    if (await send({ entryId: thread.entryId, body: text.value, parentId: thread.id }, form)) form.remove();
  });
  attachMentions(text);
  box.appendChild(form);
  text.focus();
}

function editComment(node, comment) {
  const text = /** @type {HTMLTextAreaElement} */ (el("textarea", { rows: 2, "aria-label": "Edit the comment" }));
  text.value = comment.body;
  const form = /** @type {HTMLFormElement} */ (
    el(
      "form",
      { class: "reply-form" },
      text,
      el("button", { type: "submit", text: "Save" }),
      el("button", { type: "button", class: "link", text: "Cancel", onclick: () => showThreads(shownFor) }),
    )
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      await api("PATCH", `/api/comments/${comment.id}/`, { body: text.value });
      await showThreads(shownFor);
    } catch (error) {
      noteError(error, form);
    }
  });
  attachMentions(text);
  node.replaceChildren(form);
  text.focus();
}

async function deleteComment(comment) {
  try {
    await api("DELETE", `/api/comments/${comment.id}/`);
    await showThreads(shownFor);
  } catch (error) {
    showError(error.message);
  }
}

async function setResolved(threadId, resolved) {
  try {
    await api("PATCH", `/api/comments/${threadId}/`, { resolved });
    await showThreads(shownFor);
    await refreshCount(shownFor);
  } catch (error) {
    showError(error.message);
  }
}

function noteError(error, form) {
  const message = (error.body && error.body.error) || error.message;
  let note = form.querySelector(".comment-error");
  if (!note) {
    note = el("p", { class: "comment-error small", role: "alert" });
    form.appendChild(note);
  }
  note.textContent = message;
}

async function send(body, form) {
  try {
    await api("POST", url, body);
    await showThreads(body.entryId);
    return true;
  } catch (error) {
    noteError(error, form);
    return false;
  }
}

// -- @mention autocomplete: the people who can read this session ----------------------------------------

let people = null;

async function peopleLike(prefix) {
  if (people === null) {
    const { body } = await api("GET", `${url}people/`);
    people = body;
  }
  const lower = prefix.toLowerCase();
  return people.filter((p) => p.username.toLowerCase().startsWith(lower)).slice(0, 8);
}

function attachMentions(textarea) {
  const list = $("mention-list");
  const typed = () => {
    const before = textarea.value.slice(0, textarea.selectionStart);
    const match = /(?:^|[\s(])@([\w.+-]*)$/.exec(before);
    return match ? match[1] : null;
  };
  const close = () => {
    list.hidden = true;
    clear(list);
  };
  const choose = (username) => {
    const at = textarea.selectionStart;
    const before = textarea.value.slice(0, at).replace(/@([\w.+-]*)$/, `@${username} `);
    textarea.value = before + textarea.value.slice(at);
    textarea.setSelectionRange(before.length, before.length);
    close();
    textarea.focus();
  };
  textarea.addEventListener("input", async () => {
    const prefix = typed();
    if (prefix === null || cfg.shareToken) return close();
    const found = await peopleLike(prefix).catch(() => []);
    clear(list);
    for (const person of found) {
      list.appendChild(
        el("li", {
          role: "option",
          class: "mention-option",
          text: person.name ? `@${person.username} — ${person.name}` : `@${person.username}`,
          dataset: { username: person.username },
          onmousedown: (event) => {
            event.preventDefault();
            choose(person.username);
          },
        }),
      );
    }
    textarea.after(list);
    list.hidden = !found.length;
  });
  textarea.addEventListener("keydown", (event) => {
    if (list.hidden) return;
    if (event.key === "Escape") close();
    if (event.key === "Tab" || event.key === "Enter") {
      const first = list.querySelector("li");
      if (first) {
        event.preventDefault();
        choose(first.dataset.username);
      }
    }
  });
  textarea.addEventListener("blur", () => setTimeout(close, 150));
}

// The session search's comment hits, listed above the tree; a click opens the entry they are on.
function showCommentHits({ query: text, body }) {
  const list = clear($("comment-hits"));
  const found = (text && body.comments) || [];
  list.hidden = !found.length;
  for (const hit of found) {
    list.appendChild(
      el(
        "li",
        {},
        el(
          "button",
          {
            type: "button",
            class: "link comment-hit",
            dataset: { entry: hit.entryId },
            onclick: () => {
              openThreads(true);
              hooks.select(hit.entryId);
            },
          },
          icon("comment"),
          ` ${hit.author}: ${hit.snippet}`,
        ),
      ),
    );
  }
}

export function initComments(treeView) {
  document.addEventListener("piweb:search", (event) => showCommentHits(event.detail));
  tree = treeView;
  tree.decorators.push(badge);
  const toggle = $("comments-toggle");
  toggle.replaceChildren(icon("comment"), el("span", { class: "comments-count", text: "Comment" }));
  toggle.addEventListener("click", () => openThreads(!threadsOpen, { focus: true }));
  tree.filters.set("open-threads", (node) => Boolean(openEntries && openEntries.has(node.id)));
  $("tree-filter").addEventListener("change", async (event) => {
    if (/** @type {HTMLSelectElement} */ (event.target).value !== "open-threads") {
      openEntries = null;
      return;
    }
    try {
      await loadOpen();
      tree.rebuild();
    } catch (error) {
      showError(error.message);
    }
  });
  const form = /** @type {HTMLFormElement} */ ($("comment-form"));
  const text = /** @type {HTMLTextAreaElement} */ ($("comment-text"));
  attachMentions(text);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    if (!shownFor) return;
    /** @type {HTMLButtonElement} */ ($("comment-send")).disabled = true;
    if (await send({ entryId: shownFor, body: text.value }, form)) {
      text.value = "";
      const stale = form.querySelector(".comment-error");
      if (stale) stale.remove();
    }
    /** @type {HTMLButtonElement} */ ($("comment-send")).disabled = false;
  });
  text.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) form.requestSubmit();
  });
  document.addEventListener("piweb:selected", (event) => {
    const { id } = event.detail;
    // The branch answers the click first, then the context; the threads follow where the selection stays.
    Promise.resolve()
      .then(() => state.contextLoaded)
      .then(() => (state.selectedId === id ? showThreads(id) : null))
      .catch((error) => showError(error.message));
  });
  document.addEventListener("piweb:socket", (event) => {
    const message = event.detail;
    if (message.type !== "event" || message.event !== "comment") return;
    refreshCount(message.entryId).catch(() => {});
    if (message.entryId === shownFor || message.entryId === state.selectedId) showThreads(message.entryId).catch(() => {});
  });
}
