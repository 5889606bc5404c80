"""The readable exports' pure builders: the head's facts, the system prompt, the outline, what folds,
authors and costs. No database: the builders take payloads and return text."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from typing import Any

from documents.export import DocumentInfo, html_document, markdown_document, tree_order
from tests.factories import assistant_message, small_tree, user_message

TOOL_READ = {
    "name": "read",
    "description": "Read a file from the working directory",
    "parameters": {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "Path of the file"},
            "limit": {"type": ["integer", "null"]},
        },
        "required": ["path"],
    },
}
TOOL_BASH = {"name": "bash", "description": "Run a shell command", "parameters": {"type": "object"}}


def system_entry(entry_id: str, parent: str | None, **message: Any) -> dict[str, Any]:
    return {
        "type": "message",
        "id": entry_id,
        "parentId": parent,
        "timestamp": "2026-01-02T03:04:05.000Z",
        "message": {"role": "system", "content": "", "timestamp": 1, **message},
    }


def info(**extra: Any) -> DocumentInfo:
    fields: dict[str, Any] = {
        "title": "Cold cache investigation",
        "session_id": "sess-1",
        "cwd": "/repo",
        "scope": "branch",
        "leaf_id": None,
        "created": "2026-03-01T10:00:00.000Z",
    }
    return DocumentInfo(**(fields | extra))


def both(document: DocumentInfo, entries: list[dict[str, Any]]) -> tuple[str, str]:
    return "".join(markdown_document(document, entries)), "".join(html_document(document, entries))


def usage(tokens: tuple[int, int, int, int], **cost: float) -> dict[str, Any]:
    """Usage of one answer: input, output, cache read and cache write tokens, and Pi's recorded cost."""
    names = ("input", "output", "cacheRead", "cacheWrite")
    return {**dict(zip(names, tokens, strict=True)), "totalTokens": sum(tokens), "cost": cost}


def working_session() -> list[dict[str, Any]]:
    """A system prompt written the way Pi 1.6 writes it (empty content, named sections, tools), a turn
    with thinking, a tool call and its result, a shell command, and a second model."""
    call = {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "app.py"}}
    thinking = {"type": "thinking", "thinking": "The cache may be cold."}
    return [
        system_entry(
            "s1",
            None,
            sections={"preamble": "You are a careful coding agent.", "cwd": "<cwd>/repo</cwd>"},
            toolsAdded=[TOOL_READ, TOOL_BASH],
        ),
        user_message("u1", "s1", "Why is the first request slow?"),
        assistant_message(
            "a1",
            "u1",
            "Let me look.",
            blocks=[thinking, call],
            provider="anthropic",
            model="claude-x",
            usage=usage((1200, 80, 300, 20), total=0.0126),
        ),
        {
            "type": "message",
            "id": "t1",
            "parentId": "a1",
            "timestamp": "2026-01-02T03:04:08.000Z",
            "message": {
                "role": "toolResult",
                "toolCallId": "c1",
                "toolName": "read",
                "content": [{"type": "text", "text": "CACHE = {}  # filled on first use"}],
                "isError": False,
                "timestamp": 3,
            },
        },
        {
            "type": "message",
            "id": "b1",
            "parentId": "t1",
            "timestamp": "2026-01-02T03:04:09.000Z",
            "message": {
                "role": "bashExecution",
                "command": "make warm",
                "output": "warmed 12 keys",
                "exitCode": 0,
            },
        },
        assistant_message(
            "a2",
            "b1",
            "The cache starts empty.",
            provider="openai",
            model="gpt-y",
            usage=usage((1500, 40, 0, 0), input=0.001, output=0.002),
        ),
    ]


# -- the head -----------------------------------------------------------------------------------------------


def test_the_head_says_date_models_messages_tool_calls_tokens_and_cost_in_both_formats() -> None:
    markdown, page = both(info(leaf_id="a2"), working_session())
    facts = dict(re.findall(r"<dt>(.*?)</dt><dd>(.*?)</dd>", page))
    assert facts["Date"] == "2026-03-01 10:00 UTC"
    assert facts["Models"] == "anthropic/claude-x, openai/gpt-y"
    assert facts["Messages"] == "1 user, 2 assistant, 1 tool result, 1 shell command"
    assert facts["Tool calls"] == "1"
    assert facts["Tokens"] == "2,700 input · 120 output · 300 cache read · 20 cache write"
    # Pi's recorded total, or the sum of its parts when a message has no total: 0.0126 + 0.003.
    assert facts["Cost"] == "$0.016"
    for name, value in facts.items():
        assert f"- {name}: {value}\n" in markdown, name


def test_the_cost_piweb_charged_wins_over_the_recorded_one() -> None:
    markdown, page = both(info(costs={"a1": 2.5}), working_session())
    assert "<dt>Cost</dt><dd>$2.50</dd>" in page and "- Cost: $2.50\n" in markdown


# -- the system prompt --------------------------------------------------------------------------------------


