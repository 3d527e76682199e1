"""ExternalModelProvider base URLs name public destinations only (issue #18, item 15 and class 6):
metadata services, link-local, loopback, private and in-cluster destinations are refused in
every spelling a resolver accepts; an operator's allowed destinations pass."""

from __future__ import annotations

import ipaddress

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.admission.configs import check_external_provider
from core.fields.errors import Reason
from core.model.destinations import PUBLIC, Destinations, destination_problem
from tests.support.builders import external_model_provider

LINK_LOCAL = "is a link-local address (cloud metadata services); " + PUBLIC
LOOPBACK = "is a loopback or unspecified address; " + PUBLIC
PRIVATE = "is a private or reserved address; " + PUBLIC
LOCAL_NAME = "is an in-cluster or local name; " + PUBLIC
SINGLE = "is a single-label name (resolved in-cluster); " + PUBLIC
METADATA = "is a cloud metadata service; " + PUBLIC
SPELLING = "is an IPv4 address in a non-canonical spelling; write a dotted quad"

REFUSED = [
    ("http://169.254.169.254/latest/meta-data", "169.254.169.254", LINK_LOCAL),
    ("http://169.254.169.254./v1", "169.254.169.254.", LINK_LOCAL),
    ("http://metadata.google.internal/computeMetadata/v1", "metadata.google.internal", METADATA),
    ("http://metadata.google.internal./v1", "metadata.google.internal.", METADATA),
    ("http://METADATA.GOOGLE.INTERNAL/v1", "METADATA.GOOGLE.INTERNAL", METADATA),
    ("http://[::ffff:a9fe:a9fe]/v1", "::ffff:a9fe:a9fe", LINK_LOCAL),
    ("http://[::ffff:169.254.169.254]/v1", "::ffff:169.254.169.254", LINK_LOCAL),
    ("http://[::a9fe:a9fe]/v1", "::a9fe:a9fe", LINK_LOCAL),
    ("http://[64:ff9b::a9fe:a9fe]/v1", "64:ff9b::a9fe:a9fe", LINK_LOCAL),
    ("http://[2002:a9fe:a9fe::1]/v1", "2002:a9fe:a9fe::1", LINK_LOCAL),
    ("http://[fe80::1]/v1", "fe80::1", LINK_LOCAL),
    ("http://[fd00:ec2::254]/v1", "fd00:ec2::254", PRIVATE),
    ("http://0x7f000001/v1", "0x7f000001", SPELLING),
    ("http://2130706433/v1", "2130706433", SPELLING),
    ("http://0177.0.0.1/v1", "0177.0.0.1", SPELLING),
    ("http://127.1/v1", "127.1", SPELLING),
    ("http://0xa9.0xfe.0xa9.0xfe/v1", "0xa9.0xfe.0xa9.0xfe", SPELLING),
    ("http://127.0.0.1:8080/v1", "127.0.0.1", LOOPBACK),
    ("http://0.0.0.0/v1", "0.0.0.0", LOOPBACK),
    ("http://[::1]/v1", "::1", LOOPBACK),
    ("http://[::]/v1", "::", LOOPBACK),
    ("http://10.0.0.5/v1", "10.0.0.5", PRIVATE),
    ("http://172.16.0.1/v1", "172.16.0.1", PRIVATE),
    ("http://192.168.1.1/v1", "192.168.1.1", PRIVATE),
    ("http://100.100.100.200/v1", "100.100.100.200", PRIVATE),
    ("http://224.0.0.1/v1", "224.0.0.1", PRIVATE),
    ("http://localhost:4000/v1", "localhost", LOCAL_NAME),
    ("http://api.localhost/v1", "api.localhost", LOCAL_NAME),
    ("http://kubernetes.default.svc/api", "kubernetes.default.svc", LOCAL_NAME),
    (
        "http://litellm.gateway.svc.cluster.local:4000",
        "litellm.gateway.svc.cluster.local",
        LOCAL_NAME,
    ),
    ("http://redis.cache.svc.cluster.local./v1", "redis.cache.svc.cluster.local.", LOCAL_NAME),
    ("http://ip-10-0-0-1.ec2.internal/v1", "ip-10-0-0-1.ec2.internal", LOCAL_NAME),
    ("http://printer.local/v1", "printer.local", LOCAL_NAME),
    ("http://kubernetes/api", "kubernetes", SINGLE),
    ("http://metadata/computeMetadata/v1", "metadata", METADATA),
    ("http://instance-data/latest", "instance-data", METADATA),
]


