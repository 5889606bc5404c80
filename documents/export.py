"""A branch or a whole tree as a document to read: Markdown, or one standalone HTML page.

Both are built from the stored entries (verbatim Pi payloads) in the order given: a branch root → leaf,
a tree depth first with each branch after the one before it. An entry whose parent is not the entry
printed just before it says where it continues from, so a tree reads as a sequence of branches.

The HTML uses the page's own rendering (``rendering.render_entry``: Markdown through the sanitizer, code
highlighted, tool calls by kind); everything else from the session is escaped here. The page carries its
style inline and a Content-Security-Policy that forbids scripts and every fetch but inline images, so a
message that slipped past the sanitizer could still run nothing and load nothing.
No Django imports: the adapters hand in plain payloads.
"""

from __future__ import annotations

import base64
import binascii
import html
import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from documents.rendering import render_entry
from pitree.images import IMAGE_TYPES

__all__ = ["DocumentInfo", "html_document", "markdown_document", "tree_order"]

_BASE64 = re.compile(r"^[A-Za-z0-9+/]*={0,2}$")


@dataclass(frozen=True, slots=True, kw_only=True)
class DocumentInfo:
    """What the document's head says: which session, which part of it, and where it ends."""

    title: str
    session_id: str
    cwd: str
    scope: str  # "branch" or "tree"
    leaf_id: str | None


def tree_order(entries: Sequence[tuple[int, str | None, str | None]]) -> list[int]:
    """Return the seqs of ``(seq, entry_id, parent_id)`` rows depth first, siblings in append order.

    Roots (no parent, or a parent not in the rows) come in append order. Iterative: a 100k-deep path
    needs no recursion.
    """
    ids = {entry_id for _, entry_id, _ in entries if entry_id is not None}
    children: dict[str | None, list[tuple[int, str | None]]] = {}
    for seq, entry_id, parent_id in sorted(entries):
        key = parent_id if parent_id in ids else None
        children.setdefault(key, []).append((seq, entry_id))
    out: list[int] = []
    stack = list(reversed(children.get(None, [])))
    while stack:
        seq, entry_id = stack.pop()
        out.append(seq)
        if entry_id is not None:
            stack.extend(reversed(children.get(entry_id, [])))
    return out


# -- Markdown ---------------------------------------------------------------------------------------------


def markdown_document(info: DocumentInfo, entries: Iterable[Mapping[str, Any]]) -> Iterator[str]:
    """Yield the document in Markdown, one piece per entry."""
    yield f"# {_inline(info.title)}\n\n"
    yield f"- Session: `{info.session_id}`\n"
    if info.cwd:
        yield f"- Working directory: `{_inline(info.cwd)}`\n"
    yield f"- {_scope_text(info)}\n"
    previous: str | None = None
    for entry in entries:
        body = _markdown_entry(entry)
        if body is None:
            continue
        head, text = body
        entry_id = _str(entry.get("id"))
        parent = entry.get("parentId")
        yield f"\n## {head} · `{_inline(entry_id)}`\n\n"
        if previous is not None and parent != previous:
            yield f"*Continues from `{_inline(_str(parent)) or 'the root'}`.*\n\n"
        yield text.rstrip("\n") + "\n"
        previous = entry_id


def _scope_text(info: DocumentInfo) -> str:
    if info.scope == "tree":
        return "The whole tree, branch by branch"
    return f"The branch from the root to `{_inline(info.leaf_id or '')}`"


def _markdown_entry(entry: Mapping[str, Any]) -> tuple[str, str] | None:
    kind = entry.get("type")
    if kind == "message" and isinstance(entry.get("message"), Mapping):
        return _markdown_message(entry["message"])
    if kind == "compaction":
        return "Compaction summary", _inert(_str(entry.get("summary"))) + "\n"
    if kind == "branch_summary":
        return "Branch summary", _inert(_str(entry.get("summary"))) + "\n"
    if kind == "custom_message":
        return _str(entry.get("customType")) or "Custom message", _markdown_content(entry.get("content"))
    if kind == "model_change":
        return "Model", f"{_inline(_str(entry.get('provider')))}/{_inline(_str(entry.get('modelId')))}\n"
    if kind == "thinking_level_change":
        return "Thinking level", f"{_inline(_str(entry.get('thinkingLevel')))}\n"
    if kind == "session_info" and entry.get("name"):
        return "Session name", f"{_inline(_str(entry.get('name')))}\n"
    if kind == "label":
        label = _str(entry.get("label"))
        target = _inline(_str(entry.get("targetId")))
        return "Label", (f"`{target}` labelled “{_inline(label)}”\n" if label else f"`{target}` unlabelled\n")
    return None


