"""The connector kinds the platform makes itself, never the connectors' form or API.

A knowledge base's connector comes with its knowledge base (``agents.knowledge``), the skill library's
with the organisation's first skill (``agents.skills``), the memory's with the first agent whose memory is
switched on (``agents.memory``): the connectors' form and API neither create a
connector of these kinds nor turn one into another kind (nor another into one of them).
"""

from __future__ import annotations

from collections.abc import Mapping, Set
from typing import TYPE_CHECKING, Any

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _

from connectors.adapter_types import CallOutcome, ConnectionTestResult, ConnectionWorks
from connectors.kinds import ActionCalled, CallFacts, ToolText
from connectors.models import ActionSource, Connector, ConnectorAction, ConnectorKind
from connectors.selectors import connector_name_free
from platform_core.audit.audited import audited_save
from platform_core.models import Organization

if TYPE_CHECKING:
    from django.contrib.auth.models import User

# Per kind: why a connector of it cannot be made here, and why one cannot change kind.
_MADE_ELSEWHERE: dict[str, tuple[Promise, Promise]] = {
    ConnectorKind.KNOWLEDGE.value: (
        _("Create knowledge bases under Knowledge bases; their connector comes with them."),
        _("A knowledge base's connector stays a knowledge base."),
    ),
    ConnectorKind.SKILLS.value: (
        _("The skill library's connector comes with the organisation's first skill (under Skills)."),
        _("The skill library's connector stays the skill library's."),
    ),
    ConnectorKind.MEMORY.value: (
        _("The memory's connector comes with the first agent whose memory is switched on."),
        _("The memory's connector stays the memory's."),
    ),
}


def kind_choice_error(current_kind: str | None, chosen_kind: str) -> str | None:
    """Why the connectors' form or API may not set ``chosen_kind`` on a connector of ``current_kind``
    (``None``: a new connector), or ``None`` when it may."""
    if chosen_kind == current_kind:
        return None
    if chosen_kind in _MADE_ELSEWHERE:
        return str(_MADE_ELSEWHERE[chosen_kind][0])
    if current_kind in _MADE_ELSEWHERE:
        return str(_MADE_ELSEWHERE[current_kind][1])
    return None


class PlatformToolKind:
    """A connector kind whose one action is a tool the platform itself runs (a read of its own rows): no
    settings, nothing outside the platform to reach, and its tool built by the agents app
    (``tools_from_connectors`` is false), so :meth:`call` is never how a run calls it. A subclass names its
    kind, its one action, what the model is told it reaches, its timeout and its messages."""

    kind: str
    action_name: str
    target: str
    timeout_seconds: float
    one_action_message: Promise
    no_request_message: Promise
    part_of_the_platform: str

    settings: tuple[str, ...] = ()
    call_log_method = ""
    private_arguments: frozenset[str] = frozenset()
    tools_from_connectors = False

    def connector_errors(self, connector: Connector) -> dict[str, Any]:
        """Nothing to set: what it reads is the organisation's own rows."""
        return {}

    def outbound_errors(
        self, connector: Connector, *, allowed_private_hosts: list[str], found: Set[str]
    ) -> dict[str, ValidationError]:
        """It reaches nothing outside the platform."""
        return {}

    def connector_saved(self, connector: Connector) -> None:
        return None

    def action_errors(self, action: ConnectorAction) -> dict[str, Any]:
        if action.name != self.action_name:
            return {"name": self.one_action_message}
        if (
            action.method
            or action.path_template
            or action.sql_template
            or action.free_form
            or action.mcp_tool
        ):
            return {"method": self.no_request_message}
        return {}

    def action_is_write(self, action: ConnectorAction) -> bool:
        return False

    def call_write_reason(self, action: CallFacts, arguments: Mapping[str, Any]) -> str | None:
        """A read: read-only mode allows it."""
        return None

    def tool_text(self, action: ConnectorAction) -> ToolText:
        return ToolText(target=self.target)

    def tool_timeout(self, action: ConnectorAction) -> float:
        return self.timeout_seconds

    def call_config(self, connector: Connector) -> None:
        return None

    def action_spec(self, action: ConnectorAction) -> None:
        return None

    async def call(
        self,
        config: Any,
        spec: Any,
        arguments: Mapping[str, Any],
        *,
        idempotency_key: str | None,
        is_write: bool,
    ) -> ActionCalled:
        """Not how a run calls it (the agents app builds the tool); answers an error if ever reached."""
        return ActionCalled(
            CallOutcome(status="error", content="", error=f"{self.target} runs as the platform's own tool")
        )

    async def test_connection(self, config: Any, secrets: tuple[str, ...]) -> ConnectionTestResult:
        return ConnectionWorks(detail=self.part_of_the_platform)


def platform_connector(
    *,
    organization: Organization,
    adapter: PlatformToolKind,
    name: str,
    description: str,
    action_description: str,
    parameters: dict[str, Any],
    actor: User | None,
) -> Connector:
    """The organisation's one connector of ``adapter``'s kind, made the first time (active, named ``name``
    or ``name_2``... when that name is taken, with its one action, a read of ``parameters``); a
    connector made meanwhile by another request is the one returned."""
    found = _platform_connector(organization, adapter.kind)
    if found is not None:
        return found
    try:
        with transaction.atomic():
            connector = Connector(
                organization=organization,
                name=connector_name_free(organization, name),
                description=description,
                kind=adapter.kind,
            )
            audited_save(instance=connector, actor=actor)
            ConnectorAction.objects.create(
                organization=organization,
                connector=connector,
                name=adapter.action_name,
                description=action_description,
                parameters=parameters,
                is_write=False,
                source=ActionSource.MANUAL,
            )
            return connector
    except (IntegrityError, ValidationError):  # made meanwhile (one per organisation: a constraint)
        made = _platform_connector(organization, adapter.kind)
        if made is None:
            raise
        return made


def _platform_connector(organization: Organization, kind: str) -> Connector | None:
    return Connector.objects.for_org(organization).filter(kind=kind).first()
