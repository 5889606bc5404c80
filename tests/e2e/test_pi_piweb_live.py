"""The Pi package in a long-running Pi (RPC mode) with its real tools in a git repository, followed live.

Pi works in a temporary git repository: it reads a file and runs git through its own tools, compacts,
leaves a branch with its own tree navigation (summarized), forks, and shares; ``piweb-sync push`` follows
the same folder all along. A teammate's socket on piweb hears each entry as Pi writes it and sees
"live from Pi on <device>" until Pi quits. At the end every session file Pi wrote equals piweb's export,
byte for byte, with no line twice.
"""

from __future__ import annotations

import asyncio
import json
import queue
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from compaction_app.domain.prompts import SUMMARIZATION_SYSTEM_PROMPT
from providers.llm import testserver as script
from providers.llm.testserver import ProviderServer
from sessions_app import services
from sessions_app.models import ApiToken, ChatSession
from teams import services as team_services
from teams.models import TeamMembership
from tests.live.servers import AsgiServer, open_socket

from .pi import NODE, PI_CLI, PiHome, file_lines, pi_installed, stored_lines
from .test_pi_piweb_package import PACKAGE, exported, piweb

__all__ = ["piweb"]  # the fixture, shared with the print-mode tests

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.slow,
    pytest.mark.timeout(300),
    pytest.mark.skipif(not pi_installed(), reason="Pi is not installed: run `npm ci --prefix bench`"),
]

PI_SUMMARY_SYSTEM_START = "You are a context summarization assistant."
DEVICE = "build-box"
LONG_ANSWER = "It needs 3.11. " + " ".join(f"Step {i}: check the interpreter." for i in range(130))
SECRET = "AKIA" + "QZ7XW3RT5YP2LM4N"  # an AWS access key id's shape, so piweb's scanner flags it

# Pi has no RPC command for its tree navigation; a command of a tiny extension calls it, as a user's /tree.
GOTO = """
export default function (pi) {
  pi.registerCommand("goto", {
    description: "navigate the tree, summarizing the branch left",
    handler: async (args, ctx) => {
      await ctx.waitForIdle();
      const result = await ctx.navigateTree(String(args).trim(), { summarize: true });
      ctx.ui.notify(`goto: ${JSON.stringify(result)}`, "info");
    },
  });
}
"""