def test_a_prompt_made_of_sections_is_shown_with_its_tools_and_their_parameters() -> None:
    entries = working_session()
    entries[1]["parentId"] = "s2"
    entries.insert(
        1,
        system_entry(
            "s2",
            "s1",
            content="Extra rule: never delete files.",
            sections={"cwd": None, "skills": "<skills>none</skills>"},
            toolsRemoved=[{"name": "bash"}],
        ),
    )
    markdown, page = both(info(), entries)
    # Pi 1.6 leaves the content empty: the sections are the prompt.
    for text in ("You are a careful coding agent.", "Extra rule: never delete files."):
        assert text in markdown and text in page
    # Tags in the prompt are text in both.
    assert "&lt;cwd&gt;/repo&lt;/cwd&gt;" in page and "> &lt;cwd>/repo&lt;/cwd>" in markdown
    assert "## System prompt · `s1`" in markdown and "## System prompt update · `s2`" in markdown
    assert "### Section `preamble`" in markdown and "Section `cwd` removed." in markdown
    assert "- `read` — Read a file from the working directory" in markdown
    assert "  - `path` (string, required) — Path of the file" in markdown
    assert "  - `limit` (integer | null, optional)" in markdown
    assert "Tools removed: `bash`" in markdown
    cards = _Page.of(page)
    assert cards.titles["e-s1"] == "System prompt" and cards.titles["e-s2"] == "System prompt update"
    assert "<summary>Section <code>preamble</code></summary>" in page
    assert "Section <code>cwd</code> removed" in page
    assert "<summary>Tools (2)</summary>" in page
    assert "<li><code>path</code> string, required — Path of the file</li>" in page
    assert "<li><code>limit</code> integer | null, optional</li>" in page
    assert "Tools removed: <code>bash</code>" in page


# -- the outline --------------------------------------------------------------------------------------------


def test_the_outline_links_every_entry_nests_where_the_tree_branches_and_marks_the_current_branch() -> None:
    entries = small_tree()
    order = tree_order([(i, e["id"], e["parentId"]) for i, e in enumerate(entries)])
    page = "".join(html_document(info(scope="tree", leaf_id="a3"), [entries[i] for i in order]))
    parsed = _Page.of(page)
    # One link per card, in the document's order, each to a card that exists.
    assert parsed.links == [f"#e-{e}" for e in ("u1", "a1", "u2", "a2", "u3", "a3")]
    assert {link[1:] for link in parsed.links} == set(parsed.titles)
    # A straight run is one list; a1 has two children, so each of its branches is a list of its own.
    assert parsed.depth == {"u1": 1, "a1": 1, "u2": 2, "a2": 2, "u3": 2, "a3": 2}
    assert parsed.marked == ["u1", "a1", "u3", "a3"] and parsed.current == ["a3"]


def test_the_outline_of_a_deep_branch_is_one_flat_list() -> None:
    entries = [user_message("e0", None, "start")]
    for i in range(1, 3000):
        entries.append(user_message(f"e{i}", f"e{i - 1}", f"step {i}"))
    parsed = _Page.of("".join(html_document(info(leaf_id="e2999"), entries)))
    assert len(parsed.links) == 3000 and set(parsed.depth.values()) == {1}
    assert len(parsed.marked) == 3000


# -- what folds, who wrote it, what it cost -----------------------------------------------------------------


def test_thinking_tool_output_and_shell_output_fold_without_a_script() -> None:
    page = "".join(html_document(info(), working_session()))
    parsed = _Page.of(page)
    closed = {kind for kind, is_open in parsed.details if not is_open}
    assert {"thinking", "output"} <= closed
    assert (
        parsed.summaries.count("Output") == 1
        and "Thinking" in parsed.summaries
        and "$ make warm" in parsed.summaries
    )
    assert "script" not in parsed.tags


def test_each_entry_names_its_author_and_each_answer_its_cost() -> None:
    authors = {"u1": "by alice", "a1": "run started by alice", "a2": "imported by bob"}
    markdown, page = both(info(authors=authors, costs={"a1": 0.0126}), working_session())
    cards = _Page.of(page)
    assert cards.bylines["e-u1"] == "by alice"
    assert cards.bylines["e-a1"] == "run started by alice · $0.013"
    # No cost from piweb: the one Pi recorded (its parts' sum).
    assert cards.bylines["e-a2"] == "imported by bob · $0.0030"
    assert "*by alice*" in markdown and "*run started by alice · $0.013*" in markdown
    assert "*imported by bob · $0.0030*" in markdown


class _Page(HTMLParser):
    """What a reader finds in the page: outline links with their nesting, cards, details and bylines."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.links: list[str] = []
        self.depth: dict[str, int] = {}
        self.marked: list[str] = []
        self.current: list[str] = []
        self.titles: dict[str, str] = {}
        self.bylines: dict[str, str] = {}
        self.details: list[tuple[str, bool]] = []
        self.summaries: list[str] = []
        self._lists = 0
        self._in_nav = False
        self._card = ""
        self._capture: str | None = None  # the kind of text being read: "who", "by" or "summary"
        self._text: list[str] = []

    @classmethod
    def of(cls, page: str) -> _Page:
        parsed = cls()
        parsed.feed(page)
        return parsed

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        self.tags.append(tag)
        if tag == "nav":
            self._in_nav = True
        elif tag == "ul" and self._in_nav:
            self._lists += 1
        elif tag == "a" and self._in_nav:
            href = found.get("href") or ""
            self.links.append(href)
            self.depth[href[3:]] = self._lists
            if "on-branch" in (found.get("class") or ""):
                self.marked.append(href[3:])
            if "aria-current" in found:
                self.current.append(href[3:])
        elif tag == "article":
            self._card = found.get("id") or ""
        elif tag == "span" and found.get("class") in ("who", "by"):
            self._capture, self._text = found["class"], []
        elif tag == "details":
            self.details.append(((found.get("class") or ""), "open" in found))
        elif tag == "summary":
            self._capture, self._text = "summary", []

    def handle_endtag(self, tag: str) -> None:
        if tag == "nav":
            self._in_nav = False
        elif tag == "ul" and self._in_nav:
            self._lists -= 1
        elif self._capture and ((tag == "span" and self._capture != "summary") or tag == "summary"):
            text = "".join(self._text)
            kind = self._capture
            if kind == "who":
                self.titles[self._card] = text
            elif kind == "by":
                self.bylines[self._card] = text
            else:
                self.summaries.append(text)
            self._capture = None

    def handle_data(self, data: str) -> None:
        if self._capture:
            self._text.append(data)
