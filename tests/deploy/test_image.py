"""The image (Dockerfile) built and run as an operator runs it: migrate, web and the worker group against
this machine's PostgreSQL (the test database) and a private Redis, then ``/readyz`` answers 200 with every
check, the workers' included, and the release. Skipped, with the reason, where Docker cannot build it.

``PIWEB_IMAGE_BASE`` names another base image (``docker/build-base`` makes one from a Debian mirror when
Docker Hub is out of reach); the default is the Dockerfile's own, pulled when missing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

import piweb
from tests.faults.stack import PrivateRedis, missing_tools
from tests.procs import database_url, free_port

pytestmark = [pytest.mark.slow, pytest.mark.timeout(420)]

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_BASE = "python:3.12-slim-bookworm"


def docker(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout)


def first_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else "no output"


@pytest.fixture(scope="module")
def image() -> str:
    """Build the image once for this module; skip when Docker or the base image is out of reach."""
    if shutil.which("docker") is None:
        pytest.skip("docker is not installed")
    info = docker("info", timeout=20)
    if info.returncode != 0:
        pytest.skip(f"the Docker daemon does not answer: {first_line(info.stderr or info.stdout)}")
    base = os.environ.get("PIWEB_IMAGE_BASE", "") or DEFAULT_BASE
    if docker("image", "inspect", base).returncode != 0:
        pulled = docker("pull", base, timeout=180)
        if pulled.returncode != 0:
            pytest.skip(f"the base image {base} cannot be pulled: {first_line(pulled.stderr)}")
    tag = f"piweb-test:{piweb.__version__}"
    started = time.monotonic()
    built = subprocess.run(
        ["docker", "build", "--network=host", "--build-arg", f"BASE={base}", "-t", tag, "."],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    size = docker("image", "inspect", tag, "--format", "{{.Size}}").stdout.strip()
    print(f"image {tag} on {base}: built in {time.monotonic() - started:.0f} s, {int(size) / 1e6:.0f} MB")
    return tag


@pytest.fixture
def containers() -> Iterator[list[str]]:
    names: list[str] = []
    yield names
    for name in names:
        docker("rm", "-f", name)


def test_the_image_migrates_serves_and_runs_its_workers(
    image: str, containers: list[str], transactional_db: None, tmp_path: Path
) -> None:
    reason = missing_tools()
    if reason:
        pytest.skip(reason)
    cache = PrivateRedis(tmp_path)
    cache.service.start()
    try:
        port = free_port()
        env = {
            "DATABASE_URL": database_url(),
            "REDIS_URL": cache.url,
            "DJANGO_SECRET_KEY": "image-test-" + uuid.uuid4().hex,
            "DJANGO_ALLOWED_HOSTS": "127.0.0.1",
            "PORT": str(port),
            "PIWEB_READY_WORKERS": "1",
            "PIWEB_RUN_CONCURRENCY": "2",
            "PIWEB_WORKER_CONCURRENCY": "1",
        }
        flags = ["--network=host", *(f for key, value in env.items() for f in ("-e", f"{key}={value}"))]

        migrated = docker("run", "--rm", *flags, image, "migrate", timeout=180)
        assert migrated.returncode == 0, migrated.stdout + migrated.stderr

        for role in ("web", "worker"):
            name = f"piweb-test-{role}-{uuid.uuid4().hex[:8]}"
            containers.append(name)
            started = docker("run", "-d", "--name", name, *flags, image, role)
            assert started.returncode == 0, started.stderr

        deadline = time.monotonic() + 90
        ready: httpx.Response | None = None
        while time.monotonic() < deadline:
            try:
                ready = httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=10)
                if ready.status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(1)
        logs = "\n".join(docker("logs", name).stderr[-2000:] for name in containers)
        assert ready is not None and ready.status_code == 200, (ready.text if ready else "no answer") + logs
        body = ready.json()
        assert body["version"] == piweb.__version__
        assert set(body["checks"]) == {"database", "channel_layer", "broker", "workers"}
        # Not root inside: the processes run as the image's own user.
        user = docker("exec", containers[0], "id", "-u")
        assert user.stdout.strip() not in ("", "0"), user.stdout + user.stderr
        page = httpx.get(f"http://127.0.0.1:{port}/accounts/login/", timeout=10)
        assert page.status_code == 301  # pages go to HTTPS in production; the probes stay on HTTP
    finally:
        cache.service.stop()
