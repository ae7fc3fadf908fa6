"""Readable names of the audit log's actions, in every language the platform speaks.

An audit row stores its action as a stable string (``agent.updated``); the admin, the API
(``action_label``) and exports show the label registered here. Every action the code writes must be
registered: a test walks the code's ``audit_log_write`` calls and fails for an action without a label.
"""

from __future__ import annotations

from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _

AUDIT_ACTION_LABELS: dict[str, Promise] = {
    # organisations and members
    "organization.created": _("Organisation created"),
    "organization.read_only.enabled": _("Read-only mode turned on"),
    "organization.read_only.disabled": _("Read-only mode turned off"),
    "organization.approval_cooldown.changed": _("Approval cooldown changed"),
    "organization.time_zone.changed": _("Time zone changed"),
    "organization.attachment_retention.changed": _("Retention of chat attachments changed"),
    "organization.memory_retention.changed": _("Retention of memories changed"),
    "membership.created": _("Member added"),
    "membership.updated": _("Member's role changed"),
    "membership.deleted": _("Member removed"),
    # member groups (issue 34)
    "member_group.created": _("Member group created"),
    "member_group.updated": _("Member group changed"),
    "member_group.members_added": _("Members added to a group"),
    "member_group.members_removed": _("Members removed from a group"),
    "member_group.deleted": _("Member group deleted"),
    "skill.created": _("Skill created"),
    "skill.updated": _("Skill changed"),
    "skill.imported": _("Skill imported"),
    "skill.deleted": _("Skill deleted"),
    # API keys
    "api_key.created": _("API key created"),
    "api_key.used_from_new_ip": _("API key used from a new IP address"),
    "api_key.revoked": _("API key revoked"),
    "membership.invited": _("Member invited"),
    "membership.invitation_sent": _("Invitation to join sent"),
    "membership.invitation_accepted": _("Invitation to join accepted"),
    "membership.invitation_declined": _("Invitation to join declined"),
    "membership.invitation_cancelled": _("Invitation to join withdrawn"),
    "linked_identity.created": _("Feishu account linked to a member"),
    "linked_identity.deleted": _("Feishu account unlinked from a member"),
    # single sign-on (issue 20)
    "sign_in_rule.created": _("Sign-in rule added"),
    "sign_in_rule.updated": _("Sign-in rule changed"),
    "sign_in_rule.deleted": _("Sign-in rule removed"),
    "sign_in_rule.approved": _("Sign-in rule approved by an operator"),
    "sign_in_rule.approval_withdrawn": _("Sign-in rule's approval withdrawn"),
    "sign_in_settings.created": _("Sign-in settings added"),
    "sign_in_settings.updated": _("Sign-in settings changed"),
    "sign_in_settings.deleted": _("Sign-in settings removed"),
    # agents and model endpoints
    "agent.created": _("Agent created"),
    "agent.updated": _("Agent changed"),
    "agent.deleted": _("Agent deleted"),
    "model_config.created": _("Model endpoint created"),
    "model_config.updated": _("Model endpoint changed"),
    "model_config.deleted": _("Model endpoint deleted"),
    "budget.created": _("Budget created"),
    "budget.updated": _("Budget changed"),
    "budget.deleted": _("Budget deleted"),
    "budget.warning": _("Budget warning threshold reached"),
    # connectors
    "connector.created": _("Connector created"),
    "connector.updated": _("Connector changed"),
    "connector.deleted": _("Connector deleted"),
    "connector.openapi_imported": _("OpenAPI document imported"),
    "connector.mcp_tools_synced": _("MCP server's tools synced"),
    "connector_action.created": _("Connector action created"),
    "connector_action.updated": _("Connector action changed"),
    "connector_action.deleted": _("Connector action deleted"),
    "connector_action.mcp_read_confirmed": _("MCP tool confirmed as a read"),
    "connector_action.mcp_read_withdrawn": _("MCP tool's read confirmation withdrawn"),
    # guard rails
    "approval_policy.created": _("Approval policy created"),
    "approval_policy.updated": _("Approval policy changed"),
    "approval_policy.deleted": _("Approval policy deleted"),
    "feishu_channel.created": _("Feishu channel created"),
    "feishu_channel.updated": _("Feishu channel changed"),
    "feishu_channel.deleted": _("Feishu channel deleted"),
    # knowledge bases (issue 34)
    "knowledge_base.created": _("Knowledge base created"),
    "knowledge_base.updated": _("Knowledge base changed"),
    "knowledge_base.deleted": _("Knowledge base deleted"),
    "document.created": _("Document uploaded"),
    "document.updated": _("Document replaced by a new version"),
    "document.deleted": _("Document deleted"),
    "document.reindexed": _("Document re-indexed"),
    # chat attachments (issue 35)
    "attachment.upload": _("File attached in the chat uploaded"),
    "attachment.download": _("File attached in the chat downloaded"),
    "attachment.delete": _("File attached in the chat deleted"),
    # memories (issue 36): never their text
    "memory.created": _("Memory kept"),
    "memory.updated": _("Memory changed"),
    "memory.deleted": _("Memory deleted"),
    "rate_limit.created": _("Rate limit created"),
    "rate_limit.updated": _("Rate limit changed"),
    "rate_limit.deleted": _("Rate limit deleted"),
    "agent_hook_settings.created": _("Agent hook settings created"),
    "agent_hook_settings.updated": _("Agent hook settings changed"),
    "agent_hook_settings.deleted": _("Agent hook settings deleted"),
    # approvals
    "approval.approved": _("Approval request approved"),
    "approval.rejected": _("Approval request rejected"),
    "approval.expired": _("Approval request expired"),
    "approval.cancelled": _("Approval request cancelled"),
    "approval.resent": _("Approval request re-sent"),
}


def audit_action_label(action: str) -> str:
    """The readable name of ``action`` in the active language (the action itself when unregistered)."""
    label = AUDIT_ACTION_LABELS.get(action)
    return str(label) if label is not None else action