@pytest.mark.parametrize(("url", "host", "why"), REFUSED, ids=[r[0] for r in REFUSED])
def test_internal_base_urls_are_refused_naming_the_host(url: str, host: str, why: str) -> None:
    errors = check_external_provider(external_model_provider(baseURL=url))

    assert [(e.path, e.reason, e.detail) for e in errors] == [
        ("spec.baseURL", Reason.FORBIDDEN, f'host "{host}" {why}')
    ]


def test_userinfo_tricks_are_refused_as_credentials() -> None:
    errors = check_external_provider(
        external_model_provider(baseURL="http://api.openai.com@169.254.169.254/v1")
    )

    assert [(e.path, e.reason) for e in errors] == [("spec.baseURL", Reason.FORBIDDEN)]


def test_allowed_destinations_pass_and_nothing_else() -> None:
    allowed = Destinations.parse(["10.0.0.0/8", "vllm.models.svc.cluster.local", "fd00::/8"])

    assert [
        destination_problem(h, allowed)
        for h in ("10.1.2.3", "vllm.models.svc.cluster.local.", "fd00:ec2::254", "192.168.0.1")
    ] == [None, None, None, f'host "192.168.0.1" {PRIVATE}']


@pytest.mark.parametrize(
    "host",
    ["169.254.169.254", "::ffff:a9fe:a9fe", "fe80::1", "metadata.google.internal.", "metadata"],
)
def test_no_allowed_destination_opens_a_metadata_service(host: str) -> None:
    everything = Destinations.parse(["0.0.0.0/0", "::/0", "metadata.google.internal", "metadata"])

    assert destination_problem(host, everything) == (
        f'host "{host}" is a cloud metadata service; {PUBLIC}'
        if "metadata" in host
        else f'host "{host}" {LINK_LOCAL}'
    )


def test_an_allowed_destination_that_is_neither_host_nor_network_is_refused() -> None:
    with pytest.raises(ValueError, match="'a b' is neither a host name nor a CIDR"):
        Destinations.parse(["a b"])


def _spellings(address: ipaddress.IPv4Address) -> list[str]:
    """Spellings of one IPv4 address that inet_aton or a browser resolver accepts."""
    value = int(address)
    octets = [int(o) for o in str(address).split(".")]
    return [
        str(value),
        hex(value),
        ".".join(f"0{o:o}" for o in octets),
        ".".join(hex(o) for o in octets),
        f"{octets[0]}.{value & 0xFFFFFF}",
        f"{octets[0]}.{octets[1]}.{value & 0xFFFF}",
        f"[::ffff:{address}]",
        f"[::ffff:{value >> 16:x}:{value & 0xFFFF:x}]",
        f"[64:ff9b::{address}]",
        f"{address}.",
    ]


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        st.ip_addresses(v=4, network="169.254.0.0/16"),
        st.ip_addresses(v=4, network="127.0.0.0/8"),
        st.ip_addresses(v=4, network="10.0.0.0/8"),
        st.ip_addresses(v=4, network="172.16.0.0/12"),
        st.ip_addresses(v=4, network="192.168.0.0/16"),
        st.ip_addresses(v=4, network="100.64.0.0/10"),
    ),
    st.integers(min_value=0, max_value=9),
)
def test_no_spelling_of_an_internal_ipv4_address_is_admitted(
    address: ipaddress.IPv4Address, which: int
) -> None:
    host = _spellings(address)[which]
    errors = check_external_provider(external_model_provider(baseURL=f"http://{host}/v1"))

    assert [(e.path, e.reason) for e in errors] == [("spec.baseURL", Reason.FORBIDDEN)]
