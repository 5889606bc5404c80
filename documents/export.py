"""A branch or a whole tree as a document to read: Markdown, or one standalone HTML page.

Both are built from the stored entries (verbatim Pi payloads) in the order given: a branch root → leaf,
a tree depth first with each branch after the one before it. An entry whose parent is not the entry
printed just before it says where it continues from, so a tree reads as a sequence of branches.
Both open with the facts of the entries they hold (``facts.gather``) and name each entry's author and
each answer's cost; the HTML adds an outline of links to every entry.

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
from dataclasses import dataclass, field
from typing import Any

from documents.facts import (
    Facts,
    SystemParts,
    Tool,
    carries_system_prompt,
    gather,
    message_cost,
    money,
    system_parts,
    when,
)
from documents.rendering import render_entry
from pitree.images import IMAGE_TYPES

__all__ = ["DocumentInfo", "html_document", "markdown_document", "tree_order"]

_BASE64 = re.compile(r"^[A-Za-z0-9+/]*={0,2}$")


@dataclass(frozen=True, slots=True, kw_only=True)
class DocumentInfo:
    """What the document's head says: which session, which part of it, and where it ends; and what only
    piweb knows of the entries: who wrote each, and what each assistant message cost."""

    title: str
    session_id: str
    cwd: str
    scope: str  # "branch" or "tree"
    # Where the branch ends; in a tree, the viewer's leaf, whose branch the outline marks.
    leaf_id: str | None
    created: str = ""  # the session's ISO time stamp
    authors: Mapping[str, str] = field(default_factory=dict)  # entry id -> "by alice", "imported by …"
    costs: Mapping[str, float] = field(default_factory=dict)  # entry id -> dollars (assistant messages)


@dataclass(frozen=True, slots=True)
class _Prompt:
    """A system-prompt entry's place: the first on its branch states the prompt, later ones update it."""

    leading: dict[str, bool]

    @classmethod
    def of(cls, entries: Sequence[Mapping[str, Any]]) -> _Prompt:
        # Parents come before their children in both orders, so one pass knows what lies above.
        above: dict[str, bool] = {}
        leading: dict[str, bool] = {}
        for entry in entries:
            entry_id = _str(entry.get("id"))
            inherited = above.get(_str(entry.get("parentId")), False)
            leading[entry_id] = not inherited
            above[entry_id] = inherited or carries_system_prompt(entry)
        return cls(leading)

    def title(self, entry_id: str) -> str:
        return "System prompt" if self.leading.get(entry_id, True) else "System prompt update"


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
    """Yield the document in Markdown: the head's facts, then one piece per entry."""
    shown = list(entries)  # the head counts what follows
    facts = gather(shown, info.costs)
    prompt = _Prompt.of(shown)
    yield f"# {_inline(info.title)}\n\n"
    for name, value in _head_facts(info, facts):
        yield f"- {name}: {_inline(value)}\n"
    yield f"- {_scope_text(info)}\n"
    previous: str | None = None
    for entry in shown:
        entry_id = _str(entry.get("id"))
        body = _markdown_entry(entry, prompt.title(entry_id))
        if body is None:
            continue
        head, text = body
        parent = entry.get("parentId")
        yield f"\n## {head} · `{_inline(entry_id)}`\n\n"
        byline = _byline(info, entry)
        if byline:
            yield f"*{_inline(byline)}*\n\n"
        if previous is not None and parent != previous:
            yield f"*Continues from `{_inline(_str(parent)) or 'the root'}`.*\n\n"
        yield text.rstrip("\n") + "\n"
        previous = entry_id


def _head_facts(info: DocumentInfo, facts: Facts) -> list[tuple[str, str]]:
    """The head's facts as (name, text), in the order both formats list them."""
    rows = [("Date", when(info.created) if info.created else "unknown"), ("Session", info.session_id)]
    if info.cwd:
        rows.append(("Working directory", info.cwd))
    rows += [
        ("Models", ", ".join(facts.models) or "none"),
        ("Messages", facts.messages_text()),
        ("Tool calls", f"{facts.tool_calls:,}"),
        ("Tokens", facts.tokens_text()),
        ("Cost", money(facts.cost)),
    ]
    return rows


def _byline(info: DocumentInfo, entry: Mapping[str, Any]) -> str:
    """Who wrote the entry and, for an assistant message, what it cost."""
    parts = [info.authors.get(_str(entry.get("id")), "")]
    cost = message_cost(entry, info.costs)
    if cost is not None:
        parts.append(money(cost))
    return " · ".join(p for p in parts if p)


def _scope_text(info: DocumentInfo) -> str:
    if info.scope == "tree":
        return "The whole tree, branch by branch"
    return f"The branch from the root to `{_inline(info.leaf_id or '')}`"