def _markdown_message(message: Mapping[str, Any]) -> tuple[str, str]:
    role = _str(message.get("role"))
    if role == "toolResult":
        name = _str(message.get("toolName")) or "tool"
        head = f"{'Tool error' if message.get('isError') else 'Result'} · {_inline(name)}"
        return head, _markdown_content(message.get("content"), fenced=True)
    if role == "bashExecution":
        text = f"$ {_str(message.get('command'))}\n{_str(message.get('output'))}"
        return "Bash", _fence(text, "")
    if role == "assistant":
        model = _str(message.get("model"))
        text = _markdown_content(message.get("content"))
        error = _str(message.get("errorMessage"))
        if error:
            text += f"\n> Error: {_inline(error)}\n"
        return (f"Assistant · {_inline(model)}" if model else "Assistant"), text
    title = (
        {"user": "User", "system": "System"}.get(role) or _str(message.get("customType")) or role or "Message"
    )
    return _inline(title), _markdown_content(message.get("content"))


def _markdown_content(content: Any, *, fenced: bool = False) -> str:
    if isinstance(content, str):
        return (_fence(content, "") if fenced else _inert(content)) + "\n"
    if not isinstance(content, list):
        return ""
    parts: list[str] = []
    for block in content:
        if not isinstance(block, Mapping):
            continue
        kind = block.get("type")
        if kind == "text":
            text = _str(block.get("text"))
            parts.append(_fence(text, "") if fenced else _inert(text))
        elif kind == "thinking":
            thinking = "(redacted)" if block.get("redacted") else _str(block.get("thinking"))
            parts.append(
                "> **Thinking**\n>\n" + "\n".join(f"> {_inert(line)}" for line in thinking.splitlines())
            )
        elif kind == "toolCall":
            name = _inline(_str(block.get("name")))
            arguments = json.dumps(block.get("arguments"), indent=2, ensure_ascii=False)
            parts.append(f"**Tool call: {name}**\n\n" + _fence(arguments, "json"))
        elif kind == "image":
            # A Markdown file has nowhere to keep the picture; the HTML export shows it.
            parts.append(f"*[image {_inline(_str(block.get('mimeType')))}]*")
    return "\n\n".join(parts) + "\n"


