"""The root URL conf: the API under /api/, the admin, the probes, and the pages everywhere else.

It is the one module that sees both doors, so Django's 404 and 500 handlers pick the door's own answer here:
problem+json under /api/ (registry.api.exception_handlers), an error page elsewhere (registry.web.errors).
"""

from django.contrib import admin
from django.http import HttpRequest, HttpResponse
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from registry import health
from registry.api import exception_handlers as api_errors
from registry.web import errors as web_errors

# The admin is a SimpleAdminConfig (registry/apps.py): its ModelAdmins (registry/admin.py, the auth and axes ones)
# are registered here, where the URLconf that serves them is loaded, not at every process's start-up.
admin.autodiscover()

urlpatterns = [
    path("api/v1/", include("registry.api.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    # The split view serves Swagger UI's start-up script as a file, so the docs page needs no inline script (CSP).
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="api-schema"), name="api-docs"),
    path("admin/", admin.site.urls),
    # Probes for orchestrators and compose (registry/health.py).
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
    path("", include("registry.web.urls")),
]


def _is_api(request: HttpRequest) -> bool:
    return request.path.startswith("/api/")


def not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    if _is_api(request):
        return api_errors.api_not_found(request, exception)
    return web_errors.not_found(request, exception)


def server_error(request: HttpRequest) -> HttpResponse:
    if _is_api(request):
        return api_errors.api_server_error(request)
    return web_errors.server_error(request)


handler400 = "registry.api.exception_handlers.bad_request"  # both doors; a body too large is 413
handler404 = not_found
handler500 = server_error
