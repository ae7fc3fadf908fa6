"""Walks over what a Chinese-speaking admin reads: status and choice labels, Django's own admin strings,
the words for model usage, and help texts the admin shows as HTML.

Each walk reads its corpus from the code (every TextChoices and model field with choices, Django's
English source catalogues, both shipped catalogues, every registered admin form), so a new status,
a new Django release or a new help text is checked without touching this file.
"""

from __future__ import annotations

import gettext as gettext_module
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import django
import pytest
from django.apps import apps
from django.contrib import admin
from django.db import models
from django.test import RequestFactory
from django.utils import translation
from django.utils.html import strip_tags
from django.utils.translation.trans_real import DjangoTranslation

ROOT = Path(__file__).resolve().parents[2]
PROJECT_APPS = ("platform_core", "connectors", "agents", "hooks")
DJANGO_DIR = Path(django.__file__).parent
# Labels that are the same words in every language (protocol verbs), not text to translate.
VERBATIM_LABELS = {"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"}


def _project_models() -> list[type[models.Model]]:
    return [m for m in apps.get_models() if m._meta.app_config.name.split(".")[0] in PROJECT_APPS]


def _text_choices() -> Iterator[type[models.Choices]]:
    for model in _project_models():
        __import__(model.__module__)
    stack = list(models.Choices.__subclasses__())
    while stack:
        cls = stack.pop()
        stack.extend(cls.__subclasses__())
        if cls.__module__.split(".")[0] in PROJECT_APPS and cls.__members__:
            yield cls


def _choice_corpus() -> list[tuple[str, object]]:
    """(where, label) of every TextChoices member and every model field choice of the project."""
    corpus: dict[str, object] = {}
    for cls in _text_choices():
        for member in cls:
            corpus[f"{cls.__module__}.{cls.__qualname__}.{member.name}"] = member.label
    for model in _project_models():
        for field in model._meta.get_fields():
            for value, label in getattr(field, "flatchoices", None) or []:
                corpus.setdefault(f"{model._meta.label}.{field.name}={value}", label)
    return sorted(corpus.items())


CHOICES = _choice_corpus()


@pytest.mark.parametrize(("where", "label"), CHOICES, ids=[where for where, _ in CHOICES])
def test_every_status_and_choice_label_reads_chinese_under_zh_hans(where, label):
    with translation.override("en"):
        english = str(label)
    if english in VERBATIM_LABELS:
        return
    with translation.override("zh-hans"):
        chinese = str(label)
    assert chinese != english, f"{where}: {english!r} has no Simplified Chinese translation"
    assert re.search(r"[\u4e00-\u9fff]", chinese), f"{where}: {chinese!r} is not Chinese"


def test_the_choice_walk_sees_the_statuses():
    names = {where.rsplit(".", 2)[-2] for where, _ in CHOICES if where.count(".") >= 2}
    assert {"ApprovalStatus", "CardStatus", "RunStatus", "ToolCallStatus", "CallStatus", "Role"} <= names


# --- Django's own admin strings --------------------------------------------------------------------


@dataclass(frozen=True)
class SourceMessage:
    context: str | None
    msgid: str
    plural: str | None

    @property
    def key(self) -> str:
        return f"{self.context}\x04{self.msgid}" if self.context else self.msgid


def _unquote(lines: str) -> str:
    return "".join(
        bytes(part, "utf-8").decode("unicode_escape").encode("latin-1").decode("utf-8")
        for part in re.findall(r'"(.*)"', lines)
    )


def source_messages(po_file: Path) -> list[SourceMessage]:
    """The messages of a .po file (its header and obsolete entries left out)."""
    messages = []
    for block in po_file.read_text(encoding="utf-8").split("\n\n"):
        lines = "\n".join(line for line in block.splitlines() if not line.startswith("#"))
        found = re.search(
            r'(?:^msgctxt ((?:".*"\n?)+))?^msgid ((?:".*"\n?)+)(?:^msgid_plural ((?:".*"\n?)+))?', lines, re.M
        )
        if not found or not _unquote(found.group(2)):
            continue
        context, msgid, plural = found.groups()
        messages.append(
            SourceMessage(
                _unquote(context) if context else None, _unquote(msgid), _unquote(plural) if plural else None
            )
        )
    return messages


