from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class PlatformCoreConfig(AppConfig):
    name = "platform_core"
    verbose_name = _("Organisations and audit")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from platform_core import schema  # noqa: F401  (registers the OpenAPI auth extension)
