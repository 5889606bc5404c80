"""API tokens: hashed at rest, one per device, expiring, revocable one by one (django-rest-knox)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth import authenticate
from drf_spectacular.utils import OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts_app import api_tokens
from accounts_app.signin_throttle import PASSWORD_LOGIN_OFF, SigninThrottle
from core.api.errors import api_exception_handler, error_response
from core.api.fields import Text, parse
from core.api.parsers import LimitedJSONParser
from sessions_app.facade import ApiToken

__all__ = ["TokenDetailView", "TokenListView", "TokenObtainView"]


class TokenRequestSerializer(serializers.Serializer[Any]):
    username = Text(max_length=150)
    password = Text(max_length=4096, trim_whitespace=False)
    name = Text(
        max_length=100, required=False, default="", allow_blank=True, help_text="The device or script"
    )


def token_payload(token: ApiToken) -> dict[str, Any]:
    return {
        "id": token.public_id,
        "name": token.name,
        "created": token.created.isoformat(),
        "expiry": token.expiry.isoformat() if token.expiry else None,
    }


class TokenAPIView(APIView):
    parser_classes = [LimitedJSONParser]

    def get_exception_handler(self) -> Any:
        return api_exception_handler


class TokenObtainView(TokenAPIView):
    """Exchange a username and password for a new token (shown once); failed attempts are throttled."""

    authentication_classes: list[Any] = []
    permission_classes = [AllowAny]
    parser_classes = [LimitedJSONParser, FormParser, MultiPartParser]

    @extend_schema(
        request=TokenRequestSerializer,
        responses={
            200: inline_serializer(
                "NewToken",
                {
                    "token": serializers.CharField(),
                    "id": serializers.CharField(),
                    "name": serializers.CharField(),
                    "expiry": serializers.DateTimeField(allow_null=True),
                },
            ),
            400: OpenApiResponse(description='{"error": <message>}'),
            429: OpenApiResponse(description='{"error": <message>, "retryAfter": <seconds>}'),
        },
    )
    def post(self, request: Request) -> Response:
        if not settings.PIWEB_PASSWORD_LOGIN:
            return error_response(
                f"{PASSWORD_LOGIN_OFF} Create a token on the API tokens page (/tokens/) instead.",
                status.HTTP_403_FORBIDDEN,
            )
        serializer = TokenRequestSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        throttle = SigninThrottle(request, data["username"])
        refused = throttle.check()
        if refused is not None:
            response = error_response(
                refused.message, status.HTTP_429_TOO_MANY_REQUESTS, retryAfter=refused.retry_after
            )
            response["Retry-After"] = str(refused.retry_after)
            return response
        user = authenticate(request._request, username=data["username"], password=data["password"])
        if user is None:
            throttle.failed()
            return error_response("Unable to sign in with these credentials.", status.HTTP_400_BAD_REQUEST)
        token, text = api_tokens.create_api_token(actor=user, user=user, name=data["name"])
        return Response({"token": text, **token_payload(token)})


class TokenCreateSerializer(serializers.Serializer[Any]):
    name = Text(
        max_length=100, required=False, default="", allow_blank=True, help_text="The device or script"
    )


class TokenListView(TokenAPIView):
    @extend_schema(responses={200: OpenApiResponse(description="My API tokens (never their text)")})
    def get(self, request: Request) -> Response:
        """List my tokens: id (the token's first 8 characters, never more), name, creation and expiry."""
        tokens = ApiToken.objects.filter(user=request.user).order_by("-created")
        return Response({"results": [token_payload(t) for t in tokens]})

    @extend_schema(
        request=TokenCreateSerializer,
        responses={
            201: OpenApiResponse(description='{"token": <text, shown this once>, "id", "name", "expiry"}'),
            400: OpenApiResponse(description='{"error": <message>}'),
        },
    )
    def post(self, request: Request) -> Response:
        """Create a token for myself, signed in already (how people who sign in with SSO get one).

        The answer holds the token's text; only its hash is kept, so it cannot be shown again.
        """
        data = parse(TokenCreateSerializer, request.data)
        token, text = api_tokens.create_api_token(actor=request.user, user=request.user, name=data["name"])
        return Response({"token": text, **token_payload(token)}, status=status.HTTP_201_CREATED)


class TokenDetailView(TokenAPIView):
    @extend_schema(responses={204: None, 404: OpenApiResponse(description='{"error": <message>}')})
    def delete(self, request: Request, token_id: str) -> Response:
        """Revoke one of my tokens at once."""
        api_tokens.revoke_api_token(actor=request.user, user=request.user, token_id=token_id)
        return Response(status=status.HTTP_204_NO_CONTENT)
