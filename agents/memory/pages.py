"""The web app's Memories page (``/o/<slug>/memories/``): every member sees, searches, adds, changes and
deletes their own memories in the organisation.

Reads go through :mod:`agents.memory.selectors` (the person's own memories only: anyone else's is the 404
of a missing one), writes through :mod:`agents.memory.services` (audited without the text). Plain forms
with the CSRF token; the only script asks before a deletion.
"""

from __future__ import annotations

import uuid
from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import urlencode
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_GET, require_POST

from agents.memory.limits import TEXT_MAX_CHARS
from agents.memory.models import Memory, MemoryOrigin
from agents.memory.selectors import memories_of_person, memory_get_for_person, memory_search
from agents.memory.services import (
    MemoryRefused,
    memory_create,
    memory_delete,
    memory_update,
)
from platform_core.models import Organization
from platform_core.request_meta import client_ip, signed_in_user
from platform_core.tenancy.scoping import member_org_from_slug

PAGE_SIZE = 50
SEARCH_MAX_CHARS = 200


class MemoryForm(forms.Form):
    text = forms.CharField(
        label=gettext_lazy("New memory"),
        max_length=TEXT_MAX_CHARS,
        widget=forms.Textarea(attrs={"rows": 2, "maxlength": TEXT_MAX_CHARS}),
    )


def _where(request: HttpRequest) -> dict[str, str]:
    """The search and the page the request came from (a form's hidden fields, or the page's query)."""
    source = request.POST if request.method == "POST" else request.GET
    where = {"q": source.get("q", "").strip()[:SEARCH_MAX_CHARS], "page": source.get("page", "")}
    return {key: value for key, value in where.items() if value}


def _back(org: Organization, where: dict[str, str]) -> HttpResponse:
    url = reverse("memories-page", kwargs={"org_slug": org.slug})
    return redirect(f"{url}?{urlencode(where)}" if where else url)


def _page(
    request: HttpRequest, org: Organization, *, add_form: MemoryForm | None = None, status: int = 200
) -> HttpResponse:
    user = signed_in_user(request)
    where = _where(request)
    search = where.get("q", "")
    mine = memories_of_person(organization_id=org.pk, user=user)
    shown = memory_search(mine, search) if search else mine
    page = Paginator(shown, PAGE_SIZE).get_page(where.get("page"))
    context: dict[str, Any] = {
        "org": org,
        "page": page,
        "memories": list(page.object_list),
        "search": search,
        "has_any": bool(page.object_list) or mine.exists(),
        "add_form": add_form or MemoryForm(),
        "text_max_chars": TEXT_MAX_CHARS,
        "origin_person": MemoryOrigin.PERSON,
        "origin_extracted": MemoryOrigin.EXTRACTED,
    }
    return render(request, "agents/memories.html", context, status=status)


@login_required
@require_GET
def memories_page(request: HttpRequest, org_slug: str) -> HttpResponse:
    """The person's memories in the organisation, newest first (``?q=`` searches their text)."""
    org, _membership = member_org_from_slug(user=signed_in_user(request), slug=org_slug)
    return _page(request, org)


@login_required
@require_POST
def memory_add(request: HttpRequest, org_slug: str) -> HttpResponse:
    """Write a memory of one's own (shown again with the problem when the text is refused)."""
    user = signed_in_user(request)
    org, _membership = member_org_from_slug(user=user, slug=org_slug)
    form = MemoryForm(request.POST)
    if not form.is_valid():
        return _page(request, org, add_form=form, status=400)
    saved = memory_create(
        organization_id=org.pk,
        user_id=user.pk,
        text=form.cleaned_data["text"],
        origin=MemoryOrigin.PERSON,
        actor=user,
        ip_address=client_ip(request),
    )
    if isinstance(saved, MemoryRefused):
        form.add_error("text", saved.reason)
        return _page(request, org, add_form=form, status=400)
    if saved.created:
        messages.success(request, _("Memory saved."))
    else:
        messages.info(request, _("You already had this memory: nothing changed."))
    return _back(org, {})


def _own_memory(request: HttpRequest, org_slug: str, memory_id: uuid.UUID) -> tuple[Organization, Memory]:
    user = signed_in_user(request)
    org, _membership = member_org_from_slug(user=user, slug=org_slug)
    memory = memory_get_for_person(organization_id=org.pk, user=user, memory_id=memory_id)
    if memory is None:
        raise Http404("No such memory.")
    return org, memory


@login_required
@require_POST
def memory_edit(request: HttpRequest, org_slug: str, memory_id: uuid.UUID) -> HttpResponse:
    """Change one of the person's memories."""
    org, memory = _own_memory(request, org_slug, memory_id)
    form = MemoryForm(request.POST)
    if not form.is_valid():
        messages.error(request, " ".join(str(error) for error in form.errors.get("text", [])))
        return _back(org, _where(request))
    saved = memory_update(
        memory=memory,
        text=form.cleaned_data["text"],
        actor=signed_in_user(request),
        ip_address=client_ip(request),
    )
    if isinstance(saved, MemoryRefused):
        messages.error(request, saved.reason)
    else:
        messages.success(request, _("Memory changed."))
    return _back(org, _where(request))


@login_required
@require_POST
def memory_remove(request: HttpRequest, org_slug: str, memory_id: uuid.UUID) -> HttpResponse:
    """Delete one of the person's memories: no model is given it again."""
    org, memory = _own_memory(request, org_slug, memory_id)
    memory_delete(memory=memory, actor=signed_in_user(request), ip_address=client_ip(request))
    messages.success(request, _("Memory deleted: no agent will be given it again."))
    return _back(org, _where(request))
