// @ts-check
// Diffs as the files API gives them (hunks of " ", "-" and "+" lines, computed on the server by a line
// diff), drawn as lines: shared by the session's Files view and the branch compare.
import { el } from "./api.js";

/** @param {number} added @param {number} removed */
export function counts(added, removed) {
  return el("span", { class: "file-counts mono" }, el("span", { class: "added", text: `+${added}` }), " ", el("span", { class: "removed", text: `−${removed}` }));
}

/**
 * @param {{ oldStart: number, oldCount: number, newStart: number, newCount: number, lines: string[] }[]} hunks
 * @param {boolean} numbered whether the starts are lines in the file (else within the edited text)
 */
export function renderHunks(hunks, numbered) {
  const lines = el("div", { class: "diff" });
  for (const hunk of hunks) {
    const where = numbered ? `@@ -${hunk.oldStart},${hunk.oldCount} +${hunk.newStart},${hunk.newCount} @@` : "@@ in the edited text (its place in the file is not known) @@";
    lines.appendChild(el("div", { class: "hunk", text: where }));
    for (const line of hunk.lines) {
      const mark = line[0];
      lines.appendChild(el("div", { class: mark === "+" ? "ins" : mark === "-" ? "del" : "ctx", text: line }));
    }
  }
  return lines;
}
