"""The IPv6 translation prefixes the base-URL filter missed (issue #40, item 13): the RFC 8215
local-use NAT64 prefix 64:ff9b:1::/48 (the IPv4 address at any RFC 6052 position, any filler in
the bits around it) and SIIT IPv4-translated addresses ::ffff:0:a.b.c.d carry an internal IPv4
address, in every textual spelling of the IPv6 address."""

from __future__ import annotations

import ipaddress

from hypothesis import given, settings
from hypothesis import strategies as st

from core.admission.configs import check_external_provider
from core.fields.errors import Reason
from core.model.destinations import PUBLIC, Destinations, destination_problem
from tests.support.builders import external_model_provider

LINK_LOCAL = "is a link-local address (cloud metadata services); " + PUBLIC
PRIVATE = "is a private or reserved address; " + PUBLIC
EVERYTHING = Destinations.parse(["0.0.0.0/0", "::/0"])
LOCAL_NAT64 = int(ipaddress.IPv6Address("64:ff9b:1::"))
SIIT = int(ipaddress.IPv6Address("::ffff:0:0:0"))
# RFC 6052: the IPv4 bits per prefix length, as (shift, width) of the 128-bit value, high first.
POSITIONS = {48: ((64, 16), (40, 16)), 56: ((64, 8), (32, 24)), 64: ((24, 32),), 96: ((0, 32),)}
INTERNAL = st.one_of(
    st.ip_addresses(v=4, network="169.254.0.0/16"),
    st.ip_addresses(v=4, network="127.0.0.0/8"),
    st.ip_addresses(v=4, network="10.0.0.0/8"),
    st.ip_addresses(v=4, network="172.16.0.0/12"),
    st.ip_addresses(v=4, network="192.168.0.0/16"),
    st.ip_addresses(v=4, network="100.64.0.0/10"),
)


def _place(v4: int, parts: tuple[tuple[int, int], ...]) -> int:
    out, left = 0, 32
    for shift, width in parts:
        left -= width
        out |= ((v4 >> left) & ((1 << width) - 1)) << shift
    return out


def _mask(parts: tuple[tuple[int, int], ...]) -> int:
    return _place(0xFFFFFFFF, parts)


def _spellings(address: ipaddress.IPv6Address) -> list[str]:
    """Textual forms of one IPv6 address the URL parser accepts."""
    text = address.exploded
    tail = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    groups = text.split(":")
    return [
        str(address),
        text,
        text.upper(),
        ":".join(g.lstrip("0") or "0" for g in groups),
        ":".join(groups[:6]) + f":{tail}",
    ]


@st.composite
def translated(draw: st.DrawFn) -> tuple[ipaddress.IPv4Address, ipaddress.IPv6Address]:
    """An internal IPv4 address in a local-use NAT64 (any position, any filler) or SIIT address."""
    v4 = draw(INTERNAL)
    if draw(st.booleans()):
        return v4, ipaddress.IPv6Address(SIIT | int(v4))
    parts = POSITIONS[draw(st.sampled_from(sorted(POSITIONS)))]
    filler = draw(st.integers(min_value=0, max_value=2**80 - 1)) & ~_mask(parts)
    return v4, ipaddress.IPv6Address(LOCAL_NAT64 | filler | _place(int(v4), parts))


@settings(max_examples=400, deadline=None)
@given(translated(), st.integers(min_value=0, max_value=4))
def test_no_translated_spelling_of_an_internal_address_is_admitted(
    pair: tuple[ipaddress.IPv4Address, ipaddress.IPv6Address], which: int
) -> None:
    v4, v6 = pair
    host = _spellings(v6)[which]
    errors = check_external_provider(external_model_provider(baseURL=f"http://[{host}]/v1"))

    assert [(e.path, e.reason) for e in errors] == [("spec.baseURL", Reason.FORBIDDEN)]
    if v4.is_link_local:  # metadata services: refused even when everything is allowed
        assert destination_problem(host, EVERYTHING) == f'host "{host}" {LINK_LOCAL}'


@settings(max_examples=100, deadline=None)
@given(st.integers(min_value=0, max_value=2**80 - 1))
def test_the_local_use_nat64_prefix_is_never_global(low: int) -> None:
    host = str(ipaddress.IPv6Address(LOCAL_NAT64 | low | 0x08080808))
    problem = destination_problem(host)

    assert problem is not None
    assert problem in (f'host "{host}" {PRIVATE}', f'host "{host}" {LINK_LOCAL}')


def test_siit_of_a_global_address_and_the_issue_examples() -> None:
    assert [
        destination_problem(h)
        for h in ("::ffff:0:808:808", "64:ff9b:1::a9fe:a9fe", "::ffff:0:a9fe:a9fe")
    ] == [
        None,
        f'host "64:ff9b:1::a9fe:a9fe" {LINK_LOCAL}',
        f'host "::ffff:0:a9fe:a9fe" {LINK_LOCAL}',
    ]
