"""Import one session file into the bench database and print {seconds, session, entries} as JSON.

Usage: import_child.py FILE [USERNAME] (the owner; the bench user by default). Run as a separate process so
the parent can read the import's own peak RSS.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import orjson

from bench.django_env import bench_user, setup_django


def peak_rss_bytes() -> int | None:
    """Return this process image's peak RSS (VmHWM), which, unlike ru_maxrss, excludes the forking parent."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def main(argv: list[str]) -> int:
    path = Path(argv[0])
    problem = setup_django(migrate=False)
    if problem:
        print(problem, file=sys.stderr)
        return 2
    from sessions_app.services import import_stream

    if len(argv) > 1:
        from django.contrib.auth import get_user_model

        owner, _ = get_user_model().objects.get_or_create(username=argv[1])
    else:
        owner = bench_user()
    t0 = time.perf_counter()
    with path.open("rb") as stream:
        result = import_stream(actor=owner, stream=stream, filename=path.name)
    seconds = time.perf_counter() - t0
    out = {
        "seconds": seconds,
        "session": result.session.pk,
        "entries": result.appended,
        "peak_rss": peak_rss_bytes(),
    }
    print(orjson.dumps(out).decode())
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
