"""The SSRF corpus every outbound URL of the server is walked against (connectors, model endpoints,
Feishu channels): hosts, as they appear in a URL, that must never be reached on an org admin's say.

Add to these lists whenever a new spelling of a private address turns up; every walk picks it up.
"""

from __future__ import annotations

# Spellings of non-public addresses in a URL's authority (literal or resolved for real), e.g. for
# ``http://<host>/v1``. Legacy numeric IPv4 forms are refused by URL validation or the guard.
PRIVATE_URL_HOSTS: list[str] = [
    "127.0.0.1",
    "127.0.0.1:5432",
    "127.255.255.254",
    "127.1",
    "0x7f000001",
    "2130706433",
    "017700000001",
    "localhost",
    "LOCALHOST",
    "localhost:5432",
    "user:pw@127.0.0.1",
    "0.0.0.0",
    "10.0.0.1",
    "172.16.0.1",
    "192.168.1.1",
    "100.64.0.1",
    "198.18.0.1",
    "169.254.169.254",
    "169.254.10.20",
    "224.0.0.1",
    "240.0.0.1",
    "[::1]",
    "[::]",
    "[::ffff:127.0.0.1]",
    "[::ffff:7f00:1]",
    "[::ffff:10.0.0.1]",
    "[::127.0.0.1]",
    "[2002:7f00:1::1]",
    "[2002:a9fe:a9fe::1]",
    "[64:ff9b::7f00:1]",
    "[64:ff9b::a00:1]",
    "[64:ff9b:1::1]",
    "[fd00:ec2::254]",
    "[fc00::1]",
    "[fec0::1]",
    "[fe80::1]",
    "[ff02::1]",
]

# Names a test resolver maps to non-public addresses (``fake_dns`` in tests/connectors/test_ssrf.py).
PRIVATE_DNS_ANSWERS: dict[str, list[str]] = {
    "intranet.example.test": ["10.1.2.3"],
    "loopback.example.test": ["127.0.0.1"],
    "metadata.example.test": ["169.254.169.254"],
    "mixed.example.test": ["93.184.216.34", "192.168.0.10"],
    "v6-loopback.example.test": ["::1"],
    "site-local.example.test": ["fec0::10"],
    "mapped.example.test": ["::ffff:127.0.0.1"],
}

# Spellings of the loopback address a local listener is reached on (call-time walks: the listener
# must see no connection when the host is not on the operator's allow list).
LOOPBACK_SPELLINGS: list[str] = ["127.0.0.1", "localhost", "LOCALHOST", "0.0.0.0", "[::ffff:127.0.0.1]"]
