"""Staff acting from the admin site: the same use cases as the owners', on the staff flag and a permission.

The admin checks its own permissions before it calls a use case; the use case checks again, so a script
or a future view that passes ``as_staff=True`` gets no more than the admin would grant.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from core.actors import Actor, user_of
from core.errors import Forbidden, NotSignedIn

__all__ = ["authorize_staff"]


def authorize_staff(actor: Actor, permission: str) -> Any:
    """Return the staff user behind ``actor``; refuse anyone else, and staff without ``permission``."""
    user = user_of(actor)
    if user is None:
        raise NotSignedIn()
    if not (user.is_staff and user.has_perm(permission)):
        raise Forbidden(f"Only staff with the {permission} permission may do this from the admin.")
    return user


class ReadOnlyAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    """An admin for rows staff may read but not add, change or delete on the page (an action calling a
    use case does what may be done)."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