# (Django package, domain): the catalogues whose strings the admin pages show.
DJANGO_CATALOGUES = [
    ("contrib/admin", "djangojs"),
    ("contrib/admin", "django"),
    ("contrib/auth", "django"),
    ("conf", "django"),
]


def _translated(catalogue: DjangoTranslation, message: SourceMessage) -> bool:
    keys = [(message.key, 0)] if message.plural else [message.key]
    return all(key in catalogue._catalog for key in keys)


@pytest.mark.parametrize(
    ("package", "domain"), DJANGO_CATALOGUES, ids=["/".join(c) for c in DJANGO_CATALOGUES]
)
def test_djangos_admin_strings_have_a_chinese_translation(package, domain):
    locale_dir = DJANGO_DIR / package / "locale"
    messages = source_messages(locale_dir / "en" / "LC_MESSAGES" / f"{domain}.po")
    assert len(messages) > 10
    if domain == "django":
        catalogue = translation.trans_real.translation("zh-hans")
    else:  # what the admin's JavaScriptCatalog builds for the page
        catalogue = DjangoTranslation("zh-hans", domain=domain, localedirs=[str(locale_dir)])
    missing = [m.key for m in messages if not _translated(catalogue, m)]
    assert not missing, f"{package} {domain}: no Chinese for {missing}"


# --- "tokens" of model usage are not security tokens --------------------------------------------

# A msgid about credentials, whose "token" is a security token (令牌 is right there).
SECURITY_TOKEN = re.compile(r"bearer|api token|verification token|oauth2? token|secret, tokens", re.I)


def _shipped_entries() -> list[tuple[str, str, str]]:
    """(domain, msgid, msgstr) of the shipped catalogues, plural forms included."""
    entries = []
    for domain in ("django", "djangojs"):
        mo = ROOT / "locale" / "zh_Hans" / "LC_MESSAGES" / f"{domain}.mo"
        with mo.open("rb") as handle:
            catalog = gettext_module.GNUTranslations(handle)._catalog
        for key, value in catalog.items():
            msgid = key[0] if isinstance(key, tuple) else key
            if msgid:
                entries.append((domain, msgid, value))
    return entries


USAGE_TOKENS = [e for e in _shipped_entries() if "token" in e[1].lower() and not SECURITY_TOKEN.search(e[1])]


@pytest.mark.parametrize(("domain", "msgid", "msgstr"), USAGE_TOKENS, ids=[e[1][:50] for e in USAGE_TOKENS])
def test_model_usage_tokens_are_not_translated_as_security_tokens(domain, msgid, msgstr):
    assert "令牌" not in msgstr, f"{domain}: {msgid!r} speaks of model tokens, not of 令牌: {msgstr!r}"
    assert "token" in msgstr.lower() or "词元" in msgstr


def test_the_token_walk_sees_the_usage_strings():
    msgids = {msgid for _, msgid, _ in USAGE_TOKENS}
    assert {"%s token", "token usage"} <= msgids


# --- help texts: the admin renders them as HTML --------------------------------------------------


def _admin_forms() -> list[tuple[str, object]]:
    return sorted(
        (f"{model._meta.label}", model_admin)
        for model, model_admin in admin.site._registry.items()
        if model._meta.app_config.name.split(".")[0] in PROJECT_APPS
    )


ADMINS = _admin_forms()


@pytest.mark.django_db
@pytest.mark.parametrize("language", ["en", "zh-hans"])
@pytest.mark.parametrize(("label", "model_admin"), ADMINS, ids=[label for label, _ in ADMINS])
def test_admin_help_texts_show_their_text_literally(label, model_admin, language, django_user_model):
    request = RequestFactory().get("/admin/")
    request.user = django_user_model(is_superuser=True, is_staff=True)
    with translation.override(language):
        form = model_admin.get_form(request, None)()
        for name, field in form.fields.items():
            shown = str(field.help_text)  # the admin prints it with |safe
            assert strip_tags(shown) == shown, (
                f"{label}.{name}: the admin would hide part of {shown!r} as markup"
            )


@pytest.mark.django_db
@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_the_connector_name_help_text_shows_the_tool_name_pattern(admin_client, language):
    page = admin_client.get(
        "/admin/connectors/connector/add/", HTTP_ACCEPT_LANGUAGE=language
    ).content.decode()
    assert "&lt;connector&gt;__&lt;action&gt;" in page
