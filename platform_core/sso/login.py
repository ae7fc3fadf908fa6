"""The sign-in page: username and password, and a button for each single sign-on provider."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.forms import AuthenticationForm
from django.contrib.auth.views import LoginView
from django.core.exceptions import ValidationError
from django.utils.text import format_lazy
from django.utils.translation import gettext_lazy as _

from platform_core.sso.backends import REFUSAL_ATTR
from platform_core.sso.buttons import provider_buttons, provider_names, provider_origins
from platform_core.sso.rules import PasswordLoginOff

if TYPE_CHECKING:
    _MixedInto = AuthenticationForm
else:
    _MixedInto = object  # at run time a plain mixin: the form class supplies clean() and request

PASSWORD_LOGIN_OFF = "password_login_off"


def password_off_message(request: Any, refusal: PasswordLoginOff) -> str:
    """Which organisation switched passwords off, and how to sign in instead."""
    names = provider_names(request, refusal.providers)
    orgs = ", ".join(refusal.organizations)
    if names:
        return str(
            format_lazy(
                _("{orgs} does not allow signing in with a password. Sign in with {providers} instead."),
                orgs=orgs,
                providers=" / ".join(names),
            )
        )
    return str(
        format_lazy(
            _("{orgs} does not allow signing in with a password. Ask its administrator how to sign in."),
            orgs=orgs,
        )
    )


class PasswordOffMessageMixin(_MixedInto):
    """Explains a refusal by :class:`~platform_core.sso.backends.PasswordPolicyBackend` (it comes only
    after a correct password, so it tells nothing to someone guessing)."""

    def clean(self) -> dict[str, Any]:
        try:
            return super().clean()
        except ValidationError:
            refusal = getattr(self.request, REFUSAL_ATTR, None)
            if refusal is not None:
                raise ValidationError(
                    password_off_message(self.request, refusal), code=PASSWORD_LOGIN_OFF
                ) from None
            raise


class PasswordSignInForm(PasswordOffMessageMixin, AuthenticationForm):
    pass


class AdminPasswordSignInForm(PasswordOffMessageMixin, AdminAuthenticationForm):
    pass


class SignInView(LoginView):
    """Django's ``LoginView`` with the provider buttons (``/login/``, the ``login`` URL name)."""

    template_name = "registration/login.html"
    form_class = PasswordSignInForm

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        form = context.get("form")
        context["password_login_off"] = bool(
            form is not None and form.is_bound and form.has_error("__all__", PASSWORD_LOGIN_OFF)
        )
        context["sso_buttons"] = provider_buttons(self.request, next_url=self.get_redirect_url())
        return context

    def render_to_response(self, context: dict[str, Any], **kwargs: Any) -> Any:
        response = super().render_to_response(context, **kwargs)
        origins = provider_origins(self.request) if context.get("sso_buttons") else []
        if origins:
            # django-csp 4's per-response update (https://django-csp.readthedocs.io/en/latest/decorators.html):
            # a provider button's POST is answered with a redirect to the provider, which form-action governs.
            response._csp_update = {"form-action": origins}  # type: ignore[attr-defined]  # django-csp reads it
        return response
