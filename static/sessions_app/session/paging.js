// @ts-check
// Paging arithmetic of the session page, without the DOM: which part of a drawn path a click can reuse,
// where a step through search hits lands and which page holds it, and what the hit counter says.

// The part of a drawn path (ids root first, the first at depth firstDepth) that ends at entry `at`:
// at most `limit` entries, and whether older ones exist above it.
export function pathWindow(count, at, firstDepth, hasMore, limit) {
  if (at < 0 || at >= count) return null;
  const from = Math.max(0, at + 1 - limit);
  return { from, to: at + 1, firstDepth: firstDepth + from, hasMore: from > 0 || hasMore };
}

// One step through `total` hits from position `at` (-1 before the first step), wrapping at both ends.
export function stepIndex(at, step, total) {
  if (total <= 0) return -1;
  if (at < 0) return step > 0 ? 0 : total - 1;
  return (((at + step) % total) + total) % total;
}

export function pageOf(index, size) {
  return Math.floor(index / size);
}

// The hit counter next to the search box. While a query is typed and not asked yet (pending) or asked
// and not answered (not ready), it says so rather than keep the last query's answer; before the first
// step it counts the matches instead of showing a position.
export function hitCountText({ query, pending = false, ready, total, at, incomplete }) {
  if (!query) return "";
  if (pending || !ready) return "searching…";
  if (!total) return incomplete ? "too many candidates: try other words" : "no match";
  if (at < 0) return `${total.toLocaleString()} ${total === 1 ? "match" : "matches"}`;
  return `${(at + 1).toLocaleString()} of ${total.toLocaleString()}`;
}

// The messages not drawn between the first ones and those after them: [head, next).
export function gapCount(head, next) {
  return Math.max(0, next - head);
}
