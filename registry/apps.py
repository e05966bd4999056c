from django.apps import AppConfig


class RegistryConfig(AppConfig):
    name = "registry"
    verbose_name = "benchreg registry"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The Celery app becomes the current app before any task is sent (registry/__init__ no longer imports it).
        from registry import celery  # noqa: F401
