// @ts-check
// Tree layout without the DOM: the lanes and levels of rows in pre-order, and which rows a filter shows.
// The tree panel (tree.js) draws what these compute; `node --test` checks them directly.
import { AUTHOR_FILTER, authorMatches } from "./authors.js";
import { kindOf, textOf } from "./format.js";

export const ROW = 24; // px; every row has the same height so position = index * ROW
export const OVERSCAN = 10;
export const MAX_LANES = 8;
export const BOOKKEEPING = new Set(["label", "custom", "model_change", "thinking_level_change", "session_info", "usage"]);
export const GLYPH = {
  user: "›",
  assistant: "◆",
  toolResult: "⚙",
  bashExecution: "$",
  branch_summary: "Σ",
  compaction: "▣",
  label: "#",
  context_edit: "✎",
};

export const LANE_CLASS = { "│": "v", "┃": "v p", "├": "t", "┣": "t p" };
export const keyOf = (item) => (item.kind === "run" ? item.lastId : item.id);
export const firstOf = (item) => (item.kind === "run" ? item.firstId : item.id);

// Levels and connector columns for rows in pre-order. A row keeps its parent's level unless it is
// one of several children and not the last one: those step one lane in and start with ├. Columns are
// drawn from a reverse scan: a lane stays open (│) above the later sibling that continues it.
export function drawLanes(rows) {
  const at = new Map();
  const count = new Map();
  rows.forEach((row, i) => {
    at.set(keyOf(row), i);
    if (row.parentId != null) count.set(row.parentId, (count.get(row.parentId) || 0) + 1);
  });
  const seen = new Map();
  const level = new Array(rows.length);
  rows.forEach((row, i) => {
    const parent = row.parentId != null ? at.get(row.parentId) : undefined;
    row.branchStart = false;
    row.continues = false;
    if (parent === undefined) {
      level[i] = 0;
    } else {
      const siblings = count.get(row.parentId) || 1;
      const nth = (seen.get(row.parentId) || 0) + 1;
      seen.set(row.parentId, nth);
      if (siblings > 1 && nth < siblings) {
        level[i] = level[parent] + 1;
        row.branchStart = true;
      } else {
        level[i] = level[parent];
        row.continues = siblings > 1;
      }
    }
    row.level = level[i];
  });
  const open = [];
  for (let i = rows.length - 1; i >= 0; i -= 1) {
    const l = level[i];
    let cells = "";
    const from = Math.max(0, l - MAX_LANES - 1);
    for (let c = from; c < l; c += 1) cells += open[c] === 2 ? "┃" : open[c] ? "│" : " ";
    if (rows[i].branchStart && cells.length) cells = cells.slice(0, -1) + (open[l - 1] === 2 || rows[i].onPath ? "┣" : "├");
    rows[i].lanes = cells;
    open.length = l;
    // The sibling that keeps the lane opens it for the rows above; on the current path it is highlighted.
    if (rows[i].continues) open[l] = rows[i].onPath ? 2 : 1;
  }
}

// Whether a filter shows a node row. The leaf and the search hit being shown stay in view whatever the
// filter; `record` is the entry when loaded (an assistant message with no text is a tool step).
export function rowVisible(node, filter, record, reveal) {
  if (node.current || node.id === reveal) return true;
  if (filter.startsWith(AUTHOR_FILTER)) return authorMatches(record, filter);
  const kind = kindOf(node.type, node.role);
  switch (filter) {
    case "default":
      return !BOOKKEEPING.has(node.type);
    case "no-tools":
      if (BOOKKEEPING.has(node.type) || kind === "toolResult" || kind === "bashExecution") return false;
      return !(kind === "assistant" && record && !textOf(record.entry.message.content).trim());
    case "user":
      return kind === "user";
    case "labeled":
      return Boolean(node.label);
    default:
      return true;
  }
}
