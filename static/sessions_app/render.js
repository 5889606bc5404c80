// Rendering of Pi entries and messages into DOM nodes. Everything from a session is untrusted text.
"use strict";

window.Pi = window.Pi || {};

(function (Pi) {
  const el = Pi.el;
  const IMAGE_TYPES = /^image\/(png|jpeg|gif|webp)$/;
  const BASE64 = /^[A-Za-z0-9+/=\s]*$/;

  function textOf(content) {
    if (typeof content === "string") return content;
    if (!Array.isArray(content)) return "";
    return content
      .filter((b) => b && b.type === "text" && typeof b.text === "string")
      .map((b) => b.text)
      .join("\n");
  }
  Pi.textOf = textOf;

  function clip(text, n) {
    const flat = String(text ?? "").replace(/\s+/g, " ").trim();
    return flat.length > n ? flat.slice(0, n - 1) + "…" : flat;
  }
  Pi.clip = clip;

  // One line describing an entry, for tree rows and search.
  Pi.preview = function (record) {
    const e = record && record.entry;
    if (!e) return "";
    const m = e.message || {};
    switch (e.type) {
      case "message":
        if (m.role === "user") return textOf(m.content);
        if (m.role === "assistant") {
          const text = textOf(m.content);
          if (text.trim()) return text;
          const calls = (m.content || []).filter((b) => b && b.type === "toolCall").map((b) => b.name);
          if (calls.length) return `[${calls.join(", ")}]`;
          if (m.errorMessage) return `error: ${m.errorMessage}`;
          return `(${m.stopReason || "empty"})`;
        }
        if (m.role === "toolResult") return `${m.toolName || "tool"}: ${textOf(m.content)}`;
        if (m.role === "bashExecution") return `$ ${m.command || ""}`;
        return textOf(m.content) || m.role || "message";
      case "branch_summary":
        return `Branch summary: ${e.summary || ""}`;
      case "compaction":
        return `Compaction: ${e.summary || ""}`;
      case "label":
        return e.label ? `label “${e.label}”` : "label cleared";
      case "model_change":
        return `model → ${e.provider || ""}/${e.modelId || ""}`;
      case "thinking_level_change":
        return `thinking → ${e.thinkingLevel || ""}`;
      case "session_info":
        return `name → ${e.name || ""}`;
      case "custom_message":
        return `${e.customType || "custom"}: ${textOf(e.content)}`;
      case "custom":
        return `${e.customType || "custom"}`;
      case "context_edit":
        return e.replacement === null ? `omit ${e.targetId}` : `edit ${e.targetId}`;
      default:
        return e.type || "";
    }
  };

  // Role of a tree row: what kind of glyph and colour it gets.
  Pi.kindOf = function (type, role) {
    if (type === "message") return role || "message";
    return type || "entry";
  };

  function image(block) {
    const mime = String(block.mimeType || "");
    const data = String(block.data || "");
    if (!IMAGE_TYPES.test(mime) || !BASE64.test(data)) return el("p", { class: "muted", text: `[image ${mime}]` });
    return el("img", { class: "inline-image", alt: "image from the session", src: `data:${mime};base64,${data.replace(/\s/g, "")}` });
  }

  function json(value) {
    try {
      return JSON.stringify(value, null, 2);
    } catch (_) {
      return String(value);
    }
  }

  function contentNodes(content, { markdown }) {
    if (typeof content === "string") return [markdown ? Pi.markdown(content) : el("pre", { class: "plain", text: content })];
    if (!Array.isArray(content)) return [];
    return content.map((block) => {
      if (!block || typeof block !== "object") return null;
      if (block.type === "text") return markdown ? el("div", { class: "md" }, Pi.markdown(block.text)) : el("pre", { class: "plain", text: block.text });
      if (block.type === "image") return image(block);
      if (block.type === "thinking") {
        const body = block.redacted ? "(redacted)" : block.thinking || "";
        return el("details", { class: "thinking" }, el("summary", { text: "Thinking" }), el("pre", { class: "plain", text: body }));
      }
      if (block.type === "toolCall") {
        return el(
          "details",
          { class: "tool-call" },
          el("summary", {}, "Tool call ", el("code", { text: String(block.name || "?") })),
          el("pre", { class: "plain", text: json(block.arguments) }),
        );
      }
      return el("pre", { class: "plain muted", text: json(block) });
    });
  }

  function card(kind, title, meta, ...body) {
    return el("article", { class: `msg msg-${kind}` }, el("header", {}, el("span", { class: "who", text: title }), meta ? el("span", { class: "meta", text: meta }) : null), ...body);
  }

  // A full rendering of one entry for the branch panel.
  Pi.renderEntry = function (record) {
    const e = record.entry || {};
    const m = e.message || {};
    if (e.type === "message") {
      if (m.role === "user") return card("user", "User", null, contentNodes(m.content, { markdown: true }));
      if (m.role === "assistant") {
        const meta = [m.model, m.stopReason && m.stopReason !== "stop" ? m.stopReason : null].filter(Boolean).join(" · ");
        const nodes = contentNodes(m.content, { markdown: true });
        if (m.errorMessage || m.stopReason === "error" || m.stopReason === "aborted") {
          nodes.push(el("p", { class: "error", text: m.errorMessage || `Stopped: ${m.stopReason}` }));
        }
        return card("assistant", "Assistant", meta, nodes);
      }
      if (m.role === "toolResult") {
        const summary = el("summary", {}, m.isError ? "Tool error " : "Tool result ", el("code", { text: String(m.toolName || "?") }));
        return el("details", { class: `msg msg-tool${m.isError ? " is-error" : ""}` }, summary, contentNodes(m.content, { markdown: false }));
      }
      if (m.role === "bashExecution") {
        const title = el("summary", {}, "$ ", el("code", { text: String(m.command || "") }), m.exitCode ? ` (exit ${m.exitCode})` : "");
        return el("details", { class: "msg msg-tool" }, title, el("pre", { class: "plain", text: String(m.output || "") }));
      }
      return card("custom", m.customType || m.role || "Message", null, contentNodes(m.content, { markdown: true }));
    }
    if (e.type === "branch_summary") return card("summary", "Branch summary", e.fromId ? `from ${e.fromId}` : null, el("div", { class: "md" }, Pi.markdown(e.summary || "")));
    if (e.type === "compaction") {
      return card(
        "compaction",
        "Compaction",
        e.tokensBefore ? `${e.tokensBefore.toLocaleString()} tokens before · keeps from ${e.firstKeptEntryId}` : null,
        el("details", {}, el("summary", { text: "Summary" }), el("div", { class: "md" }, Pi.markdown(e.summary || ""))),
      );
    }
    if (e.type === "custom_message") return card("custom", e.customType || "Custom message", null, contentNodes(e.content, { markdown: true }));
    return el("div", { class: "msg-note", text: Pi.preview(record) });
  };

  // A context message (after projection): roles include the summary roles made at projection time.
  Pi.renderContextMessage = function (item) {
    const m = item.message || {};
    const tokens = `${(item.tokens || 0).toLocaleString()} tok`;
    if (m.role === "compactionSummary") return card("compaction", "Compaction summary", tokens, el("div", { class: "md" }, Pi.markdown(m.summary || "")));
    if (m.role === "branchSummary") return card("summary", "Branch summary", tokens, el("div", { class: "md" }, Pi.markdown(m.summary || "")));
    if (m.role === "system") return card("system", "System", tokens, el("pre", { class: "plain", text: textOf(m.content) }));
    if (m.role === "toolResult") {
      return el("details", { class: `msg msg-tool${m.isError ? " is-error" : ""}` }, el("summary", {}, `Tool result ${m.toolName || ""} · ${tokens}`), contentNodes(m.content, { markdown: false }));
    }
    if (m.role === "bashExecution") return card("tool", "Bash", tokens, el("pre", { class: "plain", text: `$ ${m.command || ""}\n${m.output || ""}` }));
    const title = m.role === "user" ? "User" : m.role === "assistant" ? "Assistant" : m.customType || m.role || "Message";
    return card(m.role === "user" || m.role === "assistant" ? m.role : "custom", title, tokens, contentNodes(m.content, { markdown: true }));
  };
})(window.Pi);
