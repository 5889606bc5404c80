"""A delivery as a Slack incoming-webhook message: ``{"text": ..., "blocks": [...]}``.

Slack renders ``mrkdwn``: the names and titles put in it are escaped (``&``, ``<``, ``>``) so a session
title cannot make a link or a mention of its own.
"""

from __future__ import annotations

from typing import Any

from hooks.domain import events


def escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _session_link(payload: dict[str, Any]) -> str:
    session = payload.get("session") or {}
    title = escape(str(session.get("title") or "a session"))
    url = str(session.get("url") or "")
    return f"<{url}|{title}>" if url else title


def headline(payload: dict[str, Any]) -> str:
    """Return one line saying what happened, in Slack's mrkdwn."""
    kind = payload.get("event")
    who = escape(str((payload.get("actor") or {}).get("name") or "piweb"))
    data = payload.get("data") or {}
    where = _session_link(payload)
    if kind == events.MENTION:
        names = ", ".join(f"@{escape(str(n))}" for n in data.get("mentioned", []))
        return f"{who} mentioned {names} in {where}"
    if kind == events.REVIEW_REQUESTED:
        return f"{who} asked for a review of {where}"
    if kind == events.REVIEW_DECIDED:
        decision = escape(str(data.get("decision") or "decided"))
        return f"{who} reviewed {where}: {decision}"
    if kind == events.RUN_FAILED:
        return f"A run failed in {where}"
    if kind == events.RUN_ENDED:
        return f"A run ended in {where} ({escape(str(data.get('status') or 'done'))})"
    if kind == events.SECRET_FOUND:
        return f"{data.get('count', 'A')} secret(s) found in {where}"
    if kind == events.SESSION_SHARED:
        team = escape(str((payload.get("team") or {}).get("name") or "the team"))
        return f"{who} shared {where} with {team}"
    if kind == events.PING:
        return "Test delivery from piweb: this hook works."
    return f"{escape(str(kind))} in {where}"


def message(payload: dict[str, Any]) -> dict[str, Any]:
    """Return the Slack message of a delivery's payload."""
    line = headline(payload)
    blocks: list[dict[str, Any]] = [{"type": "section", "text": {"type": "mrkdwn", "text": line}}]
    text = (payload.get("data") or {}).get("text")
    if text:
        quoted = "\n".join(f"> {escape(part)}" for part in str(text).splitlines() or [""])
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": quoted}})
    return {"text": line, "blocks": blocks}
