"""What git and its hosts print, read without a database: commits, pull-request URLs, stripped remotes."""

from __future__ import annotations

from provenance.domain.git_text import commits_in, normalize_pr_url, pr_urls_in, strip_credentials


def test_commit_lines_of_git_commit_are_found_with_their_subject() -> None:
    output = (
        "[main (root-commit) 1a2b3c4] First import\n 1 file changed, 1 insertion(+)\n"
        "[feature/x 89abcdef0] Fix the parser: keep [brackets]\n"
        "[detached HEAD 5f5f5f5] Try something\n"
    )
    found = [(c.sha, c.branch, c.subject) for c in commits_in(output)]
    assert found == [
        ("1a2b3c4", "main", "First import"),
        ("89abcdef0", "feature/x", "Fix the parser: keep [brackets]"),
        ("5f5f5f5", "detached HEAD", "Try something"),
    ]


def test_text_that_only_looks_like_a_commit_is_not_one() -> None:
    assert commits_in("[main abc] short\n[INFO 12345678 ] spaced\nsee [main 1a2b3c4]no space") == []


def test_pull_request_urls_are_normalized_and_push_offers_kept_as_printed() -> None:
    gh = "Creating pull request for x into main\n\nhttps://github.com/Acme/Widgets/pull/42\n"
    assert pr_urls_in(gh) == ["https://github.com/acme/widgets/pull/42"]
    assert normalize_pr_url("http://www.github.com/acme/widgets/pull/42/files") == (
        "https://github.com/acme/widgets/pull/42"
    )
    lab = "remote: View merge request for x:\nremote:   https://gitlab.com/g/sub/p/-/merge_requests/7\n"
    assert pr_urls_in(lab) == ["https://gitlab.com/g/sub/p/-/merge_requests/7"]
    push = (
        "remote: Create a pull request for 'fix' on GitHub by visiting:\n"
        "remote:      https://github.com/acme/widgets/pull/new/fix\n"
    )
    assert pr_urls_in(push) == ["https://github.com/acme/widgets/pull/new/fix"]
    assert normalize_pr_url("https://example.org/acme/widgets/pull/42") is None


def test_remote_urls_lose_their_credentials() -> None:
    assert (
        strip_credentials("https://ada:ghp_secret@github.com/acme/w.git") == "https://github.com/acme/w.git"
    )
    assert strip_credentials("https://oauth2:tok@gitlab.com/g/p.git?private_token=x") == (
        "https://gitlab.com/g/p.git"
    )
    assert strip_credentials("git@github.com:acme/w.git") == "github.com:acme/w.git"
    assert strip_credentials("/srv/git/w.git") == "/srv/git/w.git"
