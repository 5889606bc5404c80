"""Reuse the agent suite's scripted provider and in-process run settings."""

from tests.agent.conftest import _agent_settings, make_provider, server  # noqa: F401
