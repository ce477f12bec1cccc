"""Which webhook targets may be called: checked at creation and again before every attempt.

Only `https` to public addresses by default. `allow_private` (GPUPRICES_ALLOW_PRIVATE_WEBHOOKS)
also permits `http` and private, loopback or shared addresses, for local receivers such as
`http://127.0.0.1:9000/hook`. Link-local, multicast, unspecified and reserved addresses, and
cloud metadata endpoints, are refused whatever the setting: a webhook must never become a way to
read instance credentials (the SSRF that OWASP's SSRF prevention cheat sheet describes).

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

__all__ = ["CheckedTarget", "Resolver", "check_target", "resolve_host"]

Resolver = Callable[[str, int], Sequence[str]]
"""`(host, port) -> addresses`; tests inject one instead of resolving real names."""

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(a)
    for a in (
        "169.254.169.254",  # AWS, GCP, Azure, OpenStack, DigitalOcean instance metadata
        "fd00:ec2::254",  # AWS IMDS over IPv6
        "100.100.100.200",  # Alibaba Cloud metadata
    )
)
MAX_URL_CHARS = 2048


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


def _refusal(address: IPAddress, allow_private: bool) -> str | None:
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    if address in METADATA_ADDRESSES:
        return "a cloud metadata address"
    if address.is_link_local:
        return "a link-local address"
    reserved = address.is_reserved and not address.is_loopback  # ::1 sits in reserved ::/8
    if address.is_multicast or address.is_unspecified or reserved:
        return "not a unicast address"
    if not address.is_global and not allow_private:
        kind = "a loopback" if address.is_loopback else "a private"
        return f"{kind} address (set GPUPRICES_ALLOW_PRIVATE_WEBHOOKS=true for local receivers)"
    return None


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
    if not parsed.host:
        raise UnsafeTargetError("Webhook URL has no host")
    if parsed.userinfo:
        raise UnsafeTargetError("Webhook URL must not carry a user name or password")
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
        reason = _refusal(ipaddress.ip_address(text), allow_private)
        if reason is not None:
            shown = host if host == text else f"{host} ({text})"
            raise UnsafeTargetError(f"Webhook target {shown} is refused: {reason}")
    return CheckedTarget(url=parsed, address=addresses[0])
