"""Which webhook targets may be called: checked at creation and again before every attempt.

The address and host-name rules are the ones collectors' fetches follow too (scrapers/urls.py,
`address_refusal` and `host_name_problem`); this module adds what only webhooks need: the
`allow_private` setting, `http` for local receivers, and resolving the name once.

Only `https` to public addresses by default. `allow_private` (GPUPRICES_ALLOW_PRIVATE_WEBHOOKS)
also permits `http` and private, loopback or shared addresses, for local receivers such as
`http://127.0.0.1:9000/hook`. Link-local, multicast, unspecified and reserved addresses, and
cloud metadata endpoints, are refused whatever the setting, as are the ranges `ipaddress` counts
as global (`RESERVED_NETWORKS`: site-local fec0::/10, ...): a webhook must never become a way to
read instance credentials (the SSRF that OWASP's SSRF prevention cheat sheet describes).
IPv6 forms that carry an IPv4 address (IPv4-mapped `::ffff:a.b.c.d`, 6to4 `2002::/16`, NAT64
`64:ff9b::/96` and the local-use `64:ff9b:1::/48`, Teredo `2001::/32`) are judged by the IPv4
address they carry; a translated one (6to4, NAT64, Teredo) must carry a public one, whatever the
setting. Ports must be 1-65535.

The check resolves the host once; the sender then connects to that very address (the name kept
for `Host` and TLS), so that a name cannot resolve to a public address for the check and to a
private one for the request (DNS rebinding).
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import httpx

from pipeline.alerts.errors import UnresolvableTargetError, UnsafeTargetError
from scrapers.urls import MAX_URL_CHARS, address_refusal, host_name_problem

__all__ = ["CheckedTarget", "Resolver", "check_target", "resolve_host"]

Resolver = Callable[[str, int], Sequence[str]]
"""`(host, port) -> addresses`; tests inject one instead of resolving real names."""

MAX_PORT = 65535


@dataclass(frozen=True, slots=True)
class CheckedTarget:
    url: httpx.URL
    """The URL as given."""
    address: str
    """The checked address the request must go to."""

    @property
    def pinned_url(self) -> httpx.URL:
        """The URL with its host replaced by the checked address."""
        return self.url.copy_with(host=self.address)

    @property
    def host_header(self) -> str:
        return self.url.netloc.decode("ascii")


def resolve_host(host: str, port: int) -> list[str]:
    """Every address the system resolver gives for `host`."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise UnresolvableTargetError(f"Webhook host '{host}' does not resolve ({exc})") from None
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


PRIVATE_HINT = " (set GPUPRICES_ALLOW_PRIVATE_WEBHOOKS=true for local receivers)"


def _refusal(text: str, allow_private: bool) -> str | None:
    """The shared address rules (scrapers/urls.py), with the setting that lifts the private
    ones named."""
    reason = address_refusal(ipaddress.ip_address(text), allow_private=allow_private)
    if reason in ("a loopback address", "a private address"):
        return reason + PRIVATE_HINT
    return reason


def _check_host_name(host: str) -> None:
    """A host name as DNS takes it (an IP address passes), checked before any lookup."""
    problem = host_name_problem(host)
    if problem is not None:
        raise UnsafeTargetError(f"Webhook URL host is {problem}")


def _parse(url: str, allow_private: bool) -> httpx.URL:
    if len(url) > MAX_URL_CHARS:
        raise UnsafeTargetError(f"Webhook URL is longer than {MAX_URL_CHARS} characters")
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL as exc:
        raise UnsafeTargetError(f"Webhook URL is not a URL: {exc}") from None
    allowed = ("https", "http") if allow_private else ("https",)
    if parsed.scheme not in allowed:
        hint = "" if allow_private else " (http only with GPUPRICES_ALLOW_PRIVATE_WEBHOOKS=true)"
        raise UnsafeTargetError(f"Webhook URL must use https{hint}, got '{parsed.scheme}:'")
    try:
        host = parsed.host  # an internationalized name is decoded here (IDNA)
    except UnicodeError as exc:
        raise UnsafeTargetError(f"Webhook URL host is not a valid host name: {exc}") from None
    if not host:
        raise UnsafeTargetError("Webhook URL has no host")
    _check_host_name(host)
    if parsed.userinfo:
        raise UnsafeTargetError("Webhook URL must not carry a user name or password")
    if parsed.port is not None and not 1 <= parsed.port <= MAX_PORT:
        raise UnsafeTargetError(f"Webhook URL port must be 1-{MAX_PORT}, got {parsed.port}")
    return parsed


def check_target(
    url: str, *, allow_private: bool, resolver: Resolver = resolve_host
) -> CheckedTarget:
    """The URL and the address to send to, or `UnsafeTargetError` saying why not.

    Every address the host resolves to must pass, so that no resolver answer can point the
    request somewhere refused.
    """
    parsed = _parse(url, allow_private)
    host = parsed.host
    try:
        addresses: Sequence[str] = [str(ipaddress.ip_address(host))]
    except ValueError:
        addresses = resolver(host, parsed.port or (443 if parsed.scheme == "https" else 80))
    if not addresses:
        raise UnresolvableTargetError(f"Webhook host '{host}' does not resolve")
    for text in addresses:
        reason = _refusal(text, allow_private)
        if reason is not None:
            shown = host if host == text else f"{host} ({text})"
            raise UnsafeTargetError(f"Webhook target {shown} is refused: {reason}")
    return CheckedTarget(url=parsed, address=addresses[0])
