"""Model endpoints go through the SSRF guard: refused on save (admin and API) and at call time (names
that resolve to private addresses, redirects), unless the operator allows the host by a setting.

Call-time refusals are proven against a counting loopback listener: a refused endpoint gets no TCP
connection at all, so its API key cannot have been sent.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
from django.urls import reverse

from agents import runtime
from agents.endpoint_check_services import check_endpoint_async
from agents.engine.llm import EndpointRefusedError, aclose_shared_clients
from agents.engine.react import ReActAgent
from agents.engine.tools import ToolRegistry
from agents.models import ModelConfig
from platform_core.models import Role
from tests.agents.factories import ModelConfigFactory
from tests.connectors.ssrf_corpus import LOOPBACK_SPELLINGS, PRIVATE_DNS_ANSWERS, PRIVATE_URL_HOSTS
from tests.factories import PASSWORD, member_of
from tests.fakes.http_service import LoopbackHTTPService, Scripted, running_http_service
from tests.fakes.openai_replies import text

API_KEY = "sk-org-secret-key-000"


@pytest.fixture
def listener() -> Iterator[LoopbackHTTPService]:
    with running_http_service() as service:
        yield service


@pytest.fixture(autouse=True)
async def _close_llm_clients() -> AsyncIterator[None]:
    yield
    await aclose_shared_clients()


@pytest.fixture
def no_private_hosts(settings):
    """The deployment allows no private model endpoint (the test suite's default allows loopback)."""
    settings.MODEL_ENDPOINT_ALLOWED_PRIVATE_HOSTS = []
    return settings


@pytest.fixture
def admin_client(client, org):
    user = member_of(org, Role.ADMIN, username="ada")
    assert client.login(username=user.username, password=PASSWORD)
    return client


def _admin_form(org, base_url: str) -> dict[str, object]:
    return {
        "organization": org.pk,
        "name": "main",
        "role": "general",
        "base_url": base_url,
        "model": "gpt-x",
        "api_key_input": API_KEY,
        "context_window": 128000,
        "timeout": 60,
        "active": "on",
    }


def _llm_for(config: ModelConfig):
    return runtime.llm_for(runtime.endpoint_of(config))


# --- on save ----------------------------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("host", PRIVATE_URL_HOSTS)
def test_admin_refuses_a_model_endpoint_on_a_private_address(admin_client, org, no_private_hosts, host):
    response = admin_client.post(
        reverse("admin:agents_modelconfig_add"), _admin_form(org, f"http://{host}/v1")
    )

    assert response.status_code == 200
    assert "base_url" in response.context["adminform"].form.errors
    assert not ModelConfig.objects.unscoped().exists()


@pytest.mark.django_db
@pytest.mark.parametrize("host", PRIVATE_URL_HOSTS)
def test_api_refuses_a_model_endpoint_on_a_private_address(
    client_for, org_admin, org, no_private_hosts, host
):
    response = client_for(org_admin).post(
        f"/api/v1/orgs/{org.slug}/model-configs/",
        {"name": "main", "base_url": f"http://{host}/v1", "model": "gpt-x", "api_key": API_KEY},
        format="json",
    )

    assert response.status_code == 400, response.content
    assert "base_url" in response.json()
    assert not ModelConfig.objects.unscoped().exists()


@pytest.mark.django_db
@pytest.mark.parametrize("name", sorted(PRIVATE_DNS_ANSWERS))
def test_api_refuses_a_model_endpoint_whose_name_resolves_to_a_private_address(
    client_for, org_admin, org, no_private_hosts, fake_dns, name
):
    fake_dns[name] = PRIVATE_DNS_ANSWERS[name]
    client = client_for(org_admin)

    response = client.post(
        f"/api/v1/orgs/{org.slug}/model-configs/",
        {"name": "main", "base_url": f"https://{name}/v1", "model": "gpt-x", "api_key": API_KEY},
        format="json",
    )

    assert response.status_code == 400, response.content
    assert "is refused" in str(response.json()["base_url"])
    assert not ModelConfig.objects.unscoped().exists()


@pytest.mark.django_db
def test_api_refuses_changing_a_model_endpoint_to_the_metadata_address(client_for, org_admin, org):
    config = ModelConfigFactory(organization=org, base_url="https://llm.example.com/v1")

    response = client_for(org_admin).patch(
        f"/api/v1/orgs/{org.slug}/model-configs/{config.pk}/",
        {"base_url": "http://169.254.169.254/latest/"},
        format="json",
    )

    assert response.status_code == 400
    config.refresh_from_db()
    assert config.base_url == "https://llm.example.com/v1"


@pytest.mark.django_db
def test_a_model_endpoint_needs_http_or_https(client_for, org_admin, org):
    response = client_for(org_admin).post(
        f"/api/v1/orgs/{org.slug}/model-configs/",
        {"name": "main", "base_url": "ftp://llm.example.com/v1", "model": "gpt-x"},
        format="json",
    )

    assert response.status_code == 400 and "base_url" in response.json()


@pytest.mark.django_db
def test_operator_allow_list_lets_an_admin_save_a_private_model_endpoint(
    admin_client, org, no_private_hosts, fake_dns
):
    fake_dns["vllm.internal.test"] = ["10.0.0.7"]
    form = _admin_form(org, "http://vllm.internal.test:8000/v1")
    refused = admin_client.post(reverse("admin:agents_modelconfig_add"), form)
    assert "base_url" in refused.context["adminform"].form.errors

    no_private_hosts.MODEL_ENDPOINT_ALLOWED_PRIVATE_HOSTS = ["vllm.internal.test"]
    allowed = admin_client.post(reverse("admin:agents_modelconfig_add"), form)

    assert allowed.status_code == 302, allowed.context["adminform"].form.errors
    assert ModelConfig.objects.unscoped().get().base_url == "http://vllm.internal.test:8000/v1"


# --- at call time (the endpoint is built from a saved configuration; unsaved rows suffice) -----------


@pytest.mark.parametrize("host", LOOPBACK_SPELLINGS)
async def test_a_saved_loopback_model_endpoint_gets_no_connection_and_no_key(
    listener, no_private_hosts, host
):
    config = ModelConfig(name="m", base_url=f"http://{host}:{listener.port}/v1", model="m", api_key=API_KEY)

    with pytest.raises(EndpointRefusedError, match="refused"):
        await _llm_for(config).chat([{"role": "user", "content": "hi"}])

    assert listener.connections == 0


async def test_a_name_that_resolves_to_loopback_gets_no_connection(listener, fake_dns):
    fake_dns["llm.example.test"] = ["127.0.0.1"]  # the suite allows the literal 127.0.0.1, not this name
    config = ModelConfig(
        name="m",
        base_url=f"http://llm.example.test:{listener.port}/v1",
        model="m",
        api_key=API_KEY,
    )

    with pytest.raises(EndpointRefusedError, match="'llm.example.test' \\(resolves to 127.0.0.1\\)"):
        await _llm_for(config).chat([{"role": "user", "content": "hi"}])

    assert listener.connections == 0
    assert fake_dns["<lookups>"] == ["llm.example.test"]  # refused once: no retries of a refusal


async def test_a_redirect_from_an_allowed_endpoint_to_a_private_address_is_refused(listener, scripted_llm):
    hop = scripted_llm.base_url.replace("127.0.0.1", "localhost") + "/chat/completions"
    listener.script("/v1/chat/completions", Scripted(status=307, headers={"Location": hop}))
    scripted_llm.script(text("should never be asked"))
    config = ModelConfig(name="m", base_url=f"{listener.base_url}/v1", model="m", api_key=API_KEY)

    with pytest.raises(EndpointRefusedError, match="'localhost' \\(resolves to"):
        await _llm_for(config).chat([{"role": "user", "content": "hi"}])

    assert [r.path for r in listener.requests] == ["/v1/chat/completions"]
    assert scripted_llm.requests == []


async def test_operator_allow_list_lets_runs_reach_a_private_model_endpoint(scripted_llm, settings):
    scripted_llm.script(text("hello from the local model"))
    config = ModelConfig(name="m", base_url=scripted_llm.base_url, model="m", api_key=API_KEY)
    settings.MODEL_ENDPOINT_ALLOWED_PRIVATE_HOSTS = []
    with pytest.raises(EndpointRefusedError):
        await _llm_for(config).chat([{"role": "user", "content": "hi"}])

    settings.MODEL_ENDPOINT_ALLOWED_PRIVATE_HOSTS = ["127.0.0.1"]
    reply = await _llm_for(config).chat([{"role": "user", "content": "hi"}])

    assert reply.content == "hello from the local model"
    assert len(scripted_llm.requests) == 1


async def test_a_run_on_a_refused_endpoint_ends_with_a_clear_message(listener, no_private_hosts):
    config = ModelConfig(
        name="m", base_url=f"http://127.0.0.1:{listener.port}/v1", model="m", api_key=API_KEY
    )

    result = await ReActAgent(_llm_for(config), ToolRegistry()).run("hello")

    assert result.stop_reason == "llm_error"
    assert "model endpoint" in result.answer and "refused" in result.answer
    assert "127.0.0.1" in result.answer and API_KEY not in result.answer
    assert listener.connections == 0


# --- Check endpoint ---------------------------------------------------------------------------------


async def test_checking_a_name_that_resolves_to_loopback_opens_no_connection_and_sends_no_header(
    listener, fake_dns
):
    fake_dns["gateway.example.test"] = ["127.0.0.1"]
    config = ModelConfig(
        name="m",
        provider="azure-openai",
        base_url=f"http://gateway.example.test:{listener.port}/openai/deployments/d",
        model="m",
        api_key=API_KEY,
        api_version="2024-10-21",
        extra_headers='{"X-Gateway-Key": "gw-secret-value"}',
    )

    report = await check_endpoint_async(config)

    assert report.refused_by_guard
    assert "'gateway.example.test' (resolves to 127.0.0.1)" in report.refused_by_guard
    assert {p.status for p in report.probes} == {"not_checked"}
    assert listener.connections == 0
