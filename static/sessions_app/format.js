// @ts-check
// Pure formatting of Pi entries: one-line previews, token counts and sizes. No DOM, so `node --test`
// runs it as it is.

export const ROLE_NAMES = { user: "User", assistant: "Assistant", toolResult: "Tool result", bashExecution: "Bash", custom: "Custom" };

export function textOf(content) {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .filter((b) => b && b.type === "text" && typeof b.text === "string")
    .map((b) => b.text)
    .join("\n");
}

// "1 thread", "2 threads": counts people read are never "1 threads".
/**
 * @param {number} n
 * @param {string} one
 * @param {string} [many]
 */
export function plural(n, one, many = `${one}s`) {
  return `${n.toLocaleString()} ${n === 1 ? one : many}`;
}

// Markdown as a line of text, for previews: what the marks mean stays, the marks go.
/** @param {string} text */
export function plainText(text) {
  return String(text ?? "")
    .replace(/```[^\n]*\n?/g, " ")
    .replace(/!\[([^\]]*)\]\([^)]*\)/g, "$1")
    .replace(/\[([^\]]+)\]\([^)]*\)/g, "$1")
    .replace(/^\s{0,3}(#{1,6}|>|[-*+]|\d+[.)])\s+/gm, "")
    .replace(/(\*\*|__)(?=\S)([\s\S]*?\S)\1/g, "$2")
    .replace(/(^|[^\w*])([*_])(?=\S)([^*_\n]*?\S)\2(?!\w)/g, "$1$3")
    .replace(/`([^`]*)`/g, "$1")
    .replace(/~~(.*?)~~/g, "$1");
}

export function clip(text, n) {
  const flat = String(text ?? "").replace(/\s+/g, " ").trim();
  return flat.length > n ? flat.slice(0, n - 1) + "…" : flat;
}

export function tokens(n) {
  if (n >= 10000) return `${Math.round(n / 1000)}k`;
  if (n >= 1000) return `${(n / 1000).toFixed(1)}k`;
  return String(n);
}

// What a tree row says before its entry is loaded, or when the entry has no text.
export function placeholder(row, loaded) {
  if (row.type === "message") return `${ROLE_NAMES[row.role] || row.role || "message"}${loaded ? " (no text)" : " …"}`;
  return (row.type || "entry").replace(/_/g, " ");
}

// One line describing an entry, for tree rows and search.
// `lookup` (id → record), when given, lets an edit name the entry it changes.
export function preview(record, lookup) {
  const e = record && record.entry;
  if (!e) return "";
  const m = e.message || {};
  switch (e.type) {
    case "message":
      if (m.role === "user") {
        const text = plainText(textOf(m.content));
        if (text.trim()) return text;
        return Array.isArray(m.content) && m.content.some((b) => b && b.type === "image") ? "[image]" : "";
      }
      if (m.role === "assistant") {
        const text = plainText(textOf(m.content));
        if (text.trim()) return text;
        const calls = (Array.isArray(m.content) ? m.content : []).filter((b) => b && b.type === "toolCall").map((b) => b.name);
        if (calls.length) return `[${calls.join(", ")}]`;
        if (m.errorMessage) return `error: ${m.errorMessage}`;
        return `(${m.stopReason || "empty"})`;
      }
      if (m.role === "toolResult") return `${m.toolName || "tool"}: ${textOf(m.content)}`;
      if (m.role === "bashExecution") return `$ ${m.command || ""}`;
      return textOf(m.content) || m.role || "message";
    case "branch_summary":
      return `Branch summary: ${plainText(e.summary || "")}`;
    case "compaction":
      return `Compaction: ${plainText(e.summary || "")}`;
    case "label":
      return e.label ? `label “${e.label}”` : "label cleared";
    case "model_change":
      return `model → ${[e.provider, e.modelId].filter(Boolean).join("/") || "unknown"}`;
    case "thinking_level_change":
      return `thinking → ${e.thinkingLevel || ""}`;
    case "session_info":
      return `name → ${e.name || ""}`;
    case "custom_message":
      return `${e.customType || "custom"}: ${textOf(e.content)}`;
    case "custom":
      return `${e.customType || "custom"}`;
    case "context_edit":
    {
      const target = lookup ? lookup(e.targetId) : null;
      const text = target ? clip(preview(target), 60) : "";
      const what = text ? `“${text}”` : "an earlier entry";
      return e.replacement === null ? `Retried: ${what} is left out of what the model sees` : `Rewritten for the model: ${what}`;
    }
    default:
      return e.type || "";
  }
}

// Role of a tree row: what kind of glyph and colour it gets.
export function kindOf(type, role) {
  if (type === "message") return role || "message";
  return type || "entry";
}

// How people name an entry (never by its id): what it is and what it says, e.g. "User: “Why does…”".
/**
 * @param {any} record
 * @param {number} [chars]
 */
export function describeEntry(record, chars = 48) {
  if (!record || !record.entry) return "this entry";
  const e = record.entry;
  const kind = e.type === "message" ? ROLE_NAMES[(e.message || {}).role] || "Message" : String(e.type || "entry").replace(/_/g, " ");
  const said = clip(preview(record), chars);
  const what = kind.charAt(0).toUpperCase() + kind.slice(1);
  return said && e.type === "message" ? `${what}: “${said}”` : said ? `${what} · ${said}` : what;
}

// What a context edit does, for a tooltip: the entry stays in history, the model no longer sees it.
export const CONTEXT_EDIT_HELP =
  "After a failed attempt (the context overflowed, say), piweb retries without it: this entry leaves the failed message and its tool results out of the model's context. They stay in the history.";

// Offline summaries are marked in the entry's details (and, before that marker, by their model).
export function isOffline(details) {
  if (!details || typeof details !== "object") return false;
  return details.offline === true || details.summarizer === "offline" || details.model === "offline-structured";
}

// A file size as people read it.
export function humanBytes(n) {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}
