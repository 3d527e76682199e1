"""Strict parsing of the http(s) base URLs users give (ExternalModelProvider spec.baseURL).

`urllib.parse.urlsplit` is lenient on purpose: it strips tabs and newlines anywhere in the string
(WHATWG behaviour), accepts any port text until `.port` is read (which then raises), and raises
ValueError for a broken IPv6 literal, with messages that vary between Python versions. So the raw
string is checked here by hand: no whitespace or control characters anywhere, then scheme,
authority and port, each matched as a whole string (`fullmatch`, never a `$` anchor, which also
matches before a trailing newline).
"""

from __future__ import annotations

import ipaddress
import re

# One DNS label, or a dotted name / IPv4 address made of them; an optional final dot.
_HOST = re.compile(
    r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?"
)
_PORT = re.compile(r"[0-9]{1,5}")
MAX_URL = 2048
HTTP_SCHEMES = ("http", "https")
MUST_BE_HTTP = "must be an http:// or https:// URL with a host"


def url_problem(url: str) -> tuple[str, bool] | None:
    """Why `url` is not a plain http(s) base URL, or None; the flag is True when the problem is a
    credential in the URL (Forbidden rather than Invalid). Never raises."""
    if len(url) > MAX_URL:
        return f"may not be longer than {MAX_URL} characters", False
    if any(ord(c) < 0x21 or ord(c) == 0x7F for c in url):
        return "must not contain whitespace or control characters", False
    if not url.isascii():
        return "must be ASCII (write an internationalised host in its xn-- form)", False
    scheme, sep, rest = url.partition("://")
    if sep == "" or scheme not in HTTP_SCHEMES:
        return MUST_BE_HTTP, False
    authority = re.split(r"[/?#]", rest, maxsplit=1)[0]
    if "?" in rest or "#" in rest:
        return "must not have a query or a fragment", False
    if "@" in authority:
        return (
            "must not carry credentials; reference a Secret key in spec.credentialsSecretRef",
            True,
        )
    problem = _hostport_problem(authority)
    return None if problem is None else (problem, False)


def url_host(url: str) -> str:
    """The host of a URL url_problem accepts (an IPv6 address without its brackets)."""
    authority = re.split(r"[/?#]", url.partition("://")[2], maxsplit=1)[0]
    if authority.startswith("["):
        return authority[1:].partition("]")[0]
    return authority.partition(":")[0]


def _hostport_problem(hostport: str) -> str | None:
    if hostport.startswith("["):
        host, bracket, rest = hostport[1:].partition("]")
        if not bracket:
            return "has an IPv6 address without its closing ]"
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            return f"host [{host}] is not an IPv6 address"
        port = rest
    else:
        host, colon, port_text = hostport.partition(":")
        port = colon + port_text
        if not host:
            return MUST_BE_HTTP
        if not _HOST.fullmatch(host):
            return f'host "{host}" is not a DNS name or an IPv4 address'
    if port == "":
        return None
    if not port.startswith(":") or not _PORT.fullmatch(port[1:]) or not 1 <= int(port[1:]) <= 65535:
        return "port must be a number from 1 to 65535"
    return None
