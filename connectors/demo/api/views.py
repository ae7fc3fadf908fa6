"""The demo ERP API: plain JSON views under ``/demo-api/`` with no authentication.

It stands in for an organisation's own system so the demo connector works offline; agents reach it over
HTTP through the connector like any other API.

Like a payment provider's API, its POSTs honour an ``Idempotency-Key`` header: the first successful
answer to a key is kept for 24 hours, and the same request sent again with that key gets that answer
(with ``Idempotent-Replayed: true``) instead of creating a second order or payment. The key with
another request (method, path or body) is refused with 422. A failed request is not remembered, so
it can be sent again with its key once the problem is fixed.
"""

from __future__ import annotations

import hashlib
import json
from datetime import timedelta
from decimal import Decimal
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Q
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from connectors.demo.api.document import demo_openapi_document
from connectors.demo.api.inputs import demo_amount, demo_order_status
from connectors.demo.api.models import DemoIdempotentRequest, DemoPayment, DemoPurchaseOrder

PAYMENT_METHODS = ("bank_transfer", "card", "cash")
IDEMPOTENCY_HEADER = "Idempotency-Key"
REPLAYED_HEADER = "Idempotent-Replayed"
IDEMPOTENCY_KEY_TTL = timedelta(hours=24)


class _BadRequest(Exception):
    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


def _error(message: str, status: int) -> JsonResponse:
    return JsonResponse({"error": message}, status=status)


