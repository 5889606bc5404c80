// @ts-check
// Rendering of Pi entries and messages into DOM nodes. Markdown, code highlighting and tool-call bodies
// come from the server as sanitized HTML (`rendered` on each record); everything else from a session is
// set as text. Without `rendered` (a message still streaming) the text is shown plain.

import { el } from "./api.js";
import { copyText } from "./dialogs.js";
import { CONTEXT_EDIT_HELP, ROLE_NAMES, clip, isOffline, preview, textOf, tokens } from "./format.js";

const IMAGE_TYPES = /^image\/(png|jpeg|gif|webp)$/;
const BASE64 = /^[A-Za-z0-9+/=\s]*$/;

// Sanitized HTML from the server; code blocks get a copy button.
export function html(markup, className = "md") {
  const box = el("div", { class: className });
  box.innerHTML = markup;
  box.querySelectorAll("pre").forEach((pre) => {
    const wrap = el("div", { class: "codeblock" });
    pre.replaceWith(wrap);
    wrap.appendChild(pre);
    wrap.appendChild(el("button", { type: "button", class: "copy", text: "Copy", "aria-label": "Copy this code" }));
  });
  return box;
}

document.addEventListener("click", (event) => {
  /** @type {HTMLButtonElement | null} */
  const button = /** @type {Element} */ (event.target).closest(".codeblock .copy");
  if (!button) return;
  event.stopPropagation();
  const pre = /** @type {HTMLElement} */ (button.parentElement).querySelector("pre");
  copyText(pre ? pre.innerText : "", button);
});

function image(block) {
  const mime = String(block.mimeType || "");
  const data = String(block.data || "");
  if (!IMAGE_TYPES.test(mime) || !BASE64.test(data)) return el("p", { class: "muted", text: `[image ${mime}]` });
  const img = el("img", { class: "inline-image", alt: "image from the session", src: `data:${mime};base64,${data.replace(/\s/g, "")}` });
  img.addEventListener("click", () => img.classList.toggle("expanded"));
  return img;
}

function plain(text) {
  return el("div", { class: "md" }, el("p", { class: "plain-text", text: String(text ?? "") }));
}

// A tool call: its name and what it works on in the summary line, its body (a diff, the file written)
// below. The file path is said once, in the summary: the body's own path line is dropped, and what it
// adds (the lines read) goes beside the path.
function toolCall(block, part) {
  const name = String(block.name || "?");
  const body = part && part.html ? html(part.html, "tool-body") : el("pre", { class: "plain", text: JSON.stringify(block.arguments, null, 2) });
  const summary = el("summary", {}, el("code", { text: name }));
  if (part && part.path) {
    const head = body.querySelector(".excerpt-head.path");
    const extra = head && head.textContent.startsWith(part.path) ? head.textContent.slice(part.path.length).trim() : "";
    if (head) head.remove();
    summary.append(" ", el("span", { class: "mono small path", text: part.path }), extra ? el("span", { class: "muted small", text: `  ${extra}` }) : "");
  } else if (part && part.command) {
    summary.append(el("span", { class: "mono small", text: `  $ ${clip(part.command, 80)}` }));
  }
  const box = el("details", { class: `tool-call tool-${part ? part.kind : "other"}` }, summary, body);
  if (part && part.kind === "edit") box.open = true;
  return box;
}

function contentNodes(content, rendered) {
  const parts = (rendered && rendered.blocks) || [];
  if (typeof content === "string") return [parts[0] ? html(parts[0]) : plain(content)];
  if (!Array.isArray(content)) return [];
  return content.map((block, i) => {
    if (!block || typeof block !== "object") return null;
    const part = parts[i];
    if (block.type === "text") return typeof part === "string" ? html(part) : plain(block.text);
    if (block.type === "image") return image(block);
    if (block.type === "thinking") {
      const body = block.redacted ? "(redacted)" : block.thinking || "";
      return el("details", { class: "thinking" }, el("summary", { text: "Thinking" }), el("pre", { class: "plain", text: body }));
    }
    if (block.type === "toolCall") return toolCall(block, part);
    return el("pre", { class: "plain muted", text: JSON.stringify(block) });
  });
}

function card(kind, title, meta, ...body) {
  return el("article", { class: `msg msg-${kind}` }, el("header", {}, el("span", { class: "who", text: title }), meta ? el("span", { class: "meta", text: meta }) : null), ...body);
}

function toolResult(m, rendered, extra) {
  const kind = (rendered && rendered.kind) || m.toolName || "tool";
  const label = `${m.isError ? "Tool error" : "Result"} · ${kind}${rendered && rendered.path ? ` ${rendered.path}` : ""}${extra || ""}`;
  const blocks = Array.isArray(m.content) ? m.content : [{ type: "text", text: textOf(m.content) }];
  const parts = (rendered && rendered.blocks) || [];
  const body = blocks.map((block, i) => {
    if (block && block.type === "image") return image(block);
    return parts[i] ? html(parts[i], "tool-body") : el("pre", { class: "plain", text: block && block.text ? block.text : "" });
  });
  return el("details", { class: `msg msg-tool${m.isError ? " is-error" : ""}` }, el("summary", { text: label }), ...body);
}

