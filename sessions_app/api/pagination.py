"""Page sizes for session lists."""

from __future__ import annotations

from rest_framework.pagination import PageNumberPagination

__all__ = ["SessionPagination"]


class SessionPagination(PageNumberPagination):
    page_size = 50
    page_size_query_param = "pageSize"
    max_page_size = 500
