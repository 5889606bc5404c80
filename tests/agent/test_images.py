"""Pictures attached to a prompt: stored as Pi stores them, sent in each wire format's own shape,
and refused with a message naming the picture and the problem."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from actionlog.models import ActionLog
from providers.llm import testserver as script
from providers.models import LLMProvider
from sessions_app import services as session_services
from tests.factories import entries

pytestmark = pytest.mark.django_db(transaction=True)

PNG = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c63f8cfc0f01f0005000201a0f5b5d90000000049454e44ae426082"
    )
).decode()
JPEG = base64.b64encode(b"\xff\xd8\xff\xe0" + b"\x00" * 60).decode()


def _start(client: Any, session: Any, provider: LLMProvider, images: list[dict[str, Any]]) -> Any:
    body = {"prompt": "What is in this picture?", "providerId": provider.pk, "images": images}
    return client.post(f"/api/sessions/{session.pk}/runs/", body, format="json")


@pytest.mark.parametrize("api", ["anthropic-messages", "openai-completions"])
def test_an_attached_picture_is_stored_after_the_text_and_sent_in_the_wire_format(
    api: str, api_client: Any, server: Any
) -> None:
    base_url = f"{server.url}/v1" if api == "openai-completions" else server.url
    provider = LLMProvider.objects.create(
        name="vision", api=api, base_url=base_url, model_id="m", provider="p", api_key="k"
    )
    session = session_services.create_session(actor=api_client.user, cwd="/repo")
    server.enqueue(script.reply("A red dot."))

    response = _start(
        api_client,
        session,
        provider,
        [{"data": PNG, "mimeType": "image/png"}, {"data": JPEG, "mimeType": "image/jpeg"}],
    )

    assert response.status_code == 202, response.json()
    user = next(e for e in entries(session) if e.get("message", {}).get("role") == "user")
    assert user["message"]["content"] == [
        {"type": "text", "text": "What is in this picture?"},
        {"type": "image", "data": PNG, "mimeType": "image/png"},
        {"type": "image", "data": JPEG, "mimeType": "image/jpeg"},
    ]
    (request,) = server.requests
    (sent,) = [m for m in request.body["messages"] if m["role"] == "user"]
    if api == "anthropic-messages":
        assert [b["type"] for b in sent["content"]] == ["text", "image", "image"]
        assert sent["content"][1]["source"] == {"type": "base64", "media_type": "image/png", "data": PNG}
        assert sent["content"][2]["source"]["media_type"] == "image/jpeg"
    else:
        assert sent["content"] == [
            {"type": "text", "text": "What is in this picture?"},
            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}},
            {"type": "image_url", "image_url": {"url": f"data:image/jpeg;base64,{JPEG}"}},
        ]
    row = ActionLog.objects.get(session=session, action="run")
    assert row.detail["images"] == 2


def test_bad_pictures_are_refused_with_the_reason_and_nothing_is_stored(
    api_client: Any, make_provider: Any, server: Any, settings: Any
) -> None:
    settings.PIWEB_MAX_IMAGE_BYTES = 100
    settings.PIWEB_MAX_IMAGES = 2
    provider = make_provider()
    session = session_services.create_session(actor=api_client.user, cwd="/repo")
    big = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\x00" * 200).decode()
    cases = [
        ([{"data": PNG, "mimeType": "image/bmp"}], "mimeType"),
        ([{"data": "not base64!", "mimeType": "image/png"}], "images[0]: data is not valid base64"),
        ([{"data": JPEG, "mimeType": "image/png"}], "images[0]: the bytes are not a PNG picture"),
        ([{"data": PNG, "mimeType": "image/png"}, {"data": big, "mimeType": "image/png"}], "images[1]"),
        ([{"data": PNG, "mimeType": "image/png"}] * 3, "at most 2 pictures"),
        ([{"mimeType": "image/png"}], "data"),
    ]
    for images, named in cases:
        response = _start(api_client, session, provider, images)
        assert response.status_code == 400, images
        assert named in str(response.json()), (named, response.json())
    assert entries(session) == [] and server.requests == []
    assert not ActionLog.objects.filter(session=session, action="run").exists()
