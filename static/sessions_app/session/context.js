// @ts-check
// The context panel: what the model would see at the selected entry, the window gauge and its parts,
// and the messages between the first and the newest, a page at a time as the gap scrolls into view.
import { api, clear, el, query } from "../api.js";
import { tokens as shortTokens } from "../format.js";
import { renderContextMessage } from "../render.js";
import { $, CONTEXT_HEAD, CONTEXT_RENDERED, CONTEXT_STEP, CONTEXT_TAIL, NEAR, base, cfg, hooks, showError, state } from "./page.js";

const contextBox = $("context");

// The known model (configured in the admin) gives the window; otherwise the server's default.
function knownModel(model) {
  if (!model) return null;
  return (cfg.models || []).find((m) => m.modelId === model.modelId && (!model.provider || m.provider === model.provider)) || null;
}

// A new selection: the previous entry's numbers and cards go at once, and the panel says it is loading,
// so nothing on screen belongs to another entry while the request is out.
export function clearContext(id) {
  contextGap = null;
  $("context-pct").textContent = "–";
  $("context-tokens").textContent = "loading…";
  $("context-leaf").textContent = "";
  $("context-model").textContent = "";
  for (const part of ["gauge-sys", "gauge-tools", "context-gauge-fill"]) $(part).style.width = "0%";
  delete $("context-gauge").dataset.level;
  clear($("context-breakdown"));
  clear(contextBox).appendChild(el("p", { class: "muted context-loading", role: "status", text: `Loading the context at ${id}…` }));
  contextBox.setAttribute("aria-busy", "true");
}

export async function loadContext(id, token) {
  const params = { leaf: id, head: CONTEXT_HEAD, tail: CONTEXT_TAIL, llm: false, render: CONTEXT_RENDERED };
  let body;
  try {
    ({ body } = await api("GET", `${base}/context/${query(params)}`));
  } catch (e) {
    if (token === state.selectToken) {
      contextBox.removeAttribute("aria-busy");
      clear(contextBox).appendChild(el("p", { class: "error", text: `The context could not be loaded: ${e.message}` }));
      $("context-tokens").textContent = "–";
    }
    throw e;
  }
  if (token !== state.selectToken) return;
  contextBox.removeAttribute("aria-busy");
  const known = knownModel(body.model);
  state.window = known ? known.contextWindow : cfg.contextWindow;
  // The request's three parts: the system prompt and tool definitions a run sends, then the messages.
  const parts = body.breakdown;
  const tokens = parts.total;
  const fraction = tokens / state.window;
  const pct = (v) => `${Math.min(100, (v / state.window) * 100).toFixed(3)}%`;
  const share = (v) => `${((v / state.window) * 100).toFixed(v && v / state.window < 0.001 ? 2 : 1)}%`;
  $("context-pct").textContent = `${(fraction * 100).toFixed(fraction < 0.1 ? 1 : 0)}%`;
  $("context-tokens").textContent = `≈ ${tokens.toLocaleString()} tokens`;
  $("context-window-text").textContent = `${state.window.toLocaleString()}`;
  $("context-leaf").textContent = `${body.messageCount.toLocaleString()} messages`;
  $("gauge-sys").style.width = pct(parts.systemPrompt);
  $("gauge-tools").style.width = pct(parts.tools);
  $("context-gauge-fill").style.width = pct(parts.messages);
  $("context-gauge").dataset.level = fraction > 1 ? "over" : fraction > 0.8 ? "high" : "ok";
  $("context-gauge").setAttribute("aria-label", `${(fraction * 100).toFixed(1)}% of the context window used`);
  explainDrop(body.estimate && body.estimate.setAsideUsage, tokens);
  const part = (cls, label, value, title) =>
    el("span", { class: cls, title, dataset: { tokens: String(value) } }, el("i"), `${label} ${value.toLocaleString()} `, el("span", { class: "muted", text: `(${share(value)})` }));
  clear($("context-breakdown")).append(
    part("sys", "system prompt", parts.systemPrompt, "The system prompt a run sends: the session's system messages replayed into one prompt"),
    part("tools", "tools", parts.tools, "The definitions of the tools in force, sent with every request"),
    part(
      "msgs",
      "messages",
      parts.messages,
      parts.fromUsage ? "The provider's last reported input beyond the prompt and tools, plus estimates of what came after" : "Estimated from the messages' text",
    ),
  );
  const model = body.model && (body.model.provider || body.model.modelId) ? [body.model.provider, body.model.modelId].filter(Boolean).join("/") : null;
  $("context-model").textContent =
    `Model ${model || "not recorded in this session"} · thinking ${body.thinkingLevel || "off"} · window ${shortTokens(state.window)} ` +
    (known ? `(${known.name})` : "(server default: this model is not configured here)");
  clear(contextBox);
  contextGap = null;
  const cards = document.createDocumentFragment();
  body.messages.forEach((item, index) => {
    if (body.skippedMessages && index === body.skippedAfter) {
      // ``depth`` (the first message after the gap) is the cursor of the page before it, where given.
      contextGap = { id, token, head: body.skippedAfter, next: body.skippedAfter + body.skippedMessages, depth: item.depth, node: el("p", { class: "muted small context-gap" }) };
      cards.appendChild(contextGap.node);
      contextGapText();
    }
    cards.appendChild(contextCard(item));
  });
  contextBox.appendChild(cards);
  if (!body.messages.length) contextBox.appendChild(el("p", { class: "empty", text: "The model would see nothing yet." }));
}

