// @ts-check
// Branch compare: two nodes' projected contexts side by side, with messages added, removed or changed
// and the token difference. Messages are matched by their source entry and position in it.
import { api, el, query } from "./api.js";
import { renderContextMessage } from "./render.js";

// The template always has these elements.
/** @type {Piweb.ComparePageConfig} */
const cfg = JSON.parse(/** @type {HTMLElement} */ (document.getElementById("compare-config")).textContent);
const summary = /** @type {HTMLElement} */ (document.getElementById("compare-summary"));
const base = `/api/sessions/${cfg.session}`;
const LIMIT = 400; // messages drawn per side; the counts and tokens cover all

async function context(leaf) {
  const { body } = await api("GET", `${base}/context/${query({ leaf, head: 40, tail: LIMIT - 40, llm: false, render: 80 })}`);
  return body;
}

function keyed(body) {
  const seen = new Map();
  return body.messages.map((item) => {
    const n = seen.get(item.entryId) || 0;
    seen.set(item.entryId, n + 1);
    return { key: `${item.entryId || "?"}#${n}`, item, text: JSON.stringify(item.message) };
  });
}

function column(box, list, other, onlyLabel) {
  const index = new Map(other.map((m) => [m.key, m]));
  let only = 0;
  let changed = 0;
  for (const m of list) {
    const match = index.get(m.key);
    const state = !match ? onlyLabel : match.text === m.text ? "same" : "changed";
    if (state === onlyLabel) only += 1;
    if (state === "changed") changed += 1;
    const card = renderContextMessage(m.item);
    box.appendChild(el("div", { class: `cmp ${state}`, dataset: { state, entry: m.item.entryId || "" } }, el("span", { class: "state", text: state === "same" ? "" : state }), card));
  }
  return { only, changed };
}

async function start() {
  if (!cfg.a || !cfg.b) {
    summary.textContent = "Pick two entries: on the session page, select one, press Compare…, then select the other and press Compare again.";
    return;
  }
  try {
    const [a, b] = await Promise.all([context(cfg.a), context(cfg.b)]);
    /** @type {HTMLElement} */ (document.getElementById("col-a")).textContent = `A · ${cfg.a} · ${a.messageCount} messages · ≈ ${a.estimate.tokens.toLocaleString()} tokens`;
    /** @type {HTMLElement} */ (document.getElementById("col-b")).textContent = `B · ${cfg.b} · ${b.messageCount} messages · ≈ ${b.estimate.tokens.toLocaleString()} tokens`;
    const ka = keyed(a);
    const kb = keyed(b);
    const left = column(/** @type {HTMLElement} */ (document.getElementById("compare-a")), ka, kb, "removed");
    const right = column(/** @type {HTMLElement} */ (document.getElementById("compare-b")), kb, ka, "added");
    const diff = b.estimate.tokens - a.estimate.tokens;
    summary.append(
      el("span", { id: "cmp-added", text: `${right.only} added` }),
      el("span", { id: "cmp-removed", text: `${left.only} removed` }),
      el("span", { id: "cmp-changed", text: `${right.changed} changed` }),
      el("strong", { id: "cmp-tokens", text: `B − A: ${diff >= 0 ? "+" : "−"}${Math.abs(diff).toLocaleString()} tokens` }),
    );
    if (a.skippedMessages || b.skippedMessages) summary.append(el("span", { class: "muted", text: "Long contexts: only their first and last messages are drawn." }));
    document.body.dataset.ready = "true";
  } catch (error) {
    summary.textContent = error.message;
  }
}

start();