class PiRpc:
    """``pi --mode rpc`` with the package loaded: commands in, every line it prints kept in order."""

    def __init__(self, home: PiHome, extension: Path) -> None:
        command = [str(NODE), str(PI_CLI), "--mode", "rpc", "--tools", "read,bash", "--no-extensions"]
        command += ["--no-skills", "--no-prompt-templates", "--no-context-files"]
        command += ["-e", str(PACKAGE), "-e", str(extension)]
        self.proc = subprocess.Popen(
            command,
            cwd=home.work,
            env={**home.env, "PIWEB_DEVICE": DEVICE},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            bufsize=1,
        )
        self.lines: queue.Queue[dict[str, Any]] = queue.Queue()
        self.seen: list[dict[str, Any]] = []
        self.since = 0  # what Pi printed after the last command starts here
        self.taken: set[int] = set()
        self.count = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                self.lines.put(json.loads(line))
            except ValueError:
                continue

    def send(self, **command: Any) -> None:
        assert self.proc.stdin is not None
        self.since = len(self.seen)
        self.proc.stdin.write(json.dumps(command) + "\n")
        self.proc.stdin.flush()

    def expect(self, matches: Callable[[dict[str, Any]], bool], timeout: float = 60) -> dict[str, Any]:
        """Return the first line printed since the last command was sent that ``matches``, once."""
        for index in range(self.since, len(self.seen)):
            if index not in self.taken and matches(self.seen[index]):
                self.taken.add(index)
                return self.seen[index]
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self.lines.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                stderr = self.proc.stderr.read() if self.proc.poll() is not None and self.proc.stderr else ""
                last = [json.dumps(m)[:300] for m in self.seen[-8:]]
                raise AssertionError(
                    f"Pi printed nothing matching in {timeout}s; last printed: {last}; stderr: {stderr}"
                ) from None
            self.seen.append(line)
            if matches(line):
                self.taken.add(len(self.seen) - 1)
                return line

    def call(self, kind: str, **fields: Any) -> dict[str, Any]:
        self.count += 1
        ask = f"q{self.count}"
        self.send(id=ask, type=kind, **fields)
        answer = self.expect(lambda m: m.get("type") == "response" and m.get("id") == ask)
        assert answer.get("success"), answer.get("error")
        return answer

    def turn(self, text: str) -> None:
        self.call("prompt", message=text)
        self.expect(lambda m: m.get("type") == "agent_end")

    def notice(self, starts: str, timeout: float = 30) -> str:
        """The next notification whose text starts with ``starts``."""
        line = self.expect(
            lambda m: (
                m.get("type") == "extension_ui_request"
                and m.get("method") == "notify"
                and str(m.get("message", "")).startswith(starts)
            ),
            timeout,
        )
        return str(line["message"])

    def quit(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        return self.proc.wait(timeout=30)


class Follower:
    """A teammate's socket on the session, in its own thread: every message with the time it came."""

    def __init__(self, server: AsgiServer, pk: int, token: str) -> None:
        self.heard: list[tuple[float, dict[str, Any]]] = []
        self.stop = threading.Event()
        self.ready = threading.Event()
        self.thread = threading.Thread(
            target=asyncio.run, args=(self._listen(server, pk, token),), daemon=True
        )
        self.thread.start()
        assert self.ready.wait(15), "the follower's socket did not open"

    async def _listen(self, server: AsgiServer, pk: int, token: str) -> None:
        socket = await open_socket(server, pk, token=token)
        await socket.send(json.dumps({"type": "presence", "node": None}))
        self.ready.set()
        try:
            while not self.stop.is_set():
                try:
                    message = await asyncio.wait_for(socket.recv(), 0.2)
                except TimeoutError:
                    continue
                self.heard.append((time.monotonic(), json.loads(message)))
        finally:
            await socket.close()

    def close(self) -> None:
        self.stop.set()
        self.thread.join(10)

    def rosters(self) -> list[list[dict[str, Any]]]:
        return [m["viewers"] for _, m in self.heard if m.get("type") == "presence"]

    def appended(self) -> list[int]:
        return [m["seq"] for _, m in self.heard if m.get("event") == "entries_appended"]

    def wait(self, matches: Callable[[], bool], timeout: float = 15) -> None:
        deadline = time.monotonic() + timeout
        while not matches():
            assert time.monotonic() < deadline, f"the follower never saw it; heard {self.heard[-5:]}"
            time.sleep(0.05)


def git_repository(folder: Path) -> None:
    (folder / "notes.txt").write_text("The build needs Python 3.11.\n")
    for step in (["init", "-q"], ["add", "notes.txt"], ["commit", "-qm", "notes"]):
        subprocess.run(["git", "-c", "user.email=a@b.c", "-c", "user.name=A", *step], cwd=folder, check=True)


def session_for(pi_id: str, timeout: float = 15) -> ChatSession:
    deadline = time.monotonic() + timeout
    while True:
        found = ChatSession.objects.filter(pi_id=pi_id).first()
        if found is not None:
            return found
        assert time.monotonic() < deadline, f"session {pi_id} never reached piweb"
        time.sleep(0.1)


def settled(session: ChatSession, local: Path, timeout: float = 15) -> None:
    """Wait until piweb holds every line of ``local`` (the package sends off Pi's path)."""
    deadline = time.monotonic() + timeout
    while stored_lines(session) != file_lines(local):
        assert time.monotonic() < deadline, "piweb never caught up with Pi's file"
        time.sleep(0.1)


@pytest.fixture
def provider() -> Iterator[ProviderServer]:
    server = ProviderServer(side_prompts=(PI_SUMMARY_SYSTEM_START, SUMMARIZATION_SYSTEM_PROMPT)).start()
    server.enqueue_side(*[script.reply("Summary: read the notes, checked git.")] * 10)
    yield server
    server.stop()


def test_a_live_pi_session_with_tools_compaction_tree_and_fork(
    piweb: AsgiServer, provider: ProviderServer, user: Callable[..., Any], tmp_path: Path
) -> None:
    owner, teammate = user("ada", first_name="Ada", last_name="King"), user("bob")
    token = ApiToken.objects.create(user=owner)[1]
    home = PiHome(tmp_path, provider.url, piweb.base_url, token)
    git_repository(home.work)
    goto = tmp_path / "goto" / "index.js"
    goto.parent.mkdir()
    goto.write_text(GOTO)
    home.start_push()  # piweb-sync follows the same folder the whole time
    pi = PiRpc(home, goto)
    follower: Follower | None = None
    try:
        # Turn 1: Pi reads a file of the repository with its own tool.
        # (A long answer: enough history before the compaction for Pi to have something to summarize.)
        provider.enqueue(script.tool_call("read", {"path": "notes.txt"}), script.reply(LONG_ANSWER))
        pi.turn("What does notes.txt say?")
        [local] = home.files()
        pi_id = json.loads(local.read_text().splitlines()[0])["id"]
        session = session_for(pi_id)
        settled(session, local)
        # A teammate follows it: the session is shared with the team both are in.
        team = team_services.create_team(actor=owner, name="crew")
        TeamMembership.objects.create(team=team, user=teammate, role=TeamMembership.Role.VIEWER)
        services.share_with_team(session=session, team=team, access="viewer", actor=owner)
        follower = Follower(piweb, session.pk, ApiToken.objects.create(user=teammate)[1])
        follower.wait(lambda: any(any(v["kind"] == "pi" for v in r) for r in follower.rosters()))
        [writer] = [v for v in follower.rosters()[-1] if v["kind"] == "pi"]
        assert (writer["name"], writer["device"]) == ("Ada King", DEVICE)
        turn_one_end = file_lines(local)[-1]

        # Turn 2: Pi runs git; the follower hears the entries while Pi works, not at the end.
        before = len(follower.appended())
        provider.enqueue(
            script.tool_call("bash", {"command": "git log --oneline"}, id="call_2"),
            script.reply(f"One commit. My key is {SECRET}."),
        )
        pi.turn("Which commits are there?")
        settled(session, local)
        follower.wait(
            lambda: bool(follower.appended()) and follower.appended()[-1] >= len(file_lines(local)) - 1
        )
        assert len(follower.appended()) > before
        tool_results = [json.loads(line) for line in file_lines(local) if '"toolResult"' in line]
        assert any("notes" in json.dumps(r) for r in tool_results), "git's own answer is in the session"

        # Pi compacts, then leaves turn 2's branch through its tree, with a summary of it.
        pi.call("compact")
        target = json.loads(turn_one_end)["id"]
        pi.call("prompt", message=f"/goto {target}")
        assert "cancelled" in pi.notice("goto:")
        provider.enqueue(script.reply("On the other branch."))
        pi.turn("Start over from there.")
        settled(session, local)
        kinds = [json.loads(line)["type"] for line in file_lines(local)]
        assert "compaction" in kinds and "branch_summary" in kinds

        # /piweb share: the secret on the branch left is in a whole-session link; Pi asks first.
        pi.send(id="share", type="prompt", message="/piweb share live")  # answered once the user is
        ask = pi.expect(lambda m: m.get("type") == "extension_ui_request" and m.get("method") == "confirm")
        assert "1 secret" in json.dumps(ask)
        pi.send(type="extension_ui_response", id=ask["id"], confirmed=False)
        assert "not shared" in pi.notice("piweb:")
        # The current path does not show it: the link is made at once, and it opens.
        pi.call("prompt", message="/piweb share path")
        made = pi.notice("piweb:")
        assert "path link" in made and "secret" not in made, made
        url = made.split("(shown once): ")[1].split()[0]
        page = httpx.get(url, timeout=10, follow_redirects=True)
        assert page.status_code == 200 and "What does notes.txt say?" in page.text
        # What the link holder's page reads: the current path, without the branch that held the key.
        shown = httpx.get(
            f"{piweb.base_url}/api/sessions/{session.pk}/path/",
            headers={"X-Share-Token": url.rstrip("/").rsplit("/", 1)[1]},
            timeout=10,
        )
        assert shown.status_code == 200 and "Start over from there." in shown.text
        assert SECRET not in shown.text

        # Pi forks from its last prompt: a new session on piweb, written live as well.
        last_prompt = [json.loads(x) for x in file_lines(local) if '"role":"user"' in x][-1]["id"]
        pi.call("fork", entryId=last_prompt)
        provider.enqueue(script.reply("Forked."))
        pi.turn("A different question.")
        fork_files = [f for f in home.files() if f != local]
        [fork_file] = fork_files
        fork = session_for(json.loads(fork_file.read_text().splitlines()[0])["id"])
        settled(fork, fork_file)

        # Pi quits: the follower sees it leave at once, long before its beats would lapse (40 s).
        assert pi.quit() == 0
        follower.wait(lambda: not any(v["kind"] == "pi" for v in follower.rosters()[-1]), timeout=10)
    finally:
        if pi.proc.poll() is None:
            pi.proc.kill()
        home.stop_push()
        if follower is not None:
            follower.close()
    # Every file Pi wrote is on piweb as Pi wrote it, once, although two clients sent it.
    for path, stored in ((local, session), (fork_file, fork)):
        assert stored_lines(stored) == file_lines(path)
        assert exported(stored) == path.read_bytes()
    assert ChatSession.objects.filter(owner=owner).count() == 2