def _markdown_entry(entry: Mapping[str, Any], prompt_title: str = "System prompt") -> tuple[str, str] | None:
    kind = entry.get("type")
    if kind == "message" and isinstance(entry.get("message"), Mapping):
        if entry["message"].get("role") == "system":
            return prompt_title, _markdown_system(system_parts(entry["message"]))
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


def _markdown_system(parts: SystemParts) -> str:
    """The prompt quoted (its own headings stay inside the entry), then its sections by name and the
    tools it adds or removes."""
    out: list[str] = []
    if parts.text:
        out.append(_quoted(parts.text))
    for name, value in parts.sections:
        if value is None:
            out.append(f"Section `{_inline(name)}` removed.")
        else:
            out.append(f"### Section `{_inline(name)}`\n\n" + _quoted(value))
    if parts.tools_added:
        out.append("### Tools\n\n" + "\n".join(_markdown_tool(tool) for tool in parts.tools_added))
    if parts.tools_removed:
        out.append("Tools removed: " + ", ".join(f"`{_inline(name)}`" for name in parts.tools_removed))
    return "\n\n".join(out or ["*(empty system message)*"]) + "\n"


def _quoted(text: str) -> str:
    return "\n".join(f"> {line}" if line else ">" for line in _inert(text).split("\n"))


def _markdown_tool(tool: Tool) -> str:
    line = f"- `{_inline(tool.name)}`" + (f" — {_inline(tool.description)}" if tool.description else "")
    for parameter in tool.parameters:
        need = "required" if parameter.required else "optional"
        line += f"\n  - `{_inline(parameter.name)}` ({_inline(parameter.type)}, {need})"
        if parameter.description:
            line += f" — {_inline(parameter.description)}"
    return line


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
h1 { font-size: 1.5rem; margin: 0 0 .5rem; overflow-wrap: anywhere; }
.facts { display: grid; grid-template-columns: max-content minmax(0, 1fr); gap: .1rem .8rem;
  margin: 0 0 1rem; font-size: 14px; }
.facts dt { color: var(--muted); } .facts dd { margin: 0; overflow-wrap: anywhere; }
.scope { color: var(--muted); font-size: 14px; margin: 0 0 1rem; }
.outline { background: var(--panel); border: 1px solid var(--line); border-radius: 6px; padding: .4rem .7rem;
  margin: 0 0 1rem; }
.outline > summary { font-weight: 600; }
.outline nav { max-height: 50vh; overflow: auto; font-size: 13px; }
.outline ul { list-style: none; margin: 0; padding: 0 0 0 .6rem; }
.outline nav > ul { padding-left: 0; }
.outline ul ul { border-left: 1px solid var(--line); margin: .1rem 0 .3rem .3rem; }
.outline a { display: block; white-space: nowrap; overflow: hidden; text-overflow: ellipsis;
  color: var(--muted); text-decoration: none; padding: 1px 4px; border-radius: 3px; }
.outline a:hover, .outline a:focus { background: var(--code); color: var(--ink); }
.outline a.on-branch { color: var(--ink); border-left: 2px solid var(--accent); }
.outline a[aria-current] { font-weight: 600; }
.outline .kind { font-weight: 600; }
.outline-key { color: var(--muted); font-size: 12px; margin: .2rem 0; }
article:target { outline: 2px solid var(--accent); }
article > header .by, article > header .cost { color: var(--muted); font-size: 13px; }
.system-section > summary, .tools > summary { color: var(--muted); }
.tools ul { margin: .3rem 0; padding-left: 1.2rem; } .tools li { margin: .2rem 0; }
.tools .params { color: var(--muted); font-size: 13px; }
@media (min-width: 72rem) {
  body { max-width: 86rem; display: grid; grid-template-columns: minmax(15rem, 22rem) minmax(0, 1fr);
    column-gap: 1.5rem; align-items: start; }
  body > header { grid-column: 1 / -1; }
  .outline { position: sticky; top: .5rem; }
  .outline nav { max-height: calc(100vh - 5rem); }
}
@media (max-width: 40rem) { body { padding: .8rem; } article > header { flex-wrap: wrap; } }
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
    """Yield one self-contained HTML page: inline style, inline images, no scripts, nothing fetched.

    The head's facts, an outline of the entries (nested lists of links, one nested list per branch
    point, the viewer's branch marked), then the entries. What a reader folds (thinking, tool output,
    the prompt's sections) is a ``details`` element, so it opens and closes without a script.
    """
    shown = list(entries)  # the head and the outline come before the entries
    facts = gather(shown, info.costs)
    title = html.escape(info.title)
    head = "".join(
        f"<dt>{html.escape(name)}</dt><dd>{html.escape(value)}</dd>"
        for name, value in _head_facts(info, facts)
    )
    yield (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<meta name="referrer" content="no-referrer">\n'
        f"<title>{title}</title>\n<style>{_STYLE}</style>\n</head>\n<body>\n"
        f'<header><h1>{title}</h1>\n<dl class="facts">{head}</dl>\n'
        f'<p class="scope">{_html_scope(info)}</p></header>\n'
    )
    yield from _outline(info, shown)
    yield "<main>\n"
    prompt = _Prompt.of(shown)
    calls: dict[str, tuple[str, Any]] = {}
    previous: str | None = None
    for entry in shown:
        # Rendered in order even when not shown, so a tool result finds its call.
        rendered = render_entry(dict(entry), calls)
        body = _html_entry(entry, rendered, info, prompt)
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


