"""The project's routes plus a minimal DRF view: what the server costs before any application work."""

from typing import Any

from django.urls import path
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from piweb.urls import urlpatterns as project_urls


class Minimal(APIView):
    authentication_classes: list[Any] = []
    permission_classes = [AllowAny]

    def get(self, request: Request) -> Response:
        return Response({"ok": True})


urlpatterns = [path("minimal/", Minimal.as_view()), *project_urls]
