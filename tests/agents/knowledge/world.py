"""A knowledge base of the demo purchasing policy, in English and Chinese, indexed as a worker would."""

from __future__ import annotations

from typing import Any

from django.core.files.base import ContentFile

from agents.knowledge.ingestion import document_ingest
from agents.knowledge.models import Document, KnowledgeBase
from agents.knowledge.services import DocumentQueued, document_upload, knowledge_base_create

POLICY_EN = """# Purchasing policy

## Approvals

Payments over 50,000 CNY need the approval of the finance director before they are made.

## Suppliers

A new supplier is checked by the purchasing team: its business licence and its bank account.
"""

POLICY_ZH = """# 采购政策

## 审批

超过五万元的付款，须经财务总监审批后方可支付。

## 供应商

新供应商由采购部审核营业执照和银行账户。
"""


def knowledge_base_with(org: Any, actor: Any, name: str = "policies", **options: Any) -> KnowledgeBase:
    return knowledge_base_create(organization=org, name=name, actor=actor, **options)


def indexed(knowledge_base: KnowledgeBase, name: str, data: bytes | str, actor: Any = None) -> Document:
    """Upload ``data`` as ``name`` and index it here, as the worker the upload queued would."""
    content = ContentFile(data.encode() if isinstance(data, str) else data, name=name)
    uploaded = document_upload(knowledge_base=knowledge_base, name=name, content=content, uploaded_by=actor)
    assert isinstance(uploaded, DocumentQueued), uploaded
    document_ingest(uploaded.document.pk)
    uploaded.document.refresh_from_db()
    return uploaded.document