// A system message: its text, and the patches a later one makes (sections replaced or removed by
// name, tools added or removed), so a patch with no text of its own is not an empty card.
function systemCard(m, meta) {
  const body = [];
  const text = textOf(m.content);
  if (text) body.push(el("pre", { class: "plain", text }));
  const sections = m.sections && typeof m.sections === "object" ? Object.entries(m.sections) : [];
  for (const [name, value] of sections) {
    const head = el("span", { class: "section-name", text: value === null ? `Section ${name} removed` : `Section ${name}` });
    body.push(value === null ? el("p", { class: "msg-note" }, head) : el("details", { class: "system-section" }, el("summary", {}, head), el("pre", { class: "plain", text: String(value) })));
  }
  const names = (tools) => (Array.isArray(tools) ? tools.map((t) => (typeof t === "string" ? t : (t && t.name) || "?")) : []);
  const added = names(m.toolsAdded);
  const removed = names(m.toolsRemoved);
  if (added.length) body.push(el("p", { class: "msg-note", text: `Tools added: ${added.join(", ")}` }));
  if (removed.length) body.push(el("p", { class: "msg-note", text: `Tools removed: ${removed.join(", ")}` }));
  if (!body.length) body.push(el("p", { class: "msg-note", text: "(empty system message)" }));
  return card("system", "System", meta, ...body);
}

function summaryCard(kind, title, meta, markup, text, details) {
  const body = markup ? html(markup) : plain(text);
  const node = card(kind, title, meta, body);
  if (isOffline(details)) /** @type {HTMLElement} */ (node.querySelector("header")).appendChild(el("span", { class: "badge offline", text: "offline summary", title: "Written by the built-in offline summarizer, not by a model" }));
  return node;
}

// A full rendering of one entry for the branch panel.
// `lookup` (id → record) lets an entry that refers to another (a context edit) name it.
export function renderEntry(record, lookup) {
  const e = record.entry || {};
  const m = e.message || {};
  const r = record.rendered || {};
  if (e.type === "message") {
    if (m.role === "user") return card("user", "User", null, contentNodes(m.content, r));
    if (m.role === "assistant") {
      const meta = [m.model, m.stopReason && m.stopReason !== "stop" && m.stopReason !== "toolUse" ? m.stopReason : null].filter(Boolean).join(" · ");
      const nodes = contentNodes(m.content, r);
      if (m.errorMessage || m.stopReason === "error" || m.stopReason === "aborted") {
        nodes.push(el("p", { class: "error", text: m.errorMessage || `Stopped: ${m.stopReason}` }));
      }
      return card("assistant", "Assistant", meta, nodes);
    }
    if (m.role === "toolResult") return toolResult(m, r);
    if (m.role === "system") return systemCard(m, null);
    if (m.role === "bashExecution") {
      const title = el("summary", {}, "$ ", el("code", { text: String(m.command || "") }), m.exitCode ? ` (exit ${m.exitCode})` : "");
      return el("details", { class: "msg msg-tool" }, title, el("pre", { class: "plain", text: String(m.output || "") }));
    }
    return card("custom", m.customType || m.role || "Message", null, contentNodes(m.content, r));
  }
  if (e.type === "branch_summary") return summaryCard("summary", "Branch summary", e.fromId ? `of the branch ending at ${e.fromId}` : null, r.summary, e.summary, e.details);
  if (e.type === "compaction") {
    const meta = e.tokensBefore ? `replaced ${tokens(e.tokensBefore)} tokens of context · keeps from ${e.firstKeptEntryId}` : null;
    return summaryCard("compaction", "Compaction", meta, r.summary, e.summary, e.details);
  }
  if (e.type === "custom_message") return card("custom", e.customType || "Custom message", null, contentNodes(e.content, r));
  if (e.type === "context_edit") return el("div", { class: "msg-note context-edit", title: CONTEXT_EDIT_HELP, text: preview(record, lookup) });
  return el("div", { class: "msg-note", text: preview(record) });
}

// A context message (after projection): roles include the summary roles made at projection time.
export function renderContextMessage(item, source) {
  const m = item.message || {};
  const r = item.rendered || {};
  const count = `${(item.tokens || 0).toLocaleString()} tok`;
  if (m.role === "compactionSummary" || m.role === "branchSummary") {
    const compaction = m.role === "compactionSummary";
    const e = (source && source.entry) || {};
    const before = (item.replaced && item.replaced.tokens) || m.tokensBefore || e.tokensBefore;
    const parts = [];
    if (item.replaced) parts.push(`${item.replaced.messages.toLocaleString()} message${item.replaced.messages === 1 ? "" : "s"}`);
    if (compaction && before) parts.push(`${tokens(before)} tokens`);
    const replaced = parts.length ? `replaced ${parts.join(", ")}` : "";
    const node = summaryCard(compaction ? "compaction" : "summary", compaction ? "Compaction summary" : "Branch summary", count, r.summary, m.summary, e.details || item.details);
    if (replaced) /** @type {HTMLElement} */ (node.querySelector("header")).appendChild(el("span", { class: "replaced", text: replaced }));
    return node;
  }
  if (m.role === "system") return systemCard(m, count);
  if (m.role === "toolResult") return toolResult(m, r, ` · ${count}`);
  if (m.role === "bashExecution") return card("tool", "Bash", count, el("pre", { class: "plain", text: `$ ${m.command || ""}\n${m.output || ""}` }));
  const title = ROLE_NAMES[m.role] || m.customType || m.role || "Message";
  return card(m.role === "user" || m.role === "assistant" ? m.role : "custom", title, count, contentNodes(m.content, r));
}
