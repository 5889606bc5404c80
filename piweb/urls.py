"""Top-level URLs; the apps' own URL modules are included once they exist."""

from django.contrib import admin
from django.http import HttpRequest, HttpResponse
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerView

from piweb.imports import import_optional
from sessions_app.signin_throttle import ThrottledLoginView


def home(request: HttpRequest) -> HttpResponse:
    """Answer the root URL until the sessions app provides its pages."""
    return HttpResponse("piweb", content_type="text/plain")


urlpatterns = [
    path("admin/", admin.site.urls),
    # Before Django's own auth URLs, so failed sign-ins are throttled.
    path("accounts/login/", ThrottledLoginView.as_view(), name="login"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="api-docs"),
    path("api/redoc/", SpectacularRedocView.as_view(url_name="schema"), name="api-redoc"),
]

urlpatterns.append(path("api/", include("compaction_app.api.urls")))
urlpatterns.append(path("api/", include("piweb.agent.urls")))
if import_optional("sessions_app.api.urls"):
    urlpatterns.append(path("api/", include("sessions_app.api.urls")))

if import_optional("sessions_app.urls"):
    urlpatterns.append(path("", include("sessions_app.urls")))
else:
    urlpatterns.append(path("", home, name="home"))