// Why the number can fall after a failed prompt: Pi stops trusting a reported usage once a context edit
// (the omitted attempt) or a compaction follows it, and counts the messages' text instead. That estimate
// is what auto-compaction compares, so it stays the gauge's number; the last report is shown beside it.
const RESET_WHY = {
  context_edit: "a failed attempt was left out of the context after it",
  compaction: "the context was compacted after it",
};
function explainDrop(usage, tokens) {
  const note = $("context-drop");
  if (!usage || !(usage.tokens > 0)) {
    note.hidden = true;
    return;
  }
  const why = RESET_WHY[usage.resetType] || "the context changed after it";
  note.textContent =
    `Last reported by the provider: ${Math.round(usage.tokens).toLocaleString()} tokens` +
    (usage.entryId ? ` (at ${usage.entryId})` : "") +
    `. The estimate is now ${Math.round(tokens).toLocaleString()}: ${why}, so that report no longer describes ` +
    "what would be sent and the messages are counted from their text, as Pi counts them before auto-compaction.";
  note.dataset.reported = String(Math.round(usage.tokens));
  note.dataset.reset = usage.resetType || "";
  note.hidden = false;
}

function contextCard(item) {
  const node = renderContextMessage(item, state.entries.get(item.entryId));
  node.classList.add("context-item");
  node.dataset.id = item.entryId;
  node.addEventListener("click", (event) => {
    if (!/** @type {Element} */ (event.target).closest("summary, a, button, pre, table") && item.entryId) hooks.select(item.entryId);
  });
  return node;
}

// The messages between the first ones and those drawn after them: messages [head, next) are not drawn.
let contextGap = null;
let gapLoading = null;
function contextGapText() {
  const missing = (contextGap.next - contextGap.head).toLocaleString();
  const text = contextGap.node.querySelector(".gap-text");
  if (text) {
    text.textContent = `… ${missing} more messages, counted; they load as you scroll here. `;
    return;
  }
  const more = el("button", { type: "button", class: "link", text: "show more" });
  more.addEventListener("click", () => loadContextPage());
  contextGap.node.append(el("span", { class: "gap-text", text: `… ${missing} more messages, counted; they load as you scroll here. ` }), more);
}

// The page of messages just before those drawn after the gap, put in without moving what is in view.
function loadContextPage() {
  const gap = contextGap;
  if (!gap || gapLoading || gap.token !== state.selectToken) return gapLoading;
  const count = Math.min(CONTEXT_STEP, gap.next - gap.head);
  const cursor = gap.depth === undefined ? { before: gap.next } : { beforeDepth: gap.depth };
  const params = { leaf: gap.id, head: 0, tail: count, ...cursor, llm: false, render: count };
  gapLoading = api("GET", `${base}/context/${query(params)}`)
    .then(({ body }) => {
      if (gap !== contextGap || gap.token !== state.selectToken) return;
      const below = contextBox.scrollHeight - contextBox.scrollTop;
      const above = gap.node.getBoundingClientRect().bottom <= contextBox.getBoundingClientRect().top;
      const cards = document.createDocumentFragment();
      body.messages.forEach((item) => cards.appendChild(contextCard(item)));
      gap.node.after(cards);
      gap.next -= body.messages.length;
      if (body.messages.length) gap.depth = body.messages[0].depth;
      if (gap.next <= gap.head || !body.messages.length) {
        gap.node.remove();
        contextGap = null;
      } else contextGapText();
      if (above) contextBox.scrollTop = contextBox.scrollHeight - below;
    })
    .catch((e) => showError(e.message))
    .finally(() => {
      gapLoading = null;
    });
  return gapLoading;
}
export function initContext() {
  // A gap scrolled into view (or near it) brings its next page; a gap shown at first waits for a scroll.
  contextBox.addEventListener(
    "scroll",
    () => {
      if (!contextGap) return;
      const box = contextBox.getBoundingClientRect();
      const gap = contextGap.node.getBoundingClientRect();
      if (gap.bottom > box.top - NEAR && gap.top < box.bottom + NEAR) loadContextPage();
    },
    { passive: true },
  );
}
