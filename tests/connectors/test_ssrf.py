"""The SSRF guard: address classification, resolution, and real requests against a counting listener.

Only loopback traffic is ever sent: "public" addresses are checked with ``is_public_address`` alone,
and names are mapped to addresses with a fake resolver (``connectors.ssrf._getaddrinfo``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from connectors.adapter_types import HttpActionSpec, HttpAuth, HttpConnectorConfig
from connectors.http.adapter import aclose_http_clients, http_call, http_test_connection
from connectors.ssrf import HostResolutionError, SSRFBlocked, is_public_address, resolve_and_check
from tests.fakes.http_service import LoopbackHTTPService, running_http_service

GET = HttpActionSpec(name="get", method="GET", path_template="/thing")

PUBLIC = [
    "8.8.8.8",
    "1.1.1.1",
    "93.184.216.34",
    "2001:4860:4860::8888",
    "2002:808:808::1",
    "64:ff9b::808:808",
]
NOT_PUBLIC = {
    "127.0.0.1": "loopback",
    "127.255.255.254": "loopback",
    "10.0.0.1": "private",
    "172.16.0.1": "private",
    "172.31.255.255": "private",
    "192.168.1.1": "private",
    "::ffff:127.0.0.1": "IPv4-mapped",
    "::ffff:10.0.0.1": "IPv4-mapped",
    "::127.0.0.1": "IPv4-compatible",
    "::": "unspecified",
    "0.0.0.0": "unspecified",
    "100.64.0.1": "carrier-grade NAT",
    "100.127.255.255": "carrier-grade NAT",
    "198.18.0.1": "benchmarking",
    "198.19.255.255": "benchmarking",
    "169.254.169.254": "cloud metadata",
    "fd00:ec2::254": "cloud metadata",
    "169.254.10.20": "link-local",
    "fe80::1": "link-local",
    "::1": "loopback",
    "fc00::1": "unique local",
    "fec0::1": "site-local",
    "feff:ffff::1": "site-local",
    "224.0.0.1": "multicast",
    "ff02::1": "multicast",
    "240.0.0.1": "reserved",
    "255.255.255.255": "reserved",
    "192.0.2.10": "not globally routable",
    "2002:7f00:1::1": "loopback IPv4",
    "64:ff9b::a00:1": "private IPv4",
}


@pytest.fixture
def service() -> Iterator[LoopbackHTTPService]:
    with running_http_service() as svc:
        yield svc


@pytest.fixture
def service_v6() -> Iterator[LoopbackHTTPService]:
    try:
        svc = LoopbackHTTPService("::1")
    except OSError:
        pytest.skip("IPv6 loopback is not available")
    svc.start()
    try:
        yield svc
    finally:
        svc.stop()


@pytest.fixture(autouse=True)
async def _close_clients() -> AsyncIterator[None]:
    yield
    await aclose_http_clients()


def config(base_url: str, **kwargs: object) -> HttpConnectorConfig:
    return HttpConnectorConfig(connector_id=f"ssrf-{base_url}", base_url=base_url, max_retries=0, **kwargs)  # type: ignore[arg-type]


# --- classification ----------------------------------------------------------------------------------


@pytest.mark.parametrize("ip", PUBLIC)
def test_globally_routable_addresses_are_public(ip: str) -> None:
    assert is_public_address(ip)


@pytest.mark.parametrize(("ip", "reason"), NOT_PUBLIC.items())
async def test_non_global_addresses_are_refused_with_their_reason(ip: str, reason: str) -> None:
    assert not is_public_address(ip)
    with pytest.raises(SSRFBlocked, match=reason):
        await resolve_and_check(ip, 80)


def test_garbage_is_not_a_public_address() -> None:
    assert not is_public_address("not-an-ip")
    assert not is_public_address("")


# --- resolution --------------------------------------------------------------------------------------


async def test_name_resolving_to_a_private_address_is_blocked(fake_dns: dict[str, list[str]]) -> None:
    fake_dns["intranet.example.test"] = ["10.1.2.3"]

    with pytest.raises(SSRFBlocked) as blocked:
        await resolve_and_check("intranet.example.test", 443)

    assert str(blocked.value) == (
        "blocked by the SSRF guard: 'intranet.example.test' (resolves to 10.1.2.3) is a private address; "
        "an admin can allow this host explicitly"
    )


async def test_name_with_one_private_address_among_public_ones_is_blocked(
    fake_dns: dict[str, list[str]],
) -> None:
    fake_dns["mixed.example.test"] = ["93.184.216.34", "169.254.169.254"]

    with pytest.raises(SSRFBlocked, match="cloud metadata"):
        await resolve_and_check("mixed.example.test", 443)


async def test_public_name_returns_its_checked_addresses(fake_dns: dict[str, list[str]]) -> None:
    fake_dns["api.example.test"] = ["93.184.216.34", "2606:2800:220:1::"]

    assert await resolve_and_check("api.example.test", 443) == ["93.184.216.34", "2606:2800:220:1::"]


async def test_allowed_host_matches_exactly_and_case_insensitively(fake_dns: dict[str, list[str]]) -> None:
    fake_dns["db.internal.test"] = ["10.0.0.5"]
    fake_dns["evil.db.internal.test"] = ["10.0.0.6"]

    assert await resolve_and_check("DB.Internal.test", 5432, allowed_private_hosts=("db.internal.test",)) == [
        "10.0.0.5"
    ]
    with pytest.raises(SSRFBlocked):
        await resolve_and_check("evil.db.internal.test", 5432, allowed_private_hosts=("db.internal.test",))


async def test_allowing_an_address_does_not_allow_other_spellings_of_it() -> None:
    assert await resolve_and_check("127.0.0.1", 80, allowed_private_hosts=("127.0.0.1",)) == ["127.0.0.1"]
    with pytest.raises(SSRFBlocked, match="'127.1' \\(resolves to 127.0.0.1\\) is a loopback address"):
        await resolve_and_check("127.1", 80, allowed_private_hosts=("127.0.0.1",))


async def test_unresolvable_name_is_a_resolution_error(fake_dns: dict[str, list[str]]) -> None:
    with pytest.raises(HostResolutionError, match="could not resolve host 'nowhere.example.test'"):
        await resolve_and_check("nowhere.example.test", 80)


async def test_localhost_is_resolved_for_real_and_blocked() -> None:
    with pytest.raises(SSRFBlocked, match="loopback"):
        await resolve_and_check("localhost", 80)


# --- requests: nothing reaches the listener -------------------------------------------------------------


@pytest.mark.parametrize(
    "host",
    ["127.0.0.1", "127.1", "0x7f000001", "2130706433", "017700000001", "localhost", "LOCALHOST", "0.0.0.0"],
)
async def test_blocked_ipv4_loopback_forms_never_reach_the_listener(
    service: LoopbackHTTPService, host: str
) -> None:
    target = config(f"http://{host}:{service.port}")

    outcome = await http_call(target, GET, {})
    tested = await http_test_connection(target)

    assert outcome.status == "error" and tested.type == "failed"
    assert outcome.error.startswith("blocked by the SSRF guard")
    assert tested.reason.startswith("blocked by the SSRF guard")
    assert service.connections == 0


@pytest.mark.parametrize("host", ["[::1]", "[::ffff:127.0.0.1]", "[::]", "localhost"])
async def test_blocked_ipv6_loopback_forms_never_reach_the_listener(
    service_v6: LoopbackHTTPService, service: LoopbackHTTPService, host: str
) -> None:
    for port in (service_v6.port, service.port):
        outcome = await http_call(config(f"http://{host}:{port}"), GET, {})
        assert outcome.error.startswith("blocked by the SSRF guard")

    assert service_v6.connections == 0 and service.connections == 0


async def test_allowed_host_reaches_the_listener(service: LoopbackHTTPService) -> None:
    outcome = await http_call(config(service.base_url, allowed_private_hosts=("127.0.0.1",)), GET, {})

    assert outcome.status == "ok"
    assert service.connections == 1


async def test_connection_goes_to_the_checked_address_without_a_second_lookup(
    service: LoopbackHTTPService, fake_dns: dict[str, list[str]]
) -> None:
    fake_dns["erp.internal.test"] = ["127.0.0.1"]
    target = config(f"http://erp.internal.test:{service.port}", allowed_private_hosts=("erp.internal.test",))

    first = await http_call(target, GET, {})
    second = await http_call(target, GET, {})

    assert first.status == second.status == "ok"
    assert fake_dns["<lookups>"] == ["erp.internal.test"]  # one lookup for the one pooled connection
    assert [r.headers["host"] for r in service.requests] == [f"erp.internal.test:{service.port}"] * 2


async def test_redirect_from_an_allowed_host_to_a_private_address_is_refused(
    service: LoopbackHTTPService,
) -> None:
    target = config(service.base_url, allowed_private_hosts=("127.0.0.1",))
    hop = f"http://localhost:{service.port}/secret"

    outcome = await http_call(
        target, HttpActionSpec(name="r", method="GET", path_template="/redirect"), {"to": hop}
    )

    assert outcome.status == "error"
    assert outcome.error.startswith("blocked by the SSRF guard: 'localhost' (resolves to")
    assert [r.path for r in service.requests] == ["/redirect"]
    assert service.connections == 1


async def test_redirect_to_the_metadata_address_is_refused(
    service: LoopbackHTTPService, fake_dns: dict[str, list[str]]
) -> None:
    fake_dns["metadata.example.test"] = ["169.254.169.254"]
    target = config(service.base_url, allowed_private_hosts=("127.0.0.1",))
    hop = "http://metadata.example.test/latest/meta-data/"

    outcome = await http_call(
        target, HttpActionSpec(name="r", method="GET", path_template="/redirect"), {"to": hop}
    )

    assert "169.254.169.254) is a cloud metadata address" in outcome.error


async def test_redirect_to_another_scheme_is_refused(service: LoopbackHTTPService) -> None:
    target = config(service.base_url, allowed_private_hosts=("127.0.0.1",))

    outcome = await http_call(
        target,
        HttpActionSpec(name="r", method="GET", path_template="/redirect"),
        {"to": "file:///etc/passwd"},
    )

    assert outcome.error == "redirect to an unsupported scheme 'file'"


async def test_oauth_token_url_is_checked_too(service: LoopbackHTTPService) -> None:
    auth = HttpAuth(
        type="oauth2_client_credentials",
        client_id="client-id",
        client_secret="client-secret-value",
        token_url=f"http://localhost:{service.port}/oauth/token",
    )
    target = config(service.base_url, allowed_private_hosts=("127.0.0.1",), auth=auth)

    outcome = await http_call(target, GET, {})

    assert outcome.status == "error"
    assert outcome.error.startswith("OAuth2 token URL blocked by the SSRF guard")
    assert service.connections == 0
