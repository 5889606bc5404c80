"""Top-level URLs: the admin, sign-in, the API (schema and docs) and each app's own routes."""

from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerView

from piweb.health import healthz, readyz
from piweb.metrics import metrics_view
from sessions_app.signin_throttle import ThrottledLoginView

urlpatterns = [
    # Probes and metrics for operators (README "Operations").
    path("healthz", healthz, name="healthz"),
    path("readyz", readyz, name="readyz"),
    path("metrics", metrics_view, name="metrics"),
    path("admin/", admin.site.urls),
    # Before Django's own auth URLs, so failed sign-ins are throttled.
    path("accounts/login/", ThrottledLoginView.as_view(), name="login"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("", include("accounts_app.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="api-docs"),
    path("api/redoc/", SpectacularRedocView.as_view(url_name="schema"), name="api-redoc"),
]

urlpatterns += [
    path("api/", include("compaction_app.api.urls")),
    path("api/", include("piweb.agent.urls")),
    path("api/", include("governance.urls")),
    path("api/", include("piweb.costs.urls")),
    path("api/", include("sessions_app.api.urls")),
    path("", include("piweb.costs.page_urls")),
    path("api/", include("discussion.urls")),
    path("", include("discussion.page_urls")),
    path("api/", include("piweb.audit.activity_urls")),
    path("", include("piweb.audit.activity_page_urls")),
    path("", include("sessions_app.urls")),
]
