"""Messages as safe HTML: CommonMark + GFM tables and autolinks (markdown-it-py), code highlighted by
Pygments, tool calls by kind (edit as a diff, read as a file excerpt, bash as a command).

Session content is untrusted; only this module turns it into markup. Markdown output passes through the
nh3 sanitizer; markup built here (code blocks, diffs, paths) escapes every piece of session text itself.
"""

from __future__ import annotations

import difflib
import html
import json
import re
from functools import lru_cache
from typing import Any

import nh3
from linkify_it import LinkifyIt
from markdown_it import MarkdownIt
from markdown_it.token import Token
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexer import Lexer
from pygments.lexers import BashLexer, get_lexer_by_name
from pygments.util import ClassNotFound

__all__ = ["render_markdown", "render_message", "render_records"]

HIGHLIGHT_LIMIT = 5_000  # characters; longer code is shown plain (highlighting is the slow part)
RESULT_LIMIT = 2_500  # characters of a tool result worth highlighting; longer ones stay plain text
MARKDOWN_LIMIT = 200_000  # characters; longer text is shown as plain text
DIFF_LIMIT = 4_000  # lines of a diff drawn

_TAGS = {
    "a", "p", "br", "hr", "em", "strong", "del", "s", "code", "pre", "span", "div", "blockquote",
    "ul", "ol", "li", "h1", "h2", "h3", "h4", "h5", "h6", "table", "thead", "tbody", "tr", "th", "td",
}  # fmt: skip
_ATTRIBUTES = {
    "a": {"href", "title"},
    "span": {"class"},
    "code": {"class"},
    "pre": {"class", "data-lang"},
    "div": {"class"},
    "ol": {"start"},
    "li": {"class"},
    "ul": {"class"},
}
_FORMATTER = HtmlFormatter(nowrap=True)
_BASH = BashLexer()


class _RealLinks(LinkifyIt):  # type: ignore[misc]
    """Link only what is surely an address: a URL with a scheme (``https://``, ``mailto:``) or one that
    starts with ``www.``. File names are not links, though ``.py`` or ``.md`` are top-level domains:
    ``images.py`` would otherwise link to an outside site."""

    def match(self, text: str) -> list[Any] | None:
        found = [m for m in super().match(text) or [] if _real(m)]
        return found or None

    def test(self, text: str) -> bool:
        return bool(super().test(text) and self.match(text))

    def match_at_start(self, text: str) -> Any:
        found = super().match_at_start(text)
        return found if found is not None and _real(found) else None


def _real(match: Any) -> bool:
    schema = (match.schema or "").lower()
    if schema in ("http:", "https:", "ftp:", "mailto:"):
        return True
    return not schema and match.raw.lower().startswith("www.")


_md = MarkdownIt("commonmark", {"html": False, "linkify": True, "typographer": False}).enable(
    ["table", "strikethrough", "linkify"]
)
_md.linkify = _RealLinks().set({"fuzzy_email": False})


def _code_block(code: str, lexer: Lexer | None, lang: str = "") -> str:
    """Return a highlighted ``<pre>`` (plain when no lexer or the code is too long)."""
    attrs = f' data-lang="{html.escape(lang)}"' if lang else ""
    if lexer is None or len(code) > HIGHLIGHT_LIMIT:
        return f'<pre class="hl"{attrs}><code>{html.escape(code)}</code></pre>'
    return f'<pre class="hl"{attrs}><code>{_highlight(code, lexer)}</code></pre>'


@lru_cache(maxsize=2048)
def _highlight(code: str, lexer: Lexer) -> str:
    # Lexers are cached too, so the same code with the same language hits this cache.
    return highlight(code, lexer, _FORMATTER)


@lru_cache(maxsize=256)
def _lexer_for_lang(lang: str) -> Lexer | None:
    if not lang:
        return None
    try:
        return get_lexer_by_name(lang)
    except ClassNotFound:
        return None


# Pygments' own lookup by file name matches every lexer's patterns (over a second the first time), so
# common extensions map to a lexer name directly; other files are shown plain.
_EXTENSIONS = {
    "py": "python", "pyi": "python", "js": "javascript", "mjs": "javascript", "cjs": "javascript",
    "ts": "typescript", "tsx": "tsx", "jsx": "jsx", "json": "json", "jsonl": "json", "html": "html",
    "htm": "html", "css": "css", "scss": "scss", "md": "markdown", "sh": "bash", "bash": "bash",
    "zsh": "bash", "toml": "toml", "yaml": "yaml", "yml": "yaml", "ini": "ini", "cfg": "ini", "sql": "sql",
    "rs": "rust", "go": "go", "java": "java", "kt": "kotlin", "c": "c", "h": "c", "cc": "cpp", "cpp": "cpp",
    "hpp": "cpp", "cs": "csharp", "rb": "ruby", "php": "php", "swift": "swift", "xml": "xml", "lua": "lua",
    "diff": "diff", "patch": "diff", "dockerfile": "docker", "makefile": "make", "txt": "text",
}  # fmt: skip


