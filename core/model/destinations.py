"""Where an ExternalModelProvider may send requests: the rule for its spec.baseURL host.

LiteLLM sends every request of a registered model, with the provider's key, to the base URL, and
hands the answer back to the client: a base URL at an internal address reads that address for
the tenant (server-side request forgery with the response returned). So the host of a base URL
must be a public destination:

* an IP address literal must be global (IANA special-purpose registry, as `ipaddress` knows it):
  loopback, link-local (cloud metadata at 169.254.169.254 and fd00:ec2::254), private, shared
  (100.64.0.0/10, Alibaba's metadata), reserved, multicast and unspecified addresses are refused;
  an IPv6 address that embeds an IPv4 one (IPv4-mapped ::ffff:a.b.c.d, IPv4-compatible ::a.b.c.d,
  SIIT IPv4-translated ::ffff:0:a.b.c.d, NAT64 64:ff9b::/96, the RFC 8215 local-use NAT64
  64:ff9b:1::/48 at every RFC 6052 position a prefix of /48 to /96 puts it, 6to4 2002::/16,
  Teredo) is judged by that IPv4 address too; 64:ff9b:1::/48 is local-use (never globally
  reachable, IANA) and refused as such, whatever it embeds;
* a host whose last label is numeric or hex (`2130706433`, `0x7f000001`, `0177.0.0.1`, `127.1`)
  is an IPv4 address in some resolver's spelling: only the canonical dotted quad is accepted
  (no top-level domain is numeric, so no name is lost);
* a name must have a dot and must not be in-cluster or local: `*.svc`, `*.cluster.local`,
  `localhost`, `*.localhost`, `*.local`, `*.internal` (metadata.google.internal, *.ec2.internal),
  `*.localdomain`, `*.home.arpa`, `*.arpa`; a single-label name resolves through the pod's search
  path to a Service (or to `metadata`/`instance-data`). A trailing dot changes nothing.

What a name resolves to is not known here (the core does no I/O): a public name pointing at an
internal address, or a two-label name a pod's DNS search path turns into `NAME.NAMESPACE.svc`,
passes. docs/security.md says so and asks for an egress NetworkPolicy on LiteLLM.
An operator who runs a provider at an internal address names it in `Destinations`.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Sequence
from dataclasses import dataclass

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
LOCAL_SUFFIXES = (
    ".svc",
    ".cluster.local",
    ".localhost",
    ".local",
    ".internal",
    ".localdomain",
    ".arpa",
)
LOCAL_NAMES = frozenset({"localhost", "localhost.localdomain"})
# Cloud metadata services by name: refused even when an operator allows internal destinations,
# as their link-local addresses are (they hand out the node's credentials).
METADATA_NAMES = frozenset({"metadata", "metadata.google.internal", "instance-data"})
_NUMERIC_LABEL = re.compile(r"[0-9]+|0[xX][0-9A-Fa-f]*")
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_COMPATIBLE = ipaddress.IPv6Network("::/96")
_SIIT = ipaddress.IPv6Network("::ffff:0:0:0/96")  # IPv4-translated (RFC 2765, RFC 6145)
_LOCAL_NAT64 = ipaddress.IPv6Network("64:ff9b:1::/48")  # RFC 8215 local-use NAT64
# Where RFC 6052 puts the IPv4 address for a NAT64 prefix of each length: (high bits, low bits)
# as (shift, width) pairs of the 128-bit address; bits 64..71 (the u octet) are never used.
_RFC6052 = {
    48: ((64, 16), (40, 16)),
    56: ((64, 8), (32, 24)),
    64: ((24, 32),),
    96: ((0, 32),),
}
# Special-purpose blocks the running Python's `is_global` may not know (3.11 takes the local-use
# NAT64 prefix as global): refused as private whatever they embed.
_NOT_GLOBAL = (_LOCAL_NAT64,)
PUBLIC = "an external provider is reached by a public DNS name or a global IP address"


@dataclass(frozen=True, slots=True)
class Destinations:
    """Internal destinations an operator allows anyway: exact host names and networks."""

    hosts: frozenset[str] = frozenset()
    networks: tuple[IPNetwork, ...] = ()

    @classmethod
    def parse(cls, values: Sequence[str]) -> Destinations:
        """`HOST` or `CIDR` items; raises ValueError naming the first item that is neither."""
        hosts, networks = set(), []
        for value in values:
            try:
                networks.append(ipaddress.ip_network(value, strict=False))
            except ValueError:
                if not re.fullmatch(r"[A-Za-z0-9.-]{1,253}", value):
                    raise ValueError(f"{value!r} is neither a host name nor a CIDR") from None
                hosts.add(value.lower().rstrip("."))
        return cls(frozenset(hosts), tuple(networks))

    def allows(self, host: str, ip: IPAddress | None) -> bool:
        if ip is not None:
            return any(ip.version == n.version and ip in n for n in self.networks)
        return host in self.hosts


NO_DESTINATIONS = Destinations()


def destination_problem(host: str, allowed: Destinations = NO_DESTINATIONS) -> str | None:
    """Why a base URL may not point at `host` (a syntactically valid host, IPv6 without its
    brackets), or None. Never raises."""
    name = host.lower().rstrip(".")
    ip = _address(name)
    if name in METADATA_NAMES:
        return f'host "{host}" is a cloud metadata service; {PUBLIC}'
    if ip is not None and _is_link_local(ip):
        return f'host "{host}" is a link-local address (cloud metadata services); {PUBLIC}'
    if allowed.allows(name, ip):
        return None
    if ip is not None:
        return _address_problem(host, ip)
    last = name.rsplit(".", 1)[-1]
    if _NUMERIC_LABEL.fullmatch(last):
        return f'host "{host}" is an IPv4 address in a non-canonical spelling; write a dotted quad'
    if name in LOCAL_NAMES or name.endswith(LOCAL_SUFFIXES):
        return f'host "{host}" is an in-cluster or local name; {PUBLIC}'
    if "." not in name:
        return f'host "{host}" is a single-label name (resolved in-cluster); {PUBLIC}'
    return None


def _address(name: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(name)
    except ValueError:
        return None


def _is_link_local(ip: IPAddress) -> bool:
    return any(candidate.is_link_local for candidate in (ip, *_embedded(ip)))


def _address_problem(host: str, ip: IPAddress) -> str | None:
    for candidate in (ip, *_embedded(ip)):
        if candidate.is_loopback or candidate.is_unspecified:
            return f'host "{host}" is a loopback or unspecified address; {PUBLIC}'
        if candidate.is_multicast or not candidate.is_global or _not_global(candidate):
            return f'host "{host}" is a private or reserved address; {PUBLIC}'
    return None


def _not_global(ip: IPAddress) -> bool:
    return any(ip.version == n.version and ip in n for n in _NOT_GLOBAL)


def _embedded(ip: IPAddress) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 address carries (mapped, compatible, SIIT, NAT64, local-use
    NAT64 at each RFC 6052 position, 6to4, Teredo)."""
    if not isinstance(ip, ipaddress.IPv6Address):
        return []
    found = [a for a in (ip.ipv4_mapped, ip.sixtofour) if a is not None]
    if ip in _NAT64 or ip in _COMPATIBLE or ip in _SIIT:
        found.append(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
    if ip in _LOCAL_NAT64:
        found += [_rfc6052(int(ip), parts) for parts in _RFC6052.values()]
    if ip.teredo is not None:
        found += list(ip.teredo)
    return found


def _rfc6052(value: int, parts: tuple[tuple[int, int], ...]) -> ipaddress.IPv4Address:
    """The IPv4 address at `parts` ((shift, width) pairs, most significant first) of `value`."""
    out = 0
    for shift, width in parts:
        out = (out << width) | ((value >> shift) & ((1 << width) - 1))
    return ipaddress.IPv4Address(out)
