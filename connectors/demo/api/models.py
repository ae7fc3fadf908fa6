"""The demo ERP's own data: purchase orders and payments. Not tenant data: the demo API is a stand-in for
an organisation's external system, reached over HTTP like any other connector."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.db import models
from django.utils.translation import gettext_lazy as _


class DemoPurchaseOrder(models.Model):
    """A purchase order of the demo ERP: drafted, then approved, then paid."""

    class Status(models.TextChoices):
        DRAFT = "draft", _("Draft")
        APPROVED = "approved", _("Approved")
        PAID = "paid", _("Paid")

    number = models.CharField(max_length=20, unique=True)
    supplier = models.CharField(max_length=200)
    description = models.CharField(max_length=500, blank=True)
    amount = models.DecimalField(max_digits=14, decimal_places=2)
    currency = models.CharField(max_length=3, default="CNY")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.DRAFT)
    approved_by = models.CharField(max_length=100, blank=True)
    approval_comment = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    approved_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["id"]
        verbose_name = _("demo purchase order")
        verbose_name_plural = _("demo purchase orders")

    def __str__(self) -> str:
        return self.number

    def summary(self) -> dict[str, Any]:
        """The order as the demo's API and MCP tools show it: number, supplier, what, how much, status."""
        return {
            "number": self.number,
            "supplier": self.supplier,
            "description": self.description,
            "amount": str(self.amount),
            "currency": self.currency,
            "status": self.status,
        }

    @property
    def paid_amount(self) -> Decimal:
        return sum((p.amount for p in self.payments.all()), Decimal("0"))


class DemoPayment(models.Model):
    """A payment against an approved purchase order of the demo ERP."""

    order = models.ForeignKey(DemoPurchaseOrder, on_delete=models.CASCADE, related_name="payments")
    amount = models.DecimalField(max_digits=14, decimal_places=2)
    method = models.CharField(max_length=20, default="bank_transfer")
    reference = models.CharField(max_length=100, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        verbose_name = _("demo payment")
        verbose_name_plural = _("demo payments")

    def __str__(self) -> str:
        return f"{self.order.number} {self.amount}"


class DemoIdempotentRequest(models.Model):
    """A POST the demo ERP answered successfully under an ``Idempotency-Key``: a repeat of the same
    request with that key gets this answer again instead of being carried out twice."""

    key = models.CharField(max_length=255, unique=True)
    fingerprint = models.CharField(max_length=64)  # SHA-256 of the method, path and body
    status = models.PositiveSmallIntegerField()
    body = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["id"]
        verbose_name = _("demo idempotent request")
        verbose_name_plural = _("demo idempotent requests")

    def __str__(self) -> str:
        return self.key
