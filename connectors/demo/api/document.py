"""The OpenAPI 3 document of the demo ERP API (served at ``/demo-api/openapi.json``)."""

from __future__ import annotations

from typing import Any

_ORDER = {
    "type": "object",
    "properties": {
        "id": {"type": "integer", "readOnly": True},
        "number": {"type": "string", "readOnly": True, "example": "PO-0001"},
        "supplier": {"type": "string", "description": "Supplier name"},
        "description": {"type": "string", "description": "What is being bought"},
        "amount": {"type": "string", "description": "Total amount as a decimal string, e.g. '1200.50'"},
        "currency": {"type": "string", "description": "ISO 4217 code", "default": "CNY"},
        "status": {"type": "string", "enum": ["draft", "approved", "paid"], "readOnly": True},
        "paid_amount": {"type": "string", "readOnly": True},
        "approved_by": {"type": "string", "readOnly": True},
        "created_at": {"type": "string", "format": "date-time", "readOnly": True},
    },
}
_PAYMENT = {
    "type": "object",
    "properties": {
        "id": {"type": "integer", "readOnly": True},
        "order_id": {"type": "integer"},
        "order_number": {"type": "string", "readOnly": True},
        "amount": {"type": "string"},
        "method": {"type": "string", "enum": ["bank_transfer", "card", "cash"]},
        "reference": {"type": "string"},
        "created_at": {"type": "string", "format": "date-time", "readOnly": True},
    },
}
_ERROR = {"type": "object", "properties": {"error": {"type": "string"}}}


def _json(schema: dict[str, Any], description: str = "OK") -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _error(description: str) -> dict[str, Any]:
    return _json({"$ref": "#/components/schemas/Error"}, description)


def demo_openapi_document(server_url: str = "/demo-api") -> dict[str, Any]:
    """The document; ``server_url`` is the API's base URL as seen by its callers."""
    order_ref = {"$ref": "#/components/schemas/PurchaseOrder"}
    payment_ref = {"$ref": "#/components/schemas/Payment"}
    order_id = {"$ref": "#/components/parameters/OrderId"}
    return {
        "openapi": "3.0.3",
        "info": {
            "title": "Demo ERP",
            "version": "1.0",
            "description": (
                "Purchase orders and payments of a small trading company (demo data). A POST may carry "
                "an Idempotency-Key header: the same request sent again with that key within 24 hours "
                "gets the first answer instead of being carried out twice."
            ),
        },
        "servers": [{"url": server_url}],
        "paths": {
            "/purchase-orders/": {
                "get": {
                    "operationId": "list_purchase_orders",
                    "summary": "List purchase orders",
                    "description": "Newest first. Filter by status or supplier.",
                    "parameters": [
                        {
                            "name": "status",
                            "in": "query",
                            "schema": {"type": "string", "enum": ["draft", "approved", "paid"]},
                        },
                        {
                            "name": "supplier",
                            "in": "query",
                            "description": "Part of the supplier name",
                            "schema": {"type": "string"},
                        },
                    ],
                    "responses": {"200": _json({"type": "array", "items": order_ref})},
                },
                "post": {
                    "operationId": "create_purchase_order",
                    "summary": "Create a draft purchase order",
                    "requestBody": {
                        "required": True,
                        "content": {
                            "application/json": {
                                "schema": {
                                    "allOf": [order_ref, {"required": ["supplier", "amount"]}],
                                }
                            }
                        },
                    },
                    "responses": {"201": _json(order_ref, "Created"), "400": _error("Invalid input")},
                },
            },
            "/purchase-orders/{order_id}/": {
                "parameters": [order_id],
                "get": {
                    "operationId": "get_purchase_order",
                    "summary": "Get one purchase order with its payments",
                    "responses": {"200": _json(order_ref), "404": _error("No such order")},
                },
            },
            "/purchase-orders/{order_id}/approve/": {
                "parameters": [order_id],
                "post": {
                    "operationId": "approve_purchase_order",
                    "summary": "Approve a draft purchase order",
                    "description": "Only draft orders can be approved; payments need an approved order.",
                    "requestBody": {
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "properties": {
                                        "approver": {"type": "string", "description": "Who approves"},
                                        "comment": {"type": "string"},
                                    },
                                }
                            }
                        }
                    },
                    "responses": {"200": _json(order_ref), "409": _error("Not a draft")},
                },
            },
            "/payments/": {
                "get": {
                    "operationId": "list_payments",
                    "summary": "List payments",
                    "parameters": [
                        {
                            "name": "order_id",
                            "in": "query",
                            "description": "Only payments of this purchase order",
                            "schema": {"type": "integer"},
                        }
                    ],
                    "responses": {"200": _json({"type": "array", "items": payment_ref})},
                },
                "post": {
                    "operationId": "create_payment",
                    "summary": "Pay an approved purchase order",
                    "description": "The amount may not exceed what is still owed on the order.",
                    "requestBody": {
                        "required": True,
                        "content": {
                            "application/json": {
                                "schema": {
                                    "allOf": [payment_ref, {"required": ["order_id", "amount"]}],
                                }
                            }
                        },
                    },
                    "responses": {
                        "201": _json(payment_ref, "Created"),
                        "400": _error("Invalid input"),
                        "409": _error("Order not approved or overpaid"),
                    },
                },
            },
        },
        "components": {
            "parameters": {
                "OrderId": {
                    "name": "order_id",
                    "in": "path",
                    "required": True,
                    "description": "Purchase order id",
                    "schema": {"type": "integer"},
                }
            },
            "schemas": {"PurchaseOrder": _ORDER, "Payment": _PAYMENT, "Error": _ERROR},
        },
    }
