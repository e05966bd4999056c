from typing import Any

from django.apps import AppConfig
from django.contrib.admin.apps import SimpleAdminConfig
from django.contrib.admin.checks import check_admin_app, check_dependencies
from django.core import checks


class RegistryConfig(AppConfig):
    name = "registry"
    verbose_name = "benchreg registry"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Imported here, once the apps are loaded: the Celery app becomes the current app before any task is sent,
        # and importing the tasks (below) imports models. The registry's tasks (registry.tasks:
        # every service they call, ~0.1 s of a start-up) are not imported here: the app imports them when its task
        # registry is first read (registry.celery; registry.dispatch reads it to send any task), and a worker
        # imports them at its start (autodiscovery), so every process still finds each task by name.
        from registry import celery

        if celery.app.finalized:  # type: ignore[attr-defined]  # not in the stubs; registry read before the models
            celery.import_registry_tasks()


class PolicyAdminConfig(SimpleAdminConfig):
    """The Django admin, with registry.policy deciding who may use it (admins by role, not only staff).

    Without autodiscovery at start-up (SimpleAdminConfig): the apps' admin modules (registry/admin.py imports the
    services its actions call, ~0.3 s) are imported by the URLconf (registry/urls.py), which only the processes that
    serve or check URLs load, not every command and worker."""

    default_site = "registry.admin_site.PolicyAdminSite"

    def ready(self) -> None:
        checks.register(check_dependencies, checks.Tags.admin)
        checks.register(check_admin_modules, checks.Tags.admin)


def check_admin_modules(app_configs: Any, **kwargs: Any) -> list[checks.CheckMessage]:
    """Django's check of every admin site's ModelAdmins, once the apps' admin modules are registered: the system
    checks (`check`, `serve`, `migrate`) may run before anything loads the URLconf, which registers them."""
    from django.contrib import admin

    admin.autodiscover()  # each module is imported once; again is a no-op
    return list(check_admin_app(app_configs, **kwargs))
