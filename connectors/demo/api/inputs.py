"""What the demo ERP accepts as input, from its API and its MCP tools alike: amounts and order statuses."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any

from connectors.demo.api.models import DemoPurchaseOrder

MAX_AMOUNT = Decimal("100000000")


def demo_amount(value: Any, *, error: type[Exception], example: str) -> Decimal:
    """``value`` as an amount in cents, positive and below :data:`MAX_AMOUNT`; else ``error`` saying so
    (``example`` shows a good amount, written as the caller's users write it)."""
    try:
        amount = Decimal(str(value)).quantize(Decimal("0.01"))
    except (InvalidOperation, ValueError) as exc:
        raise error(f"amount must be a decimal number such as {example}") from exc
    if not amount.is_finite() or amount <= 0 or amount > MAX_AMOUNT:
        raise error("amount must be positive and below 100,000,000")
    return amount


def demo_order_status(value: str, *, error: type[Exception]) -> str:
    """``value`` if it is a purchase order status; else ``error`` naming the statuses."""
    if value not in DemoPurchaseOrder.Status.values:
        raise error(f"status must be one of {', '.join(DemoPurchaseOrder.Status.values)}")
    return value
