"""Pictures attached to a prompt, checked before they are stored as Pi stores them.

Pi keeps an attached picture in the user message's content, after the text:
``{"type": "image", "data": <base64>, "mimeType": "image/png"}``. Only the four types every provider
reads are taken, and the bytes must be what the type says: a file renamed to ``.png`` is refused
here, not by the provider halfway through a run.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["IMAGE_TYPES", "InvalidImage", "image_blocks"]

# Magic numbers of each accepted type (WebP: "RIFF" then the size then "WEBP").
IMAGE_TYPES: dict[str, tuple[bytes, ...]] = {
    "image/png": (b"\x89PNG\r\n\x1a\n",),
    "image/jpeg": (b"\xff\xd8\xff",),
    "image/gif": (b"GIF87a", b"GIF89a"),
    "image/webp": (b"RIFF",),
}


class InvalidImage(ValueError):
    """An attached picture that cannot be stored; the message names which one and why."""


def image_blocks(images: Sequence[Any], *, max_bytes: int, max_count: int) -> list[dict[str, str]]:
    """Return Pi's image content blocks for ``images`` (``{"data", "mimeType"}`` each), or raise
    InvalidImage naming the first bad one (``images[i]``) and what is wrong with it."""
    if len(images) > max_count:
        raise InvalidImage(f"images: at most {max_count} pictures per prompt (got {len(images)})")
    out: list[dict[str, str]] = []
    for index, image in enumerate(images):
        name = f"images[{index}]"
        if not isinstance(image, Mapping):
            raise InvalidImage(f'{name}: expected an object with "data" and "mimeType"')
        mime = image.get("mimeType")
        data = image.get("data")
        if not isinstance(mime, str) or mime not in IMAGE_TYPES:
            allowed = ", ".join(IMAGE_TYPES)
            raise InvalidImage(f"{name}: the type must be one of {allowed} (got {str(mime)[:80]!r})")
        if not isinstance(data, str) or not data:
            raise InvalidImage(f"{name}: data must be the picture's bytes in base64")
        # Anything larger than the cap in base64 is larger decoded too: refuse before decoding.
        if len(data) > (max_bytes + 2) // 3 * 4 + 4:
            raise InvalidImage(f"{name}: the picture is larger than {max_bytes:,} bytes")
        try:
            raw = base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError):
            raise InvalidImage(f"{name}: data is not valid base64") from None
        if len(raw) > max_bytes:
            raise InvalidImage(f"{name}: the picture is {len(raw):,} bytes, more than {max_bytes:,}")
        if not raw.startswith(IMAGE_TYPES[mime]) or (mime == "image/webp" and raw[8:12] != b"WEBP"):
            raise InvalidImage(f"{name}: the bytes are not a {mime.removeprefix('image/').upper()} picture")
        out.append({"type": "image", "data": data, "mimeType": mime})
    return out
