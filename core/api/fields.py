"""Strict input fields and the one parse step every API view uses.

DRF's defaults follow HTML forms: ``CharField`` turns ``0`` into ``"0"``, ``BooleanField`` reads ``1`` as
true, and an empty query value counts as absent. The published schema says otherwise (a string, a boolean, a
non-empty value), so a client that sends the wrong type gets a 400 rather than a silently converted write.
"""

from __future__ import annotations

from typing import Any

from django.http import QueryDict
from rest_framework import serializers
from rest_framework.exceptions import ValidationError


class Text(serializers.CharField):
    """A string, and only a string: numbers are refused instead of stored as their digits."""

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return str(super().to_internal_value(data))


class Flag(serializers.BooleanField):
    """``true`` or ``false`` in a JSON body; a query string still spells them as text (``?render=1``)."""

    def to_internal_value(self, data: Any) -> bool:
        if isinstance(data, int | float) and not isinstance(data, bool):
            self.fail("invalid", input=data)
        return bool(super().to_internal_value(data))


def parse(serializer_class: type[serializers.Serializer[Any]], data: Any) -> dict[str, Any]:
    """Validate request data (a JSON body or the query string); raise a 400 naming each bad field."""
    serializer = serializer_class(data=data)
    if isinstance(data, QueryDict):
        # A parameter given with no value is a mistake the schema forbids, not the parameter left out.
        blank = {
            name: ["This field may not be blank."]
            for name, field in serializer.fields.items()
            if name in data and data.get(name) == "" and not getattr(field, "allow_blank", False)
        }
        if blank:
            raise ValidationError(blank)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)
