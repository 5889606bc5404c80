"""Top-level URLs: the admin, sign-in, the API (schema and docs) and each app's own routes."""

from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerSplitView

from accounts_app.facade import ThrottledLoginView, admin_sign_in
from piweb.csp import loosened
from piweb.health import healthz, readyz
from piweb.metrics_view import metrics_view
from piweb.url_memo import MemoizedRoutes

urlpatterns = [
    # Probes and metrics for operators (README "Operations").
    path("healthz", healthz, name="healthz"),
    path("readyz", readyz, name="readyz"),
    path("metrics", metrics_view, name="metrics"),
    # Before the admin's own: staff sign in where the password switch and the sign-in limits apply.
    path("admin/login/", admin_sign_in, name="admin-sign-in"),
    path("admin/", admin.site.urls),
    # Before Django's own auth URLs, so failed sign-ins are throttled.
    path("accounts/login/", ThrottledLoginView.as_view(), name="login"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("", include("accounts_app.page_urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    # The documentation pages run only their own files (Swagger's start script is served apart), but
    # style with <style> elements and Redoc runs a worker from a blob: (piweb.csp).
    path(
        "api/docs/",
        loosened(SpectacularSwaggerSplitView.as_view(url_name="schema"), style_src=("'unsafe-inline'",)),
        name="api-docs",
    ),
    path(
        "api/redoc/",
        loosened(
            SpectacularRedocView.as_view(url_name="schema"),
            style_src=("'unsafe-inline'",),
            worker_src=("'self'", "blob:"),
        ),
        name="api-redoc",
    ),
]

urlpatterns += [
    path("api/", include("compaction_app.urls")),
    path("api/", include("agent.urls")),
    path("api/", include("governance.urls")),
    path("api/", include("costs.urls")),
    path("api/", include("accounts_app.urls")),
    path("api/", include("sync.urls")),
    path("api/", include("runners.urls")),
    path("api/", include("provenance.urls")),
    path("api/", include("organize.urls")),
    path("api/", include("teams.urls")),
    path("api/", include("sessions_app.urls")),
    path("", include("costs.page_urls")),
    path("api/", include("discussion.urls")),
    path("", include("discussion.page_urls")),
    path("api/", include("reviews.urls")),
    path("", include("reviews.page_urls")),
    path("", include("runners.page_urls")),
    path("", include("organize.page_urls")),
    path("api/", include("audit.urls")),
    path("", include("audit.page_urls")),
    path("api/", include("activity.urls")),
    path("", include("activity.page_urls")),
    path("api/", include("hooks.urls")),
    path("", include("hooks.page_urls")),
    path("", include("sessions_app.page_urls")),
]

# Last: every route above, resolved once per path (piweb/url_memo.py).
urlpatterns = [MemoizedRoutes(urlpatterns)]
