// @ts-check
// Admin audit tables: whole numbers of four digits or more get thousands separators, and number cells
// are marked so they align right. Only cells that are a bare integer change; ids inside links and text
// cells stay as they are.
export function groupDigits(text) {
  const trimmed = text.trim();
  if (!/^-?\d{4,}$/.test(trimmed)) return null;
  return Number(trimmed).toLocaleString("en-US");
}

function format(root) {
  for (const cell of root.querySelectorAll("#result_list td, .usage-table td")) {
    if (cell.children.length) continue;
    const trimmed = cell.textContent.trim();
    if (/^-?[\d,]+(\.\d+)?$/.test(trimmed)) cell.classList.add("number");
    const grouped = groupDigits(trimmed);
    if (grouped !== null) cell.textContent = grouped;
  }
}

if (typeof document !== "undefined") {
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", () => format(document));
  else format(document);
}
