"""The Feishu client against the fake Feishu server (FEISHU.md sections 1, 2 and 5)."""

from __future__ import annotations

import asyncio
import logging
import subprocess
import sys
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from hooks.feishu.callback import CallbackSecrets, parse_callback
from hooks.feishu.cards import approval_decided_card, approval_pending_card
from hooks.feishu.client import FeishuApp, FeishuClient, aclose_shared_clients
from hooks.feishu.errors import FeishuError
from tests.fakes.feishu_server import (
    FAKE_APP_SECRET,
    FAKE_ENCRYPT_KEY,
    FAKE_VERIFICATION_TOKEN,
    FakeFeishu,
)

# Until the root conftest registers this plugin for the whole suite.

ROOT = Path(__file__).resolve().parents[2]
CHAT = "oc_finance"


@pytest.fixture(autouse=True)
async def close_pooled_clients() -> AsyncIterator[None]:
    yield
    await aclose_shared_clients()


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def card(approval_id: str = "ap-1", **overrides: Any) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "approval_id": approval_id,
        "agent_name": "Finance bot",
        "user_name": "Mia",
        "tool_name": "erp__create_payment",
        "arguments": {"amount": 60000},
        "policy_name": "Payments over 50k",
        "expires_at": datetime(2025, 3, 1, 12, 10, tzinfo=UTC),
        "language": "en",
    }
    fields.update(overrides)
    return approval_pending_card(**fields)


async def send(client: FeishuClient, uuid: str = "ap-1", **kwargs: Any) -> str:
    return await client.send_card(
        receive_id=kwargs.pop("receive_id", CHAT),
        receive_id_type="chat_id",
        card=card(uuid),
        uuid=uuid,
        **kwargs,
    )


def codes(fake: FakeFeishu) -> list[int | None]:
    return [r.code for r in fake.requests if r.path.startswith("/open-apis/im/")]


# --- tenant access token ------------------------------------------------------------------------


async def test_token_is_fetched_once_and_reused_across_calls_and_clients(fake_feishu):
    first = FeishuClient(fake_feishu.app)
    await send(first, "ap-1")
    await send(first, "ap-2")
    await send(FeishuClient(fake_feishu.app), "ap-3")
    assert fake_feishu.token_fetches == 1
    assert len(fake_feishu.sent) == 3


async def test_token_is_refreshed_between_ten_and_five_minutes_before_expiry(fake_feishu):
    clock = Clock()
    client = FeishuClient(fake_feishu.app, clock=clock)
    await client.tenant_access_token()
    clock.now += 7200 - 601
    await client.tenant_access_token()
    assert fake_feishu.token_fetches == 1
    clock.now += 601 - 299
    await client.tenant_access_token()
    assert fake_feishu.token_fetches == 2


async def test_short_lived_token_is_used_for_half_its_life(fake_feishu):
    fake_feishu.token_ttl = 60
    clock = Clock()
    client = FeishuClient(fake_feishu.app, clock=clock)
    await client.tenant_access_token()
    clock.now += 29
    await client.tenant_access_token()
    assert fake_feishu.token_fetches == 1
    clock.now += 2
    await client.tenant_access_token()
    assert fake_feishu.token_fetches == 2


async def test_ten_concurrent_callers_share_one_token_fetch(fake_feishu):
    fake_feishu.latency = 0.05  # keep the first fetch in flight while the others ask
    client = FeishuClient(fake_feishu.app)
    tokens = await asyncio.gather(*(client.tenant_access_token() for _ in range(10)))
    assert len(set(tokens)) == 1
    assert fake_feishu.token_fetches == 1


async def test_ten_concurrent_sends_fetch_one_token(fake_feishu):
    client = FeishuClient(fake_feishu.app)
    ids = await asyncio.gather(*(send(client, f"ap-{i}") for i in range(10)))
    assert len(set(ids)) == 10
    assert fake_feishu.token_fetches == 1


async def test_revoked_token_is_dropped_refetched_and_the_call_retried_once(fake_feishu):
    client = FeishuClient(fake_feishu.app)
    await send(client, "ap-1")
    fake_feishu.revoke_tokens()
    await send(client, "ap-2")
    assert fake_feishu.token_fetches == 2
    assert codes(fake_feishu) == [0, 99991663, 0]
    assert len(fake_feishu.sent) == 2


async def test_token_expired_at_feishu_before_our_refresh_is_replaced(fake_feishu):
    client = FeishuClient(fake_feishu.app)
    await send(client, "ap-1")
    fake_feishu.expire_tokens()
    await send(client, "ap-2")
    assert fake_feishu.token_fetches == 2