def _lexer_for_path(path: str) -> Lexer | None:
    name = path.rsplit("/", 1)[-1].lower()
    extension = name.rsplit(".", 1)[-1] if "." in name else name
    alias = _EXTENSIONS.get(extension)
    return _lexer_for_lang(alias) if alias else None


# File names and paths in prose are shown as code, as a reader of a coding session expects: a name with
# a known extension (``images.py``, ``src/app/feeds.py``) or a path from ``/``, ``./``, ``../`` or ``~/``.
# "Node.js"-style product names (a capitalized word and .js) stay text, and one-letter extensions (.c,
# .h) are too like abbreviations to be told apart in prose.
_NOT_IN_PROSE = {"dockerfile", "makefile"}
_FILE_NAME = re.compile(
    r"(?<![\w/.@:~-])("
    r"(?:~|\.{1,2})?/[\w.-]+(?:/[\w.-]+)+/?"
    r"|(?:\.{1,2}/)?(?:[\w-][\w.-]*/)*[\w-][\w.-]*\.(?:"
    + "|".join(
        sorted((e for e in _EXTENSIONS if len(e) > 1 and e not in _NOT_IN_PROSE), key=len, reverse=True)
    )
    + r"|lock|log|csv|env|vue|svelte|scala|dart|ex|exs|hs|ml|gradle|tf))(?![\w/-]|\.\w)"
)
_PRODUCT = re.compile(r"[A-Z][a-z]+\.js")


def _file_names(state: Any) -> None:
    for block in state.tokens:
        if block.type != "inline" or not block.children:
            continue
        children: list[Token] = []
        in_link = 0
        for token in block.children:
            in_link += token.type == "link_open"
            in_link -= token.type == "link_close"
            if token.type != "text" or in_link or not _FILE_NAME.search(token.content):
                children.append(token)
                continue
            end = 0
            for found in _FILE_NAME.finditer(token.content):
                if _PRODUCT.fullmatch(found.group(1)):
                    continue
                if found.start() > end:
                    children.append(_text_token(token.content[end : found.start()], token.level))
                code = Token("code_inline", "code", 0, markup="`", content=found.group(1), level=token.level)
                children.append(code)
                end = found.end()
            if end < len(token.content):
                children.append(_text_token(token.content[end:], token.level))
        block.children = children


def _text_token(content: str, level: int) -> Token:
    return Token("text", "", 0, content=content, level=level)


_md.core.ruler.after("linkify", "file_names", _file_names)


def _fence(self: Any, tokens: Any, idx: int, options: Any, env: Any) -> str:
    token = tokens[idx]
    lang = token.info.strip().split()[0] if token.info.strip() else ""
    return _code_block(token.content, _lexer_for_lang(lang), lang)


def _code(self: Any, tokens: Any, idx: int, options: Any, env: Any) -> str:
    return _code_block(tokens[idx].content, None)


_md.add_render_rule("fence", _fence)


def _image(self: Any, tokens: Any, idx: int, options: Any, env: Any) -> str:
    # Images in message text are not loaded from elsewhere: the page shows a link to them instead.
    token = tokens[idx]
    alt = html.escape(token.content or "image")
    return f'<a href="{html.escape(str(token.attrGet("src") or ""))}">[image: {alt}]</a>'


_md.add_render_rule("code_block", _code)
_md.add_render_rule("image", _image)


def _clean(markup: str) -> str:
    return nh3.clean(
        markup,
        tags=_TAGS,
        attributes=_ATTRIBUTES,
        url_schemes={"http", "https", "mailto"},
        link_rel="noopener noreferrer nofollow",
        strip_comments=True,
    )


@lru_cache(maxsize=8192)
def render_markdown(text: str) -> str:
    """Return sanitized HTML for a markdown text (raw HTML in the text is shown as text)."""
    if len(text) > MARKDOWN_LIMIT:
        return f'<pre class="plain">{html.escape(text)}</pre>'
    return _clean(_md.render(text))


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _diff(old: str, new: str) -> str:
    lines = list(difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=3))[2:]
    out = []
    for line in lines[:DIFF_LIMIT]:
        kind = {"@": "hunk", "-": "del", "+": "ins"}.get(line[:1], "")
        out.append(f'<div class="{kind}">{html.escape(line) or " "}</div>')
    if len(lines) > DIFF_LIMIT:
        out.append(f'<div class="hunk">… {len(lines) - DIFF_LIMIT} more lines</div>')
    return f'<div class="diff">{"".join(out) or "<div>(no change)</div>"}</div>'


def _path_head(path: str, extra: str = "") -> str:
    if not path:
        return ""
    return f'<div class="excerpt-head mono path">{html.escape(path)}{html.escape(extra)}</div>'


