from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from registry import health

urlpatterns = [
    path("api/v1/", include("registry.api.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    # The split view serves Swagger UI's start-up script as a file, so the docs page needs no inline script (CSP).
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="api-schema"), name="api-docs"),
    path("admin/", admin.site.urls),
    # --- operations (issue 17): probes for orchestrators and compose (registry/health.py) ---
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
    path("", include("registry.web_urls")),
]

handler400 = "registry.api.exception_handlers.bad_request"  # a body too large is 413
handler404 = "registry.views.not_found"
handler500 = "registry.views.server_error"
