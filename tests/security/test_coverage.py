"""Every route of the URLconf and every websocket route has its cases in each category of the suite.

A route added without them fails here, naming the category and what to add.
"""

from __future__ import annotations

from .routes import (
    KNOWN_PARAMS,
    PUBLIC,
    ROWS,
    TEMPLATES,
    all_params,
    http_routes,
    socket_routes,
    unsafe_routes,
)
from .test_csrf import EXEMPT
from .test_oversize_fields import CAPPED_ELSEWHERE

# Write routes that take no body (ids in the path only): nothing to oversize but the path, which
# test_xss and tests/fuzz fill with hostile segments.
NO_BODY = {
    ("api/sessions/<int:pk>/", "DELETE"),
    ("api/sessions/<int:pk>/runs/stop/", "POST"),
    ("api/sessions/<int:pk>/shares/<int:team_id>/", "DELETE"),
    ("api/links/<int:link_id>/", "DELETE"),
    ("api/comments/<int:comment_id>/", "DELETE"),
    ("api/tokens/<str:token_id>/", "DELETE"),
    ("api/runners/<int:runner_id>/", "DELETE"),
    ("api/teams/<int:team_id>/members/<str:username>/", "DELETE"),
    ("api/invitations/<int:invitation_id>/accept/", "POST"),
    ("api/teams/<int:team_id>/invitations/<int:invitation_id>/", "DELETE"),
    ("accounts/oidc/<str:provider_id>/login/", "POST"),  # only `next`, then a redirect to the provider
    ("api/invitations/<int:invitation_id>/decline/", "POST"),
    ("api/reviews/<int:review_id>/request/", "POST"),
    ("api/reviews/<int:review_id>/withdraw/", "POST"),
    ("api/saved-filters/<int:filter_id>/", "DELETE"),
    ("api/sessions/<int:pk>/archive/", "DELETE"),
    ("api/sessions/<int:pk>/archive/", "POST"),
    ("api/sessions/<int:pk>/pin/", "DELETE"),
    ("api/sessions/<int:pk>/pin/", "POST"),
    ("api/sessions/<int:pk>/tags/<int:tag_id>/", "DELETE"),
    ("api/tags/<int:tag_id>/", "DELETE"),
    ("api/hooks/<int:hook_id>/", "DELETE"),
    ("api/hooks/<int:hook_id>/rotate/", "POST"),
    ("api/hooks/<int:hook_id>/ping/", "POST"),
    ("api/hooks/<int:hook_id>/deliveries/<int:delivery_id>/replay/", "POST"),
    ("api/operations/<uuid:operation_id>/cancel/", "POST"),
    ("api/runs/<uuid:run_id>/abort/", "POST"),
    ("api/sessions/import/", "POST"),  # a file, not fields: test_an_oversized_key_in_a_session_line_is_a_400
    ("accounts/logout/", "POST"),
    ("accounts/password_change/", "POST"),  # Django's form, max_length and a signed-in user
    ("accounts/password_reset/", "POST"),  # Django's form (an email address)
    ("accounts/reset/<uidb64>/<token>/", "POST"),  # Django's form behind the signed token
    # Django's form views answer PUT as they answer POST.
    ("accounts/login/", "PUT"),
    ("accounts/password_change/", "PUT"),
    ("accounts/password_reset/", "PUT"),
    ("accounts/reset/<uidb64>/<token>/", "PUT"),
}
# test_authorization.test_socket and test_runner_socket, test_csrf, test_log_secrets
SOCKET_CASES = {"ws/sessions/<int:pk>/", "ws/runner/"}


def test_every_route_has_an_authorization_row() -> None:
    covered = {row.route for row in ROWS}
    missing = [route for route, _ in http_routes() if route not in covered and route not in PUBLIC]
    assert missing == [], f"add rows to tests/authz/test_matrix.py ROWS (or PUBLIC with a reason): {missing}"


def test_every_path_parameter_can_be_filled() -> None:
    unknown = sorted({(route, name) for route, name in all_params() if name not in KNOWN_PARAMS})
    assert unknown == [], f"add a value for these parameters to tests/security/routes.py ids_of: {unknown}"


def test_every_write_route_has_an_oversize_case() -> None:
    templated = {(route, method.upper()) for route, method in TEMPLATES}
    exempt = {(route, method.upper()) for route, method in CAPPED_ELSEWHERE}
    missing = [pair for pair in unsafe_routes() if pair not in templated | exempt | NO_BODY]
    assert missing == [], f"add a working body to tests/fuzz/test_hostile_requests.py TEMPLATES: {missing}"
    assert not NO_BODY - set(unsafe_routes()), "NO_BODY names a route that no longer exists"


def test_every_csrf_exemption_is_a_real_route() -> None:
    assert set(EXEMPT) <= set(unsafe_routes())


def test_every_socket_route_has_cases() -> None:
    missing = [route for route in socket_routes() if route not in SOCKET_CASES]
    assert missing == [], f"add socket cases (authorization, origin, logs) for: {missing}"