def _arguments(args: Any) -> str:
    """Arguments of an unknown tool: one line per key, multi-line strings as real lines."""
    if not isinstance(args, dict):
        return f'<pre class="plain">{html.escape(json.dumps(args, indent=2, ensure_ascii=False))}</pre>'
    parts = []
    for key, value in args.items():
        shown = value if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False)
        parts.append(f'<div class="arg"><code>{html.escape(str(key))}</code></div>')
        parts.append(f'<pre class="plain">{html.escape(shown)}</pre>')
    return "".join(parts)


def render_tool_call(name: str, args: Any) -> dict[str, Any]:
    """Return ``{"kind", "path"?, "html"}`` for a tool call, shaped by what the tool does."""
    a = args if isinstance(args, dict) else {}
    path = _text(a.get("path") or a.get("file_path"))
    if name == "edit":
        listed = a.get("edits")
        edits = listed if isinstance(listed, list) else [a]
        diffs = "".join(
            _diff(_text(e.get("oldText")), _text(e.get("newText"))) for e in edits if isinstance(e, dict)
        )
        return {"kind": "edit", "path": path, "html": _path_head(path) + diffs}
    if name == "write":
        body = _code_block(_text(a.get("content")), _lexer_for_path(path) if path else None)
        return {"kind": "write", "path": path, "html": _path_head(path) + body}
    if name == "read":
        span = ""
        offset, limit = a.get("offset"), a.get("limit")
        start = offset if isinstance(offset, int) else 1
        if isinstance(limit, int):
            span = f"  lines {start}–{start + limit - 1}"
        elif isinstance(offset, int):
            span = f"  from line {start}"
        return {"kind": "read", "path": path, "html": _path_head(path, span)}
    if name == "bash":
        command = _text(a.get("command"))
        return {"kind": "bash", "command": command, "html": _code_block(command, _BASH, "bash")}
    return {"kind": "other", "html": _arguments(args)}


def _tool_result(message: dict[str, Any], calls: dict[str, tuple[str, Any]]) -> dict[str, Any]:
    """A tool result: a ``read`` of a known path is highlighted as that file; other results, and long
    ones, are left to the page as plain text (most results are long and stay folded)."""
    name, args = calls.get(_text(message.get("toolCallId")), (_text(message.get("toolName")), None))
    path = _text(args.get("path")) if name == "read" and isinstance(args, dict) else ""
    out: list[str | None] = []
    content = message.get("content")
    blocks = content if isinstance(content, list) else [{"type": "text", "text": _text(content)}]
    lexer = _lexer_for_path(path) if path else None
    for block in blocks:
        text = _text(block.get("text")) if isinstance(block, dict) and block.get("type") == "text" else None
        if lexer is None or text is None or len(text) > RESULT_LIMIT:
            out.append(None)
        else:
            # Pygments escapes every token it writes: its output needs no sanitizing pass.
            out.append(_path_head(path) + _code_block(text, lexer))
    return {"kind": name or "tool", "path": path, "blocks": out}


def render_message(message: Any, calls: dict[str, tuple[str, Any]] | None = None) -> dict[str, Any]:
    """Return the rendered parts of one message: ``blocks`` parallel to its content list."""
    calls = {} if calls is None else calls
    if not isinstance(message, dict):
        return {}
    role = message.get("role")
    if role == "toolResult":
        return _tool_result(message, calls)
    if role in ("compactionSummary", "branchSummary"):
        return {"summary": render_markdown(_text(message.get("summary")))}
    if role == "bashExecution":
        return {"html": _code_block(_text(message.get("command")), _BASH, "bash")}
    content = message.get("content")
    if isinstance(content, str):
        return {"blocks": [render_markdown(content)]}
    if not isinstance(content, list):
        return {}
    blocks: list[Any] = []
    for block in content:
        if not isinstance(block, dict):
            blocks.append(None)
        elif block.get("type") == "text":
            blocks.append(render_markdown(_text(block.get("text"))))
        elif block.get("type") == "toolCall":
            name = _text(block.get("name"))
            calls[_text(block.get("id"))] = (name, block.get("arguments"))
            blocks.append(render_tool_call(name, block.get("arguments")))
        else:
            blocks.append(None)
    return {"blocks": blocks}


def render_entry(entry: Any, calls: dict[str, tuple[str, Any]]) -> dict[str, Any]:
    """Rendered parts of a session entry (messages, summaries, custom messages)."""
    if not isinstance(entry, dict):
        return {}
    kind = entry.get("type")
    if kind == "message":
        return render_message(entry.get("message"), calls)
    if kind in ("branch_summary", "compaction"):
        return {"summary": render_markdown(_text(entry.get("summary")))}
    if kind == "custom_message":
        return render_message({"role": "custom", "content": entry.get("content")}, calls)
    return {}


def render_records(records: list[dict[str, Any]]) -> None:
    """Add ``rendered`` to each entry record (API shape), in order so tool results find their calls."""
    calls: dict[str, tuple[str, Any]] = {}
    for record in records:
        record["rendered"] = render_entry(record.get("entry"), calls)
