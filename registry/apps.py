from django.apps import AppConfig
from django.contrib.admin.apps import AdminConfig


class RegistryConfig(AppConfig):
    name = "registry"
    verbose_name = "benchreg registry"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The Celery app becomes the current app before any task is sent (registry/__init__ no longer imports it).
        from registry import celery  # noqa: F401

        # A series alert (issue 19) marks the decisions citing the series as "evidence changed" (issue 14).
        from registry.services.decisions import decisions_flag_for_series_alert
        from registry.services.series import alert_raised

        alert_raised.connect(decisions_flag_for_series_alert, dispatch_uid="decisions-on-series-alert")


class PolicyAdminConfig(AdminConfig):
    """The Django admin, with registry.policy deciding who may use it (admins by role, not only staff)."""

    default_site = "registry.admin_site.PolicyAdminSite"