def _body(request: HttpRequest) -> dict[str, Any]:
    if not request.body:
        return {}
    try:
        data = json.loads(request.body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise _BadRequest("the body must be JSON") from exc
    if not isinstance(data, dict):
        raise _BadRequest("the body must be a JSON object")
    return data


def _amount(value: Any) -> Decimal:
    return demo_amount(value, error=_BadRequest, example="'1200.50'")


def _order_json(order: DemoPurchaseOrder, *, with_payments: bool = False) -> dict[str, Any]:
    payments = list(order.payments.all())
    data = {
        "id": order.pk,
        **order.summary(),
        "paid_amount": str(sum((p.amount for p in payments), Decimal("0.00"))),
        "approved_by": order.approved_by,
        "created_at": order.created_at.isoformat(),
    }
    if with_payments:
        data["payments"] = [_payment_json(p) for p in payments]
    return data


def _payment_json(payment: DemoPayment) -> dict[str, Any]:
    return {
        "id": payment.pk,
        "order_id": payment.order_id,
        "order_number": payment.order.number,
        "amount": str(payment.amount),
        "method": payment.method,
        "reference": payment.reference,
        "created_at": payment.created_at.isoformat(),
    }


def _handled(view: Any) -> Any:
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> JsonResponse:
        try:
            return view(request, *args, **kwargs)
        except _BadRequest as exc:
            return _error(str(exc), exc.status)

    wrapper.__name__ = view.__name__
    wrapper.__doc__ = view.__doc__
    return wrapper


def _fingerprint(request: HttpRequest) -> str:
    """The request's method, path and body (a JSON body with its keys sorted, so order does not count)."""
    body = request.body
    try:
        body = json.dumps(json.loads(body), sort_keys=True, separators=(",", ":")).encode()
    except (ValueError, UnicodeDecodeError):
        pass
    digest = hashlib.sha256(f"{request.method} {request.path}\n".encode())
    digest.update(body)
    return digest.hexdigest()


def _replay(stored: DemoIdempotentRequest, fingerprint: str) -> HttpResponse:
    if stored.fingerprint != fingerprint:
        return _error(f"this {IDEMPOTENCY_HEADER} was already used for a different request", 422)
    response = HttpResponse(stored.body, status=stored.status, content_type="application/json")
    response[REPLAYED_HEADER] = "true"
    return response


def _idempotent(view: Any) -> Any:
    """Honour ``Idempotency-Key`` on POST (see the module docstring); other requests pass through."""

    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        key = request.headers.get(IDEMPOTENCY_HEADER, "")
        if request.method != "POST" or not key:
            return view(request, *args, **kwargs)
        if len(key) > 255 or not key.isascii() or not key.isprintable():
            return _error(f"{IDEMPOTENCY_HEADER} must be at most 255 printable ASCII characters", 400)
        fingerprint = _fingerprint(request)
        DemoIdempotentRequest.objects.filter(created_at__lt=timezone.now() - IDEMPOTENCY_KEY_TTL).delete()
        stored = DemoIdempotentRequest.objects.filter(key=key).first()
        if stored is not None:
            return _replay(stored, fingerprint)
        with transaction.atomic():
            try:
                with transaction.atomic():
                    # Taken first: a concurrent request with this key waits here until this one ends.
                    record = DemoIdempotentRequest.objects.create(
                        key=key, fingerprint=fingerprint, status=0, body=""
                    )
            except IntegrityError:  # that request succeeded: answer as it did
                return _replay(DemoIdempotentRequest.objects.get(key=key), fingerprint)
            response = view(request, *args, **kwargs)
            if 200 <= response.status_code < 300:
                record.status = response.status_code
                record.body = response.content.decode()
                record.save(update_fields=["status", "body"])
            else:
                transaction.set_rollback(True)  # forget the key: the request may be sent again
        return response

    wrapper.__name__ = view.__name__
    wrapper.__doc__ = view.__doc__
    return wrapper


@require_GET
def index(request: HttpRequest) -> JsonResponse:
    """What the API is and where its document is: its base URL answers, as "Test connection" expects."""
    return JsonResponse(
        {"name": "Demo ERP API", "openapi": request.build_absolute_uri("/demo-api/openapi.json")}
    )


@require_GET
def openapi_document(request: HttpRequest) -> JsonResponse:
    """The API's OpenAPI document, with this server's absolute base URL."""
    base = request.build_absolute_uri("/demo-api").rstrip("/")
    return JsonResponse(demo_openapi_document(base), json_dumps_params={"ensure_ascii": False})


@csrf_exempt
@require_http_methods(["GET", "POST"])
@_idempotent
@_handled
def purchase_orders(request: HttpRequest) -> JsonResponse:
    if request.method == "POST":
        return _purchase_order_create(_body(request))
    orders = DemoPurchaseOrder.objects.prefetch_related("payments").order_by("-id")
    status = request.GET.get("status")
    if status:
        orders = orders.filter(status=demo_order_status(status, error=_BadRequest))
    supplier = request.GET.get("supplier")
    if supplier:
        orders = orders.filter(Q(supplier__icontains=supplier))
    return JsonResponse(
        [_order_json(o) for o in orders[:200]], safe=False, json_dumps_params={"ensure_ascii": False}
    )


@transaction.atomic
def _purchase_order_create(data: dict[str, Any]) -> JsonResponse:
    supplier = str(data.get("supplier") or "").strip()
    if not supplier:
        raise _BadRequest("supplier is required")
    if "amount" not in data:
        raise _BadRequest("amount is required")
    currency = str(data.get("currency") or "CNY").upper()
    if len(currency) != 3 or not currency.isalpha():
        raise _BadRequest("currency must be a three-letter ISO code")
    order = DemoPurchaseOrder.objects.create(
        number="pending",
        supplier=supplier[:200],
        description=str(data.get("description") or "")[:500],
        amount=_amount(data["amount"]),
        currency=currency,
    )
    order.number = f"PO-{order.pk:04d}"
    order.save(update_fields=["number"])
    return JsonResponse(_order_json(order), status=201, json_dumps_params={"ensure_ascii": False})


def _order_or_404(order_id: int) -> DemoPurchaseOrder:
    order = DemoPurchaseOrder.objects.prefetch_related("payments").filter(pk=order_id).first()
    if order is None:
        raise _BadRequest(f"no purchase order {order_id}", 404)
    return order


@require_GET
@_handled
def purchase_order_detail(request: HttpRequest, order_id: int) -> JsonResponse:
    order = _order_or_404(order_id)
    return JsonResponse(_order_json(order, with_payments=True), json_dumps_params={"ensure_ascii": False})


@csrf_exempt
@require_POST
@_idempotent
@_handled
@transaction.atomic
def purchase_order_approve(request: HttpRequest, order_id: int) -> JsonResponse:
    data = _body(request)
    order = _order_or_404(order_id)
    if order.status != DemoPurchaseOrder.Status.DRAFT:
        raise _BadRequest(f"{order.number} is {order.status}; only draft orders can be approved", 409)
    order.status = DemoPurchaseOrder.Status.APPROVED
    order.approved_by = str(data.get("approver") or "agent")[:100]
    order.approval_comment = str(data.get("comment") or "")[:500]
    order.approved_at = timezone.now()
    order.save(update_fields=["status", "approved_by", "approval_comment", "approved_at"])
    return JsonResponse(_order_json(order), json_dumps_params={"ensure_ascii": False})


@csrf_exempt
@require_http_methods(["GET", "POST"])
@_idempotent
@_handled
def payments(request: HttpRequest) -> JsonResponse:
    if request.method == "POST":
        return _payment_create(_body(request))
    rows = DemoPayment.objects.select_related("order").order_by("-id")
    order_id = request.GET.get("order_id")
    if order_id:
        if not order_id.isdigit():
            raise _BadRequest("order_id must be a number")
        rows = rows.filter(order_id=int(order_id))
    return JsonResponse(
        [_payment_json(p) for p in rows[:200]], safe=False, json_dumps_params={"ensure_ascii": False}
    )


@transaction.atomic
def _payment_create(data: dict[str, Any]) -> JsonResponse:
    raw_order = data.get("order_id")
    if not isinstance(raw_order, int) and not (isinstance(raw_order, str) and raw_order.isdigit()):
        raise _BadRequest("order_id is required and must be a number")
    order = DemoPurchaseOrder.objects.select_for_update().filter(pk=int(raw_order)).first()
    if order is None:
        raise _BadRequest(f"no purchase order {raw_order}", 404)
    if order.status == DemoPurchaseOrder.Status.DRAFT:
        raise _BadRequest(f"{order.number} is not approved yet", 409)
    amount = _amount(data.get("amount"))
    outstanding = order.amount - order.paid_amount
    if amount > outstanding:
        raise _BadRequest(f"{order.number} has only {outstanding} {order.currency} outstanding", 409)
    method = str(data.get("method") or "bank_transfer")
    if method not in PAYMENT_METHODS:
        raise _BadRequest(f"method must be one of {', '.join(PAYMENT_METHODS)}")
    payment = DemoPayment.objects.create(
        order=order, amount=amount, method=method, reference=str(data.get("reference") or "")[:100]
    )
    if amount == outstanding:
        order.status = DemoPurchaseOrder.Status.PAID
        order.save(update_fields=["status"])
    return JsonResponse(_payment_json(payment), status=201, json_dumps_params={"ensure_ascii": False})