def _outline(info: DocumentInfo, entries: Sequence[Mapping[str, Any]]) -> Iterator[str]:
    """The entries as nested lists of links. A straight run stays one list; an entry with more than one
    child holds one nested list per child. Entries without a card hang their children on the nearest
    ancestor that has one. Built with a stack: a 100k-deep path needs no recursion."""
    parents: dict[str, str] = {}
    shown: dict[str, Mapping[str, Any]] = {}
    children: dict[str | None, list[str]] = {}
    for entry in entries:
        entry_id = _str(entry.get("id"))
        parent: str | None = _str(entry.get("parentId")) or None
        parents[entry_id] = parent or ""
        passed: set[str] = set()
        while parent and parent not in shown and parent not in passed:
            passed.add(parent)  # a hand-made file may loop
            parent = parents.get(parent) or None  # skipped or outside the document
        if parent and parent not in shown:
            parent = None
        if _shows(entry) and entry_id not in shown:
            shown[entry_id] = entry
            children.setdefault(parent, []).append(entry_id)
    if not shown:
        return
    # The marked branch: root to the branch's end, or to the viewer's leaf in a tree.
    branch: set[str] = set()
    step = info.leaf_id
    while step and step not in branch:
        branch.add(step)
        step = parents.get(step)
    yield (
        f'<details class="outline" open><summary>Entries ({len(shown):,})</summary>\n'
        '<p class="outline-key">A link per entry; the marked ones are the current branch.</p>\n'
        '<nav aria-label="Entries">'
    )
    stack: list[str | tuple[str]] = [(root,) for root in reversed(children.get(None, []))]
    while stack:
        task = stack.pop()
        if isinstance(task, str):
            yield task
            continue
        yield "<ul>"
        current = task[0]
        while True:
            yield f"<li>{_outline_link(shown[current], current in branch, current == info.leaf_id)}"
            kids = children.get(current, [])
            if len(kids) == 1:
                yield "</li>"
                current = kids[0]
                continue
            if not kids:
                yield "</li></ul>"
            else:
                stack.append("</li></ul>")
                stack.extend((kid,) for kid in reversed(kids))
            break
    yield "</nav></details>\n"


def _outline_link(entry: Mapping[str, Any], on_branch: bool, leaf: bool) -> str:
    entry_id = _str(entry.get("id"))
    kind, text = _outline_words(entry)
    attributes = ' class="on-branch"' if on_branch else ""
    if leaf:
        attributes += ' aria-current="location"'
    words = html.escape(" ".join(text.split())[:120])
    return (
        f'<a href="#e-{html.escape(entry_id)}"{attributes}><span class="kind">{html.escape(kind)}</span>'
        f"{': ' + words if words else ''}</a>"
    )


def _outline_words(entry: Mapping[str, Any]) -> tuple[str, str]:
    """What an outline line says: the entry's kind, and the start of its text."""
    kind = entry.get("type")
    message = entry.get("message")
    if kind == "message" and isinstance(message, Mapping):
        role = _str(message.get("role"))
        if role == "toolResult":
            return "Result", _str(message.get("toolName"))
        if role == "bashExecution":
            return "Bash", _str(message.get("command"))
        if role == "system":
            parts = system_parts(message)
            return "System prompt", parts.text or ", ".join(name for name, _ in parts.sections)
        content = message.get("content")
        text = _text_of(content)
        if not text and isinstance(content, list):
            names = [
                _str(b.get("name")) for b in content if isinstance(b, Mapping) and b.get("type") == "toolCall"
            ]
            text = "→ " + ", ".join(names) if names else ""
        return {"user": "User", "assistant": "Assistant"}.get(role) or role or "Message", text
    if kind in ("compaction", "branch_summary"):
        return ("Compaction" if kind == "compaction" else "Branch summary"), _str(entry.get("summary"))
    if kind == "custom_message":
        return _str(entry.get("customType")) or "Custom message", _text_of(entry.get("content"))
    note = _markdown_entry(entry)
    return (note[0] if note else "Entry"), _note_text(entry)


