"""Links in rendered messages: only real addresses are links; file names and paths read as code."""

from __future__ import annotations

import pytest

from documents.rendering import render_markdown


@pytest.mark.parametrize("name", ["images.py", "feeds.py", "sitemaps.py", "README.md", "src/app/views.py"])
def test_a_file_name_is_code_not_a_link_to_an_outside_site(name: str) -> None:
    html = render_markdown(f"I changed {name}, then ran the tests.")
    assert "<a " not in html
    assert f"<code>{name}</code>" in html


def test_paths_from_the_root_or_the_current_folder_are_code() -> None:
    html = render_markdown("Look in /etc/hosts and ./run.sh and ../lib/x.toml")
    assert "<code>/etc/hosts</code>" in html
    assert "<code>./run.sh</code>" in html
    assert "<code>../lib/x.toml</code>" in html


@pytest.mark.parametrize(
    ("text", "href"),
    [
        ("see https://example.com/a.py now", "https://example.com/a.py"),
        ("see www.example.com now", "http://www.example.com"),
        ("write to mailto:team@example.com", "mailto:team@example.com"),
    ],
)
def test_addresses_with_a_scheme_or_www_are_links(text: str, href: str) -> None:
    assert f'<a href="{href}"' in render_markdown(text)


def test_bare_domains_emails_and_prose_stay_text() -> None:
    html = render_markdown("Write to team@example.com about example.io, Node.js, e.g. 3.14 and and/or.")
    assert "<a " not in html
    assert "<code>" not in html


def test_file_names_inside_code_or_links_are_left_as_they_are() -> None:
    html = render_markdown("`x.py` and [the notes](https://example.com/notes.md)")
    assert html.count("<code>") == 1
    assert '<a href="https://example.com/notes.md"' in html
    assert "<code>notes.md</code>" not in html
