"""A real SMTP server on loopback (aiosmtpd) that keeps what it receives."""

from __future__ import annotations

import email
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from email.message import Message
from typing import Any

from aiosmtpd.controller import Controller

from tests.procs import free_port


class Inbox:
    """What the server accepted: one parsed message per delivery, with its envelope recipients."""

    def __init__(self) -> None:
        self.messages: list[tuple[list[str], Message]] = []
        self.arrived = threading.Condition()

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        message = email.message_from_bytes(envelope.content)
        with self.arrived:
            self.messages.append((list(envelope.rcpt_tos), message))
            self.arrived.notify_all()
        return "250 Message accepted for delivery"

    def wait(self, count: int, timeout: float = 10.0) -> list[tuple[list[str], Message]]:
        with self.arrived:
            self.arrived.wait_for(lambda: len(self.messages) >= count, timeout)
            return list(self.messages)


@contextmanager
def smtp_server() -> Iterator[tuple[int, Inbox]]:
    """Run an SMTP server on a free loopback port for the block; yield its port and what it received."""
    inbox = Inbox()
    port = free_port()
    controller = Controller(inbox, hostname="127.0.0.1", port=port)
    controller.start()
    try:
        yield port, inbox
    finally:
        controller.stop()
