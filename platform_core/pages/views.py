"""Pages of the tenancy core: the home page listing the user's organisations, and the API keys page."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse, HttpResponsePermanentRedirect
from django.shortcuts import redirect, render
from django.templatetags.static import static
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods, require_POST

from platform_core.identity.api_keys.forms import ApiKeyForm
from platform_core.identity.api_keys.keys import (
    api_key_create,
    api_key_list_for_org,
    api_key_list_personal,
    api_key_revoke,
)
from platform_core.identity.members.invitations import member_invitation_list_for_user
from platform_core.models import ApiKey, Membership
from platform_core.request_meta import client_ip, signed_in_user
from platform_core.selectors import admin_organizations_for_user


@login_required
def home(request: HttpRequest) -> HttpResponse:
    memberships = (
        Membership.objects.filter(user=signed_in_user(request))
        .select_related("organization")
        .order_by("organization__name")
    )
    invitation_count = member_invitation_list_for_user(user=signed_in_user(request)).count()  # issue 31
    return render(
        request, "platform_core/home.html", {"memberships": memberships, "invitation_count": invitation_count}
    )


def _api_key_page(
    request: HttpRequest, *, admin_orgs: list[Any], form: ApiKeyForm, created: Any = None
) -> HttpResponse:
    sections = [
        {"org": org, "keys": list(api_key_list_for_org(organization=org).select_related("created_by"))}
        for org in admin_orgs
    ]
    response = render(
        request,
        "platform_core/api_keys.html",
        {
            "form": form,
            "personal_keys": list(api_key_list_personal(user=signed_in_user(request))),
            "org_sections": sections,
            "created": created,
        },
    )
    response["Cache-Control"] = "no-store"
    return response


@login_required
@require_http_methods(["GET", "POST"])
def api_keys(request: HttpRequest) -> HttpResponse:
    """The user's personal API keys and, for owners and admins, their organisations' keys: list, create
    (the new key is shown once, on the page that answers the form) and revoke."""
    admin_orgs = list(admin_organizations_for_user(user=signed_in_user(request)).order_by("name"))
    if request.method != "POST":
        return _api_key_page(request, admin_orgs=admin_orgs, form=ApiKeyForm(admin_orgs=admin_orgs))
    form = ApiKeyForm(request.POST, admin_orgs=admin_orgs)
    if not form.is_valid():
        return _api_key_page(request, admin_orgs=admin_orgs, form=form)
    if not form.claim(request.session):
        messages.info(request, _("This form was already sent: its key was shown once and is listed below."))
        return redirect("api-keys")
    organization = form.organization()
    try:
        created = api_key_create(
            name=form.cleaned_data["name"],
            scopes=form.cleaned_data["scopes"],
            expires_at=form.expires_at(),
            owner=None if organization else signed_in_user(request),
            organization=organization,
            actor=signed_in_user(request),
            ip_address=client_ip(request),
        )
    except ValidationError as exc:
        for field, errors in exc.message_dict.items():
            form.add_error(field if field in form.fields else None, errors)
        return _api_key_page(request, admin_orgs=admin_orgs, form=form)
    return _api_key_page(
        request, admin_orgs=admin_orgs, form=ApiKeyForm(admin_orgs=admin_orgs), created=created
    )


@login_required
@require_POST
def api_key_revoke_page(request: HttpRequest, key_id: int) -> HttpResponse:
    """Revoke one of the user's personal keys or a key of an organisation they administer (else 404)."""
    key = ApiKey.objects.filter(pk=key_id, organization__isnull=True, user=signed_in_user(request)).first()
    if key is None:
        orgs = admin_organizations_for_user(user=signed_in_user(request))
        key = ApiKey.objects.filter(pk=key_id, organization__in=orgs).first()
    if key is None:
        raise Http404("Not found.")
    api_key_revoke(key=key, actor=signed_in_user(request), ip_address=client_ip(request))
    messages.success(request, _("API key “%(name)s” revoked.") % {"name": key.name or key.key_prefix})
    return redirect("api-keys")


def favicon(request: HttpRequest) -> HttpResponse:
    """``/favicon.ico``, which browsers ask every site for: the platform's icon."""
    return HttpResponsePermanentRedirect(static("favicon.svg"))
