"""An approver deciding in the web app: the REST API's decide endpoint, served in this process (ASGI)."""

from __future__ import annotations

import httpx
from channels.db import database_sync_to_async

from platform_core.asgi import application
from platform_core.identity.api_keys.keys import api_token_issue
from tests.hooks.scenario import Purchasing


def asgi_client() -> httpx.AsyncClient:
    """An HTTP client of the platform's ASGI application, without a server."""
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=application), base_url="http://testserver")


async def decide_in_the_web_api(
    world: Purchasing, approval_id: str, decision: str, comment: str
) -> httpx.Response:
    """``world``'s approver posts ``decision`` (with ``comment``) on the request ``approval_id``."""
    token = await database_sync_to_async(lambda: api_token_issue(user=world.approver)[1])()
    async with asgi_client() as client:
        return await client.post(
            f"/api/v1/orgs/{world.org.slug}/approvals/{approval_id}/decide/",
            json={"decision": decision, "comment": comment},
            headers={"Authorization": f"Bearer {token}"},
        )
