// @ts-check
// The words a search query looks for, read as the server reads it (web search syntax: words, "quoted
// phrases", `or` between alternatives, `-word` excluded), and the pieces of a text that hold them, so a
// tree row can mark its matches. Pure: `node --test` checks it.
const TOKEN = /(-?)"([^"]*)"?|(\S+)/gu;
// Search by work (`path:src/`, `tool:edit`, `cmd:"npm test"`) finds tool results, not words: as the server
// reads them (pitree/work_query.py), these terms mark nothing.
const WORK_TERM = /(?:^|(?<=\s))-?(?:path|tool|cmd):(?:"[^"]*"?|\S*)/giu;

// The query without its work terms: the words a hit's text holds.
export function textOf(query) {
  return String(query || "").replace(WORK_TERM, " ");
}

// Whether the query holds a work term.
export function hasWorkTerms(query) {
  return textOf(query) !== String(query || "");
}
const WORD = /[\p{L}\p{N}_]+/gu;

// Words that a hit holds, lower-cased, in order, without repeats: not `or`, not an excluded word.
export function queryTerms(query) {
  const seen = new Set();
  for (const found of textOf(query).toLowerCase().matchAll(TOKEN)) {
    const [, minus, quoted, bare] = found;
    if (bare !== undefined && bare === "or") continue;
    const negated = Boolean(minus) || (bare !== undefined && bare.startsWith("-") && bare.length > 1);
    if (negated) continue;
    for (const word of (quoted !== undefined ? quoted : bare).match(WORD) || []) seen.add(word);
  }
  return [...seen];
}

// Split text into [piece, isMatch] pairs, matching any term in any case; overlapping matches merge.
export function markPieces(text, terms) {
  const source = String(text ?? "");
  const lowered = source.toLowerCase();
  const spans = [];
  for (const term of terms) {
    if (!term) continue;
    let at = lowered.indexOf(term);
    while (at >= 0) {
      spans.push([at, at + term.length]);
      at = lowered.indexOf(term, at + term.length);
    }
  }
  spans.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  const pieces = [];
  let end = 0;
  for (const [first, stop] of spans) {
    if (stop <= end) continue;
    const start = Math.max(first, end);
    if (start > end) pieces.push([source.slice(end, start), false]);
    const last = pieces[pieces.length - 1];
    if (last && last[1] && start === end) last[0] += source.slice(start, stop);
    else pieces.push([source.slice(start, stop), true]);
    end = stop;
  }
  if (end < source.length) pieces.push([source.slice(end), false]);
  return pieces;
}