async def test_missing_token_code_with_http_200_also_triggers_the_retry(fake_feishu):
    client = FeishuClient(fake_feishu.app)
    fake_feishu.fail_with(99991661, status=200)
    assert await send(client)
    assert codes(fake_feishu) == [99991661, 0]


async def test_token_rejected_twice_fails_without_a_third_attempt(fake_feishu):
    client = FeishuClient(fake_feishu.app)
    fake_feishu.fail_with(99991663, times=2)
    with pytest.raises(FeishuError) as caught:
        await send(client)
    assert caught.value.code == 99991663 and not caught.value.retryable
    assert codes(fake_feishu) == [99991663, 99991663]


async def test_wrong_app_secret_fails_clearly_without_echoing_it(fake_feishu):
    client = FeishuClient(
        FeishuApp(
            app_id="cli_fake_approvals",
            app_secret="wrong-s3cret",
            base_url=fake_feishu.base_url,
            allowed_private_hosts=("127.0.0.1",),
        )
    )
    with pytest.raises(FeishuError) as caught:
        await send(client)
    assert not caught.value.retryable
    assert "tenant access token" in str(caught.value)
    assert "wrong-s3cret" not in str(caught.value) + repr(caught.value)
    assert fake_feishu.sent == []


# --- sending ------------------------------------------------------------------------------------


async def test_send_posts_the_card_as_a_json_string_and_returns_the_message_id(fake_feishu):
    message_id = await send(FeishuClient(fake_feishu.app))
    message = fake_feishu.messages[message_id]
    assert message.card == card("ap-1")
    assert (message.chat_id, message.uuid) == (CHAT, "ap-1")


async def test_resend_with_the_same_uuid_posts_nothing_new(fake_feishu):
    client = FeishuClient(fake_feishu.app)
    first = await send(client, "ap-1")
    again = await send(client, "ap-1")
    assert first == again
    assert len(fake_feishu.sent) == 1


async def test_rate_limit_is_retryable_with_the_reset_hint(fake_feishu):
    client = FeishuClient(fake_feishu.app)
    fake_feishu.rate_limit(reset=2)
    with pytest.raises(FeishuError) as caught:
        await send(client)
    error = caught.value
    assert (error.retryable, error.retry_after, error.code, error.http_status) == (True, 2.0, 99991400, 429)
    assert await send(client)  # the caller's retry with the same uuid
    assert len(fake_feishu.sent) == 1


async def test_server_errors_are_retryable_and_a_retry_with_the_same_uuid_sends_once(fake_feishu):
    client = FeishuClient(fake_feishu.app)
    await send(client)  # the first attempt reached Feishu...
    fake_feishu.fail(status=503)
    with pytest.raises(FeishuError) as caught:
        await send(client)  # ...but its answer was lost and the retry hit a 503
    assert caught.value.retryable and caught.value.http_status == 503
    await send(client)
    assert len(fake_feishu.sent) == 1


async def test_unreachable_feishu_is_retryable():
    client = FeishuClient(
        FeishuApp(
            app_id="cli", app_secret="s", base_url="http://127.0.0.1:9", allowed_private_hosts=("127.0.0.1",)
        )
    )
    with pytest.raises(FeishuError) as caught:
        await send(client)
    assert caught.value.retryable and caught.value.code is None


async def test_slow_feishu_times_out_as_retryable(fake_feishu):
    fake_feishu.latency = 2.0
    client = FeishuClient(fake_feishu.app, timeout=0.2)
    with pytest.raises(FeishuError) as caught:
        await client.tenant_access_token()
    assert caught.value.retryable and "in time" in str(caught.value)


async def test_bot_not_in_chat_is_not_retryable_and_says_what_to_do(fake_feishu):
    fake_feishu.remove_bot_from_chat("oc_elsewhere")
    with pytest.raises(FeishuError) as caught:
        await send(FeishuClient(fake_feishu.app), receive_id="oc_elsewhere")
    error = caught.value
    assert (error.code, error.retryable) == (230002, False)
    assert "230002" in str(error) and "bot is not a member of the chat" in str(error)


async def test_card_rejected_by_the_schema_is_not_retryable(fake_feishu):
    broken = card()
    broken["header"]["colour"] = "orange"
    with pytest.raises(FeishuError) as caught:
        await FeishuClient(fake_feishu.app).send_card(
            receive_id=CHAT, receive_id_type="chat_id", card=broken, uuid="ap-1"
        )
    assert (caught.value.code, caught.value.retryable) == (230099, False)
    assert "card schema" in str(caught.value)