def _fence(text: str, lang: str) -> str:
    """A fenced block that no run of backticks inside ``text`` can close."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{lang}\n{text.rstrip(chr(10))}\n{ticks}"


def _inline(text: str) -> str:
    """One line of session text in a heading or list item: no line breaks, no raw markup, no link (a title
    may be a prompt cut short, whose link syntax no later pass could recognise)."""
    flat = " ".join(text.split()).replace("<", "&lt;").replace("`", "'")
    flat = flat.replace("[", "\\[").replace("]", "\\]")
    return _SCRIPT_SCHEME.sub(lambda m: m.group(1) + "\\:", flat)


# Shown as text, but kept from reading as a scheme anywhere the line is pasted.
_SCRIPT_SCHEME = re.compile(r"\b(javascript|vbscript|data):", re.IGNORECASE)


# Links to other schemes than the web's and mail's are dropped; raw HTML is shown as text.
_CODE_SPAN = re.compile(r"(`+)(?:.+?)\1", re.DOTALL)
_UNSAFE_LINK = re.compile(r"\]\(\s*<?\s*(?!https?:|mailto:|#|/|\.)[a-z][a-z0-9+.-]*:[^)]*\)", re.IGNORECASE)
_FENCE_LINE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def _inert(text: str) -> str:
    """Message Markdown kept as written, except what a renderer would execute or fetch.

    Raw HTML tags become text (``<`` as ``&lt;``) outside code, and links with a scheme other than
    http(s) or mailto lose their target, so a viewer that renders raw HTML still runs nothing.
    """
    out: list[str] = []
    fence: str | None = None
    for line in text.split("\n"):
        marker = _FENCE_LINE.match(line)
        if fence is not None:
            out.append(line)
            if marker and marker.group(1)[0] == fence[0] and len(marker.group(1)) >= len(fence):
                fence = None
            continue
        if marker:
            fence = marker.group(1)
            out.append(line)
            continue
        out.append(_inert_line(line))
    return "\n".join(out)


def _inert_line(line: str) -> str:
    pieces: list[str] = []
    end = 0
    for span in _CODE_SPAN.finditer(line):
        pieces.append(_inert_prose(line[end : span.start()]))
        pieces.append(span.group(0))
        end = span.end()
    pieces.append(_inert_prose(line[end:]))
    return "".join(pieces)


def _inert_prose(text: str) -> str:
    return _UNSAFE_LINK.sub("](#link-removed)", text.replace("<", "&lt;"))


# -- HTML -------------------------------------------------------------------------------------------------

_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"

_STYLE = """
:root { color-scheme: light dark; --ink: #1d2330; --muted: #545b6b; --line: #d9dde3; --bg: #f6f7f9;
  --panel: #fff; --code: #f4f6f9; --user: #0b6e44; --assistant: #1f5bd1; --tool: #7a4f00;
  --summary: #6b32cf; --error: #a8231b; --del: #fde8e7; --ins: #e2f5e9; --accent: #1f5bd1; }
@media (prefers-color-scheme: dark) { :root { --ink: #e6e9ef; --muted: #a5adbb; --line: #2e3440;
  --bg: #0f1218; --panel: #171b23; --code: #11151c; --user: #5fd39a; --assistant: #7fb0ff;
  --tool: #e3b45c; --summary: #c3a2ff; --error: #ff8f86; --del: #3d1f22; --ins: #173326;
  --accent: #7fb0ff; } }
body { margin: 0 auto; max-width: 56rem; padding: 1.5rem; background: var(--bg); color: var(--ink);
  font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
a { color: var(--accent); }
h1 { font-size: 1.5rem; margin: 0 0 .25rem; }
.facts { color: var(--muted); margin: 0 0 1.5rem; padding: 0; list-style: none; }
code, pre, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 13px; }
article { background: var(--panel); border: 1px solid var(--line); border-left: 3px solid var(--line);
  border-radius: 6px; padding: .6rem .9rem; margin: .6rem 0; overflow-wrap: anywhere; }
article > header { display: flex; gap: .6rem; align-items: baseline; margin-bottom: .3rem; }
article > header .who { font-weight: 600; }
article > header .id { color: var(--muted); font-size: 12px; margin-left: auto; }
.msg-user { border-left-color: var(--user); } .msg-user .who { color: var(--user); }
.msg-assistant { border-left-color: var(--assistant); } .msg-assistant .who { color: var(--assistant); }
.msg-tool { border-left-color: var(--tool); } .msg-tool .who { color: var(--tool); }
.msg-summary { border-left-color: var(--summary); } .msg-summary .who { color: var(--summary); }
.msg-note { color: var(--muted); font-size: 13px; margin: .3rem 0; }
.continues { color: var(--muted); font-size: 13px; margin: 1.2rem 0 0; border-top: 1px dashed var(--line);
  padding-top: .4rem; }
.error { color: var(--error); }
pre { background: var(--code); border: 1px solid var(--line); border-radius: 6px; padding: .5rem;
  overflow-x: auto; white-space: pre-wrap; }
pre code { background: none; padding: 0; }
.md code { background: var(--code); padding: 0 3px; border-radius: 3px; }
.md table { border-collapse: collapse; } .md th, .md td { border: 1px solid var(--line); padding: 2px 6px; }
.md blockquote { margin: .3rem 0; padding-left: .6rem; border-left: 3px solid var(--line);
  color: var(--muted); }
details > summary { cursor: pointer; }
.excerpt-head { color: var(--muted); }
.diff { border: 1px solid var(--line); border-radius: 6px; overflow: auto; font-size: 12px; }
.diff div { white-space: pre-wrap; padding: 0 6px; font-family: ui-monospace, Menlo, Consolas, monospace; }
.diff .del { background: var(--del); } .diff .ins { background: var(--ins); }
.diff .hunk { color: var(--muted); }
.hl .k, .hl .kn, .hl .kd, .hl .kc, .hl .kr, .hl .kt { color: #7a2596; font-weight: 600; }
.hl .s, .hl .s1, .hl .s2, .hl .sb, .hl .sd { color: #0a6e2f; }
.hl .c, .hl .c1, .hl .cm, .hl .ch { color: #5d6573; font-style: italic; }
.hl .m, .hl .mi, .hl .mf { color: #8f4400; } .hl .nf, .hl .nc { color: #1f5bd1; }
img.inline-image { max-width: 100%; max-height: 480px; border: 1px solid var(--line); border-radius: 6px; }
"""


def html_document(info: DocumentInfo, entries: Iterable[Mapping[str, Any]]) -> Iterator[str]:
    """Yield one self-contained HTML page: inline style, inline images, no scripts, nothing fetched."""
    title = html.escape(info.title)
    yield (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<meta name="referrer" content="no-referrer">\n'
        f"<title>{title}</title>\n<style>{_STYLE}</style>\n</head>\n<body>\n"
        f'<h1>{title}</h1>\n<ul class="facts">'
        f"<li>Session <code>{html.escape(info.session_id)}</code></li>"
        + (f"<li>Working directory <code>{html.escape(info.cwd)}</code></li>" if info.cwd else "")
        + f"<li>{_html_scope(info)}</li></ul>\n<main>\n"
    )
    calls: dict[str, tuple[str, Any]] = {}
    previous: str | None = None
    for entry in entries:
        # Rendered in order even when not shown, so a tool result finds its call.
        rendered = render_entry(dict(entry), calls)
        body = _html_entry(entry, rendered)
        if body is None:
            continue
        entry_id = _str(entry.get("id"))
        parent = entry.get("parentId")
        if previous is not None and parent != previous:
            target = _str(parent)
            where = (
                f'<a href="#e-{html.escape(target)}"><code>{html.escape(target)}</code></a>'
                if target
                else "the root"
            )
            yield f'<p class="continues">Another branch, continuing from {where}:</p>\n'
        yield body + "\n"
        previous = entry_id
    yield "</main>\n</body>\n</html>\n"


def _html_scope(info: DocumentInfo) -> str:
    if info.scope == "tree":
        return "The whole tree, branch by branch"
    return f"The branch from the root to <code>{html.escape(info.leaf_id or '')}</code>"


def _card(kind: str, title: str, entry_id: str, body: str, meta: str = "") -> str:
    extra = f' <span class="meta">{html.escape(meta)}</span>' if meta else ""
    return (
        f'<article id="e-{html.escape(entry_id)}" class="msg msg-{kind}">'
        f'<header><span class="who">{html.escape(title)}</span>{extra}'
        f'<span class="id mono">{html.escape(entry_id)}</span></header>{body}</article>'
    )


def _html_entry(entry: Mapping[str, Any], rendered: Mapping[str, Any]) -> str | None:
    kind = entry.get("type")
    entry_id = _str(entry.get("id"))
    if kind == "message" and isinstance(entry.get("message"), Mapping):
        return _html_message(entry["message"], rendered, entry_id)
    if kind in ("compaction", "branch_summary"):
        title = "Compaction summary" if kind == "compaction" else "Branch summary"
        return _card("summary", title, entry_id, f'<div class="md">{rendered.get("summary", "")}</div>')
    if kind == "custom_message":
        title = _str(entry.get("customType")) or "Custom message"
        return _card("custom", title, entry_id, _html_content(entry.get("content"), rendered))
    note = _markdown_entry(entry)
    if note is None:
        return None
    head, _ = note
    return _card("note", head, entry_id, f'<p class="msg-note">{html.escape(_note_text(entry))}</p>')


def _note_text(entry: Mapping[str, Any]) -> str:
    kind = entry.get("type")
    if kind == "model_change":
        return f"{_str(entry.get('provider'))}/{_str(entry.get('modelId'))}"
    if kind == "thinking_level_change":
        return _str(entry.get("thinkingLevel"))
    if kind == "session_info":
        return _str(entry.get("name"))
    label = _str(entry.get("label"))
    target = _str(entry.get("targetId"))
    return f"{target} labelled “{label}”" if label else f"{target} unlabelled"


def _html_message(message: Mapping[str, Any], rendered: Mapping[str, Any], entry_id: str) -> str:
    role = _str(message.get("role"))
    if role == "toolResult":
        name = _str(rendered.get("kind")) or _str(message.get("toolName")) or "tool"
        title = f"{'Tool error' if message.get('isError') else 'Result'} · {name}"
        path = _str(rendered.get("path"))
        content = message.get("content")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": _str(content)}]
        parts = rendered.get("blocks") or []
        out = []
        for index, block in enumerate(blocks):
            part = parts[index] if index < len(parts) else None
            if isinstance(block, Mapping) and block.get("type") == "image":
                out.append(_image(block))
            elif isinstance(part, str):
                out.append(part)
            elif isinstance(block, Mapping):
                out.append(f'<pre class="plain">{html.escape(_str(block.get("text")))}</pre>')
        body = f"<details><summary>Output</summary>{''.join(out)}</details>"
        return _card("tool", title, entry_id, body, path)
    if role == "bashExecution":
        body = _plain(f"$ {_str(message.get('command'))}\n{_str(message.get('output'))}")
        return _card("tool", "Bash", entry_id, body)
    body = _html_content(message.get("content"), rendered)
    if role == "assistant":
        error = _str(message.get("errorMessage"))
        if error:
            body += f'<p class="error">{html.escape(error)}</p>'
        return _card("assistant", "Assistant", entry_id, body, _str(message.get("model")))
    if role == "user":
        return _card("user", "User", entry_id, body)
    if role == "system":
        return _card(
            "note",
            "System",
            entry_id,
            f'<pre class="plain">{html.escape(_text_of(message.get("content")))}</pre>',
        )
    return _card("custom", _str(message.get("customType")) or role or "Message", entry_id, body)


def _html_content(content: Any, rendered: Mapping[str, Any]) -> str:
    parts = rendered.get("blocks") or []
    if isinstance(content, str):
        return f'<div class="md">{parts[0]}</div>' if parts and isinstance(parts[0], str) else _plain(content)
    if not isinstance(content, list):
        return ""
    out: list[str] = []
    for index, block in enumerate(content):
        if not isinstance(block, Mapping):
            continue
        part = parts[index] if index < len(parts) else None
        kind = block.get("type")
        if kind == "text":
            out.append(
                f'<div class="md">{part}</div>' if isinstance(part, str) else _plain(_str(block.get("text")))
            )
        elif kind == "image":
            out.append(_image(block))
        elif kind == "thinking":
            thinking = "(redacted)" if block.get("redacted") else _str(block.get("thinking"))
            out.append(f"<details><summary>Thinking</summary>{_plain(thinking)}</details>")
        elif kind == "toolCall":
            name = html.escape(_str(block.get("name")))
            path = html.escape(_str(part.get("path"))) if isinstance(part, Mapping) else ""
            inner = part.get("html", "") if isinstance(part, Mapping) else ""
            head = f"<code>{name}</code>" + (f' <span class="mono">{path}</span>' if path else "")
            out.append(f'<details class="tool-call" open><summary>{head}</summary>{inner}</details>')
    return "".join(out)


def _image(block: Mapping[str, Any]) -> str:
    """An image block inline as a ``data:`` URL; anything but a known picture type in clean base64
    is named only."""
    mime = _str(block.get("mimeType"))
    data = "".join(_str(block.get("data")).split())
    if mime not in IMAGE_TYPES or not _BASE64.match(data) or not _decodes(data):
        return f'<p class="msg-note">[image {html.escape(mime)}]</p>'
    return f'<img class="inline-image" alt="image from the session" src="data:{mime};base64,{data}">'


def _decodes(data: str) -> bool:
    try:
        base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


def _plain(text: str) -> str:
    return f'<pre class="plain">{html.escape(text)}</pre>'


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            _str(b.get("text")) for b in content if isinstance(b, Mapping) and b.get("type") == "text"
        )
    return ""


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""
