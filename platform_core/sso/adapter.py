"""Where allauth asks the platform: who may sign up, which organisation a social login joins, and
whether an existing account is the same person.

https://docs.allauth.org/en/latest/socialaccount/adapter.html (``pre_social_login``,
``is_open_for_signup``, ``populate_user``, ``save_user``).
"""

from __future__ import annotations

from typing import Any

from allauth.account.adapter import DefaultAccountAdapter
from allauth.account.adapter import get_adapter as get_account_adapter
from allauth.core.exceptions import ImmediateHttpResponse
from allauth.socialaccount import app_settings as socialaccount_settings
from allauth.socialaccount.adapter import DefaultSocialAccountAdapter
from allauth.socialaccount.providers.base import AuthProcess
from django.contrib import messages
from django.http import HttpRequest, HttpResponseRedirect
from django.urls import reverse
from django.utils.translation import gettext as _

from platform_core.sso.buttons import provider_names
from platform_core.sso.identity import SsoIdentity, identity_from_sociallogin
from platform_core.sso.providers import FEISHU
from platform_core.sso.rules import existing_user_for, sign_in_apply, sign_in_rules_matching


class PlatformAccountAdapter(DefaultAccountAdapter):
    """Local accounts are made by admins and operators, never by signing up on the site."""

    def is_open_for_signup(self, request: HttpRequest) -> bool:
        return False


class OrgSocialAccountAdapter(DefaultSocialAccountAdapter):
    """Social logins join organisations by their sign-in rules; an identity no rule admits is refused."""

    def pre_social_login(self, request: HttpRequest, sociallogin: Any) -> None:
        identity = identity_from_sociallogin(sociallogin)
        if sociallogin.state.get("process") == AuthProcess.CONNECT:
            # A signed-in user adds the account to their own: both sides are proven.
            if request.user.is_authenticated:
                sign_in_apply(user=request.user, identity=identity, rules=[])
            return
        rules = sign_in_rules_matching(identity)
        if not rules:
            messages.error(request, refusal_message(request, identity))
            raise ImmediateHttpResponse(HttpResponseRedirect(reverse("login")))
        if not sociallogin.is_existing:
            user = existing_user_for(identity, rules)
            if user is not None:
                sociallogin.connect(request, user)
        if sociallogin.is_existing and sociallogin.user.is_active:
            sign_in_apply(user=sociallogin.user, identity=identity, rules=rules)

    def list_apps(
        self, request: HttpRequest | None, provider: str | None = None, client_id: str | None = None
    ) -> list[Any]:
        """The deployment's provider apps, from settings only (no database apps: an admin cannot add a
        provider the operator did not configure, and pages need no query for them)."""
        return settings_apps(provider=provider, client_id=client_id)

    def is_open_for_signup(self, request: HttpRequest, sociallogin: Any) -> bool:
        return bool(sign_in_rules_matching(identity_from_sociallogin(sociallogin)))

    def populate_user(self, request: HttpRequest, sociallogin: Any, data: dict[str, Any]) -> Any:
        user = super().populate_user(request, sociallogin, data)
        # A name from the provider is a hint, never a claim on an existing username.
        email = data.get("email") or ""
        hints = [data.get("username") or "", email.partition("@")[0], data.get("name") or "", "user"]
        user.username = get_account_adapter(request).generate_unique_username([h for h in hints if h])
        if not user.first_name and data.get("name"):
            user.first_name = str(data["name"])[:150]
        return user

    def save_user(self, request: HttpRequest, sociallogin: Any, form: Any = None) -> Any:
        user = super().save_user(request, sociallogin, form)
        identity = identity_from_sociallogin(sociallogin)
        sign_in_apply(user=user, identity=identity, rules=sign_in_rules_matching(identity))
        return user


def settings_apps(*, provider: str | None = None, client_id: str | None = None) -> list[Any]:
    """``SocialApp`` objects (unsaved) for the apps of ``SOCIALACCOUNT_PROVIDERS``, as allauth builds them
    (https://docs.allauth.org/en/latest/socialaccount/provider_configuration.html)."""
    from allauth.socialaccount.models import SocialApp

    apps: list[Any] = []
    for name, config in socialaccount_settings.PROVIDERS.items():
        for app_config in config.get("APPS") or ([config["APP"]] if config.get("APP") else []):
            app = SocialApp(provider=name)
            for field in ("name", "provider_id", "client_id", "secret", "key", "settings"):
                if field in app_config:
                    setattr(app, field, app_config[field])
            if provider and provider not in (app.provider, app.provider_id):
                continue
            if client_id and app.client_id != client_id:
                continue
            apps.append(app)
    return apps


def refusal_message(request: HttpRequest, identity: SsoIdentity) -> str:
    """Why an identity may not sign in here, and what to do about it."""
    if identity.provider == FEISHU:
        return _(
            "Your Feishu organisation (tenant key %(tenant)s) may not sign in here. Ask an administrator of "
            "your organisation on this platform to add a Feishu sign-in rule for it."
        ) % {"tenant": identity.tenant_key or "?"}
    provider = provider_names(request, (identity.provider,))[0]
    domains = ", ".join(sorted(identity.email_domains))
    if not domains:
        return _(
            "%(provider)s did not report a verified e-mail address, so this platform cannot tell which "
            "organisation you belong to. Ask your administrator."
        ) % {"provider": provider}
    return _(
        "Users of %(domains)s may not sign in here with %(provider)s. Ask an administrator of your "
        "organisation on this platform to add a sign-in rule for your e-mail domain."
    ) % {"domains": domains, "provider": provider}
