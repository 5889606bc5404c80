"""The OpenAPI document describes every session endpoint."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

pytestmark = pytest.mark.django_db

PATHS = {
    "/api/sessions/": {"get", "post"},
    "/api/sessions/import/": {"post"},
    "/api/sessions/{id}/": {"get", "patch", "delete"},
    "/api/sessions/{id}/entries/": {"get"},
    "/api/sessions/{id}/entries/{entry_id}/": {"get"},
    "/api/sessions/{id}/tree/": {"get"},
    "/api/sessions/{id}/context/": {"get"},
    "/api/sessions/{id}/files/": {"get"},
    "/api/sessions/{id}/navigate/": {"post"},
    "/api/sessions/{id}/fork/": {"post"},
    "/api/sessions/{id}/clone/": {"post"},
    "/api/sessions/{id}/labels/": {"post"},
    "/api/sessions/{id}/append/": {"post"},
    "/api/sessions/{id}/export/": {"get"},
    "/api/sessions/{id}/cost/": {"get"},
    "/api/usage/": {"get"},
    "/api/usage/sessions/": {"get"},
    "/api/teams/{team_id}/usage/": {"get"},
}


def test_schema_is_openapi_3_with_every_session_path(api_client: Any) -> None:
    response = api_client.get("/api/schema/")
    assert response.status_code == 200
    schema = yaml.safe_load(response.content)
    assert schema["openapi"].startswith("3.")
    for path, methods in PATHS.items():
        assert path.replace("{id}", "{pk}") in schema["paths"] or path in schema["paths"], path
        operations = schema["paths"].get(path) or schema["paths"][path.replace("{id}", "{pk}")]
        assert methods <= set(operations), path
    ids = [
        op["operationId"] for item in schema["paths"].values() for op in item.values() if "operationId" in op
    ]
    assert len(ids) == len(set(ids))
