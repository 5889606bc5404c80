"""The document builders on plain payloads (no database): tree order, fences, and inert Markdown."""

from __future__ import annotations

from documents.export import DocumentInfo, html_document, markdown_document, tree_order

INFO = DocumentInfo(title="T", session_id="s1", cwd="/w", scope="tree", leaf_id=None)


def test_a_tree_is_listed_depth_first_with_siblings_in_append_order() -> None:
    rows = [
        (1, "r", None),
        (2, "a", "r"),
        (3, "b", "r"),
        (4, "a1", "a"),
        (5, "orphan", "gone"),
        (6, "b1", "b"),
    ]
    assert tree_order(rows) == [1, 2, 4, 3, 6, 5]


def test_a_path_of_a_hundred_thousand_entries_needs_no_recursion() -> None:
    rows = [(i, f"e{i}", f"e{i - 1}" if i else None) for i in range(100_000)]
    assert tree_order(rows) == list(range(100_000))


def test_code_keeps_its_text_and_cannot_be_closed_from_inside() -> None:
    result = {
        "type": "message",
        "id": "t1",
        "parentId": None,
        "message": {
            "role": "toolResult",
            "toolName": "bash",
            "content": [{"type": "text", "text": "a ``` b <x>"}],
        },
    }
    text = "".join(markdown_document(INFO, [result]))
    assert "````\na ``` b <x>\n````" in text


def test_markdown_keeps_code_verbatim_and_makes_prose_inert() -> None:
    message = {
        "type": "message",
        "id": "u1",
        "parentId": None,
        "message": {
            "role": "user",
            "content": (
                "Use `<div>` here.\n\n```html\n<script>ok in code</script>\n```\n\n"
                "<iframe src=x> [a](data:text/html,x)"
            ),
        },
    }
    text = "".join(markdown_document(INFO, [message]))
    assert "`<div>`" in text and "<script>ok in code</script>" in text
    assert "&lt;iframe src=x>" in text and "[a](#link-removed)" in text


def test_a_picture_of_an_unknown_type_is_named_not_embedded() -> None:
    message = {
        "type": "message",
        "id": "u1",
        "parentId": None,
        "message": {
            "role": "user",
            "content": [{"type": "image", "mimeType": "image/svg+xml", "data": "PHN2Zz4="}],
        },
    }
    page = "".join(html_document(INFO, [message]))
    assert "data:image/svg" not in page and "[image image/svg+xml]" in page
