"""What the demo MCP server's tools do, on the demo ERP's data (sync: database).

``find_purchase_orders`` reads; ``create_purchase_request`` writes a draft purchase order. Bad input
is a :class:`DemoToolError` with a short message, which the server returns as a tool error.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any

from django.db import transaction
from django.db.models import Q

from connectors.demo.api.models import DemoPurchaseOrder

MAX_AMOUNT = Decimal("100000000")
MAX_ORDERS = 50


class DemoToolError(Exception):
    """The arguments were refused; the message says why."""


def order_summary(order: DemoPurchaseOrder) -> dict[str, Any]:
    return {
        "number": order.number,
        "supplier": order.supplier,
        "description": order.description,
        "amount": str(order.amount),
        "currency": order.currency,
        "status": order.status,
    }


def purchase_orders_find(*, number: str = "", supplier: str = "", status: str = "") -> list[dict[str, Any]]:
    """Purchase orders by number, supplier (part of the name) and status; newest first."""
    orders = DemoPurchaseOrder.objects.order_by("-id")
    if number:
        orders = orders.filter(number__iexact=number.strip())
    if supplier:
        orders = orders.filter(Q(supplier__icontains=supplier.strip()))
    if status:
        if status not in DemoPurchaseOrder.Status.values:
            raise DemoToolError(f"status must be one of {', '.join(DemoPurchaseOrder.Status.values)}")
        orders = orders.filter(status=status)
    return [order_summary(order) for order in orders[:MAX_ORDERS]]


def _amount(value: Any) -> Decimal:
    try:
        amount = Decimal(str(value)).quantize(Decimal("0.01"))
    except (InvalidOperation, ValueError) as exc:
        raise DemoToolError("amount must be a decimal number such as 1200.50") from exc
    if not amount.is_finite() or amount <= 0 or amount > MAX_AMOUNT:
        raise DemoToolError("amount must be positive and below 100,000,000")
    return amount


@transaction.atomic
def purchase_request_create(*, supplier: Any, description: Any, amount: Any) -> dict[str, Any]:
    """A new draft purchase order (a purchase request) for ``supplier``."""
    supplier = str(supplier or "").strip()
    if not supplier or len(supplier) > 200:
        raise DemoToolError("supplier is required (at most 200 characters)")
    description = str(description or "").strip()[:500]
    order = DemoPurchaseOrder.objects.create(
        number="pending", supplier=supplier, description=description, amount=_amount(amount)
    )
    order.number = f"PO-{order.pk:04d}"
    order.save(update_fields=["number"])
    return order_summary(order)
