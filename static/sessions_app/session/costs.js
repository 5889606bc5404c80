// @ts-check
// What the drawn branch cost: each assistant card's own cost in its header, and above the branch the
// cost of the path to the selected entry, of the whole session and of its abandoned branches.
import { api, el, query } from "../api.js";
import { money } from "../../costs/money.js";
import { plural } from "../format.js";
import { $, base, state } from "./page.js";

const SOURCES = { recorded: "as recorded in the session", priced: "from the prices set for this model", unpriced: "no recorded cost and no price set for this model" };
const MAX_IDS = 400;

// Ask for the cost of the branch to `id` and of the assistant cards not yet marked; stale answers are dropped.
export async function showCosts(id) {
  const token = state.selectToken;
  // After the selection's context: a quick walk through the tree asks only where it stops.
  await state.contextLoaded;
  if (token !== state.selectToken) return;
  const box = $("branch");
  const cards = [.../** @type {NodeListOf<HTMLElement>} */ (box.querySelectorAll("article.msg-assistant[data-id]:not([data-cost])"))].slice(-MAX_IDS);
  const entries = cards.map((c) => c.dataset.id).join(",");
  let body;
  try {
    ({ body } = await api("GET", `${base}/cost/${query({ at: id, entries })}`));
  } catch {
    return; // costs are extra: the branch stands without them
  }
  if (token !== state.selectToken) return;
  const line = $("branch-cost");
  const parts = [`this branch ${money(body.branch.cost)}`];
  if (body.session) parts.push(`session ${money(body.session.cost)}`);
  if (body.abandoned) parts.push(`abandoned branches ${money(body.abandoned.cost)}`);
  line.textContent = `Cost: ${parts.join(" · ")}`;
  line.title = `${plural(body.branch.tokens, "token")} in ${plural(body.branch.messages, "assistant message")} on this branch`;
  line.dataset.branch = String(body.branch.cost);
  for (const card of cards) {
    const found = body.messages[/** @type {string} */ (card.dataset.id)];
    if (!found) continue;
    card.dataset.cost = String(found.cost);
    const head = card.querySelector(":scope > header");
    if (head) head.insertBefore(el("span", { class: "cost small", title: `${found.tokens.toLocaleString()} tokens; cost ${SOURCES[found.source] || ""}`, text: money(found.cost) }), head.querySelector(".meta")?.nextSibling || null);
  }
}
