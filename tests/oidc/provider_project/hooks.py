"""The test provider's claims, and the ways the tests make it misbehave (read from PROVIDER_MODE_FILE)."""

from __future__ import annotations

import base64
import json
import time
from pathlib import Path
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse

UNVERIFIED_GROUP = "email-unverified"


def mode() -> str:
    path = Path(settings.PROVIDER_MODE_FILE)
    return path.read_text().strip() if path.exists() else ""


def userinfo(claims: dict[str, Any], user: Any) -> dict[str, Any]:
    claims["email"] = user.email
    claims["email_verified"] = not user.groups.filter(name=UNVERIFIED_GROUP).exists()
    claims["preferred_username"] = user.username
    claims["name"] = user.get_full_name() or user.username
    return claims


def id_token_hook(id_token: dict[str, Any], user: Any, **kwargs: Any) -> dict[str, Any]:
    id_token["groups"] = sorted(g.name for g in user.groups.exclude(name=UNVERIFIED_GROUP))
    now = int(time.time())
    match mode():
        case "expired":
            id_token["iat"], id_token["exp"] = now - 3600, now - 600
        case "issuer":
            id_token["iss"] = "http://127.0.0.1:1/not-the-provider"
        case "nonce":
            id_token["nonce"] = "a-nonce-from-another-sign-in"
    return id_token


def _flip_signature(jwt_text: str) -> str:
    header, payload, signature = jwt_text.split(".")
    raw = bytearray(base64.urlsafe_b64decode(signature + "=" * (-len(signature) % 4)))
    raw[len(raw) // 2] ^= 0x01
    return f"{header}.{payload}.{base64.urlsafe_b64encode(bytes(raw)).rstrip(b'=').decode()}"


class MisbehaveMiddleware:
    """In mode ``tamper``, the token endpoint's id-token reaches the client with one signature bit flipped."""

    def __init__(self, get_response: Any) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if mode() == "tamper" and request.path.endswith("/token") and response.status_code == 200:
            body = json.loads(response.content)
            body["id_token"] = _flip_signature(body["id_token"])
            response.content = json.dumps(body).encode()
        return response