async def test_card_over_30_kb_is_refused_before_any_request(fake_feishu):
    huge = card()
    huge["body"]["elements"].append({"tag": "markdown", "content": "x" * 31_000})
    with pytest.raises(ValueError, match="at most 30720 bytes"):
        await FeishuClient(fake_feishu.app).send_card(
            receive_id=CHAT, receive_id_type="chat_id", card=huge, uuid="a"
        )
    assert fake_feishu.requests == []


@pytest.mark.parametrize(
    ("receive_id_type", "uuid"), [("group", "ap-1"), ("chat_id", ""), ("chat_id", "u" * 51)]
)
async def test_bad_receive_id_type_or_uuid_is_refused_locally(fake_feishu, receive_id_type, uuid):
    with pytest.raises(ValueError):
        await FeishuClient(fake_feishu.app).send_card(
            receive_id=CHAT, receive_id_type=receive_id_type, card=card(), uuid=uuid
        )
    assert fake_feishu.requests == []


# --- updating -----------------------------------------------------------------------------------


async def test_update_card_replaces_the_card_for_everyone(fake_feishu):
    client = FeishuClient(fake_feishu.app)
    message_id = await send(client)
    decided = approval_decided_card(decision="expired", tool_name="erp__create_payment", language="en")
    await client.update_card(message_id=message_id, card=decided)
    assert fake_feishu.messages[message_id].card == decided
    assert [(u.message_id, u.kind) for u in fake_feishu.updates] == [(message_id, "patch")]


async def test_delayed_update_uses_the_clicks_token_at_most_twice(fake_feishu):
    client = FeishuClient(fake_feishu.app)
    message_id = await send(client)
    click = fake_feishu.build_click(operator_open_id="ou_april", message_id=message_id)
    secrets = CallbackSecrets(verification_token=FAKE_VERIFICATION_TOKEN, encrypt_key=FAKE_ENCRYPT_KEY)
    action = parse_callback(
        raw_body=click.body, headers=click.headers, secrets=secrets, now=datetime.now(UTC)
    )
    decided = approval_decided_card(decision="approved", decided_by="April", language="en")
    await client.delayed_update(token=action.update_token, card=decided)
    await client.delayed_update(token=action.update_token, card=decided)
    with pytest.raises(FeishuError) as caught:
        await client.delayed_update(token=action.update_token, card=decided)
    assert not caught.value.retryable
    assert fake_feishu.messages[message_id].card == decided
    assert [u.kind for u in fake_feishu.updates] == ["delayed", "delayed"]


# --- secrets ------------------------------------------------------------------------------------


async def test_secrets_and_tokens_never_reach_logs_or_errors(fake_feishu, caplog):
    caplog.set_level(logging.DEBUG)
    client = FeishuClient(fake_feishu.app)
    errors: list[FeishuError] = []
    issued = {await client.tenant_access_token()}
    await send(client, "ap-1")
    fake_feishu.revoke_tokens()
    await send(client, "ap-2")
    issued.add(await client.tenant_access_token())
    for fault in (
        lambda: fake_feishu.rate_limit(),
        lambda: fake_feishu.fail_with(230002),
        lambda: fake_feishu.fail(),
    ):
        fault()
        with pytest.raises(FeishuError) as caught:
            await send(client, "ap-3")
        errors.append(caught.value)
    text = caplog.text + "".join(str(e) + repr(e) for e in errors) + repr(client) + repr(client.app)
    assert "Feishu rate limited" in caplog.text  # the log really was captured
    for secret in (FAKE_APP_SECRET, *issued):
        assert secret not in text


def test_feishu_modules_import_without_django():
    check = (
        "import sys, hooks.feishu, hooks.feishu.client, hooks.feishu.cards, hooks.feishu.callback;"
        "loaded = [m for m in sys.modules if m.startswith('django')]; assert not loaded, loaded"
    )
    completed = subprocess.run(
        [sys.executable, "-c", check],
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert completed.returncode == 0, completed.stderr


def test_app_repr_hides_the_secret():
    assert "hunter2" not in repr(
        FeishuApp(app_id="cli", app_secret="hunter2", base_url="https://open.feishu.cn")
    )


async def test_token_cache_is_keyed_by_origin_and_app(fake_feishu):
    other = fake_feishu.add_app("cli_other", "other-secret")
    await FeishuClient(fake_feishu.app).tenant_access_token()
    await FeishuClient(other).tenant_access_token()
    assert fake_feishu.token_fetches == 2


async def test_rotated_app_secret_does_not_reuse_the_old_token(fake_feishu):
    await FeishuClient(fake_feishu.app).tenant_access_token()
    rotated = fake_feishu.add_app(fake_feishu.app.app_id, "rotated-secret")
    await FeishuClient(rotated).tenant_access_token()
    assert fake_feishu.token_fetches == 2
