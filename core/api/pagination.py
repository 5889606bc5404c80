"""Page sizes for session lists."""

from __future__ import annotations

from rest_framework.exceptions import ValidationError
from rest_framework.pagination import PageNumberPagination
from rest_framework.request import Request

__all__ = ["SessionPagination"]


class SessionPagination(PageNumberPagination):
    page_size = 50
    page_size_query_param = "pageSize"
    max_page_size = 500

    def get_page_size(self, request: Request) -> int:
        # DRF falls back to the default on a bad value; a client asking for "pageSize=ten" would then
        # get 50 rows without knowing its parameter was ignored.
        raw = request.query_params.getlist(self.page_size_query_param)
        if raw:
            if len(raw) > 1 or not raw[0].isdigit() or int(raw[0]) < 1:
                raise ValidationError({self.page_size_query_param: ["A whole number of 1 or more."]})
            return min(int(raw[0]), self.max_page_size)
        return self.page_size