def _shows(entry: Mapping[str, Any]) -> bool:
    """Whether the entry gets a card (both formats show the same entries)."""
    return _markdown_entry(entry) is not None


def _card(kind: str, title: str, entry_id: str, body: str, meta: str = "", byline: str = "") -> str:
    extra = f' <span class="meta">{html.escape(meta)}</span>' if meta else ""
    extra += f' <span class="by">{html.escape(byline)}</span>' if byline else ""
    return (
        f'<article id="e-{html.escape(entry_id)}" class="msg msg-{kind}">'
        f'<header><span class="who">{html.escape(title)}</span>{extra}'
        f'<span class="id mono">{html.escape(entry_id)}</span></header>{body}</article>'
    )


def _html_entry(
    entry: Mapping[str, Any], rendered: Mapping[str, Any], info: DocumentInfo, prompt: _Prompt
) -> str | None:
    kind = entry.get("type")
    entry_id = _str(entry.get("id"))
    byline = _byline(info, entry)
    if kind == "message" and isinstance(entry.get("message"), Mapping):
        message = entry["message"]
        if message.get("role") == "system":
            body = _html_system(system_parts(message))
            return _card("system", prompt.title(entry_id), entry_id, body, byline=byline)
        return _html_message(message, rendered, entry_id, byline)
    if kind in ("compaction", "branch_summary"):
        title = "Compaction summary" if kind == "compaction" else "Branch summary"
        body = f'<div class="md">{rendered.get("summary", "")}</div>'
        return _card("summary", title, entry_id, body, byline=byline)
    if kind == "custom_message":
        title = _str(entry.get("customType")) or "Custom message"
        return _card("custom", title, entry_id, _html_content(entry.get("content"), rendered), byline=byline)
    note = _markdown_entry(entry)
    if note is None:
        return None
    head, _ = note
    body = f'<p class="msg-note">{html.escape(_note_text(entry))}</p>'
    return _card("note", head, entry_id, body, byline=byline)


def _html_system(parts: SystemParts) -> str:
    """The prompt's text, each named section (open, and folded by a click), the tools with parameters."""
    out: list[str] = []
    if parts.text:
        out.append(_plain(parts.text))
    for name, value in parts.sections:
        label = html.escape(name)
        if value is None:
            out.append(f'<p class="msg-note">Section <code>{label}</code> removed</p>')
        else:
            out.append(
                f'<details class="system-section" open><summary>Section <code>{label}</code></summary>'
                f"{_plain(value)}</details>"
            )
    if parts.tools_added:
        items = "".join(_html_tool(tool) for tool in parts.tools_added)
        count = len(parts.tools_added)
        out.append(
            f'<details class="tools" open><summary>{"Tool" if count == 1 else "Tools"} ({count})</summary>'
            f"<ul>{items}</ul></details>"
        )
    if parts.tools_removed:
        names = ", ".join(f"<code>{html.escape(name)}</code>" for name in parts.tools_removed)
        out.append(f'<p class="msg-note">Tools removed: {names}</p>')
    return "".join(out) or '<p class="msg-note">(empty system message)</p>'


def _html_tool(tool: Tool) -> str:
    description = f" — {html.escape(tool.description)}" if tool.description else ""
    parameters = "".join(
        f"<li><code>{html.escape(p.name)}</code> {html.escape(p.type)}, "
        f"{'required' if p.required else 'optional'}"
        + (f" — {html.escape(p.description)}" if p.description else "")
        + "</li>"
        for p in tool.parameters
    )
    listed = f'<ul class="params">{parameters}</ul>' if parameters else ""
    return f"<li><code>{html.escape(tool.name)}</code>{description}{listed}</li>"


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


def _html_message(message: Mapping[str, Any], rendered: Mapping[str, Any], entry_id: str, byline: str) -> str:
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
        body = f'<details class="output"><summary>Output</summary>{"".join(out)}</details>'
        return _card("tool", title, entry_id, body, path, byline)
    if role == "bashExecution":
        command = html.escape(_str(message.get("command")))
        body = (
            f'<details class="output"><summary>$ <code>{command}</code></summary>'
            f"{_plain(_str(message.get('output')))}</details>"
        )
        return _card("tool", "Bash", entry_id, body, byline=byline)
    body = _html_content(message.get("content"), rendered)
    if role == "assistant":
        error = _str(message.get("errorMessage"))
        if error:
            body += f'<p class="error">{html.escape(error)}</p>'
        return _card("assistant", "Assistant", entry_id, body, _str(message.get("model")), byline)
    if role == "user":
        return _card("user", "User", entry_id, body, byline=byline)
    return _card(
        "custom", _str(message.get("customType")) or role or "Message", entry_id, body, byline=byline
    )


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
            out.append(f'<details class="thinking"><summary>Thinking</summary>{_plain(thinking)}</details>')
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
