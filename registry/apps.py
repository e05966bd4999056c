from django.apps import AppConfig
from django.contrib.admin.apps import AdminConfig


class RegistryConfig(AppConfig):
    name = "registry"
    verbose_name = "benchreg registry"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Imported here, not at the top: they import models, which Django allows only once the apps are loaded.
        # The Celery app becomes the current app before any task is sent, and every registry task is registered
        # in it, so registry.dispatch finds each by name in every process (web, worker, commands).
        from registry import celery, tasks  # noqa: F401


class PolicyAdminConfig(AdminConfig):
    """The Django admin, with registry.policy deciding who may use it (admins by role, not only staff)."""

    default_site = "registry.admin_site.PolicyAdminSite"
