"""``sign_in_rules list [--pending]``, ``sign_in_rules approve ID``, ``sign_in_rules withdraw ID``: the
operator checks and approves the tenants and e-mail domains that organisations claim (issue 31)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from platform_core.models import SignInRule
from platform_core.sso.approval import (
    sign_in_rule_approve,
    sign_in_rule_withdraw,
    sign_in_rules_claiming_the_same,
)


def _line(rule: SignInRule) -> str:
    state = "approved" if rule.approved_at is not None else "PENDING"
    claim = f"tenant {rule.feishu_tenant_key}" if rule.feishu_tenant_key else f"domain {rule.email_domain}"
    return (
        f"{rule.pk:>6}  {state:<8}  {rule.organization.slug:<24}  {rule.provider:<12}  {claim}  → {rule.role}"
    )


class Command(BaseCommand):
    help = (
        "List, approve or withdraw organisations' sign-in rules. A rule claims a Feishu tenant or an e-mail "
        "domain and routes no sign-in until approved: check that the organisation owns it first (for a "
        "domain, e.g. a DNS TXT record you asked them to publish)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True)
        listing = actions.add_parser("list", help="list the rules")
        listing.add_argument("--pending", action="store_true", help="only rules waiting for approval")
        for name in ("approve", "withdraw"):
            actions.add_parser(name, help=f"{name} a rule's approval").add_argument("rule_id", type=int)

    def handle(self, *args: Any, action: str, **options: Any) -> None:
        if action == "list":
            # The platform operator's command: every organisation's rules.
            rules = (
                SignInRule.objects.unscoped()
                .select_related("organization")
                .order_by("organization__slug", "pk")
            )
            if options["pending"]:
                rules = rules.filter(approved_at__isnull=True)
            for rule in rules:
                self.stdout.write(_line(rule))
            return
        rule = (
            SignInRule.objects.unscoped().select_related("organization").filter(pk=options["rule_id"]).first()
        )
        if rule is None:
            raise CommandError(f"No sign-in rule with the id {options['rule_id']}.")
        if action == "approve":
            for other in sign_in_rules_claiming_the_same(rule):
                self.stderr.write(
                    self.style.WARNING(
                        f"Note: {other.organization.slug} has an approved rule with this claim."
                    )
                )
            rule = sign_in_rule_approve(rule=rule, actor=None)
        else:
            rule = sign_in_rule_withdraw(rule=rule, actor=None)
        self.stdout.write(self.style.SUCCESS(_line(rule)))
