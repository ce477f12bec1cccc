"""Which webhook targets may be called: checked at creation and again before every attempt.

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
RESERVED_NETWORKS = (
    (ipaddress.ip_network("fec0::/10"), "a site-local address (deprecated, RFC 3879)"),
    (ipaddress.ip_network("3fff::/20"), "a documentation address (RFC 9637)"),
    (ipaddress.ip_network("192.88.99.0/24"), "a 6to4 relay anycast address (RFC 7526)"),
)
"""Ranges Python's `ipaddress` counts as global that no webhook receiver can hold: refused
whatever the setting (fec0::/10 passes `is_global` and `is_private` both false)."""
MAX_URL_CHARS = 2048
MAX_PORT = 65535
NAT64_WELL_KNOWN = ipaddress.ip_network("64:ff9b::/96")  # RFC 6052: IPv4 in the last 32 bits
NAT64_LOCAL_USE = ipaddress.ip_network("64:ff9b:1::/48")  # RFC 8215: IPv4 anywhere after /48
IPV4_BITS = 32


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


def _carried_ipv4(address: ipaddress.IPv6Address) -> list[tuple[str, ipaddress.IPv4Address]]:
    """The IPv4 addresses a translated IPv6 address carries, each with the form's name."""
    if address.sixtofour is not None:
        return [("6to4", address.sixtofour)]
    if address.teredo is not None:
        server, client = address.teredo
        return [("Teredo", server), ("Teredo", client)]
    if address in NAT64_WELL_KNOWN:
        return [("NAT64", ipaddress.IPv4Address(int(address) & (2**IPV4_BITS - 1)))]
    return []


def _refusal(address: IPAddress, allow_private: bool) -> str | None:
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            address = address.ipv4_mapped
        elif address in NAT64_LOCAL_USE:
            return "a local-use NAT64 address (it carries an IPv4 address)"
        elif carried := _carried_ipv4(address):
            for form, ipv4 in carried:
                reason = _refusal(ipv4, allow_private=False)
                if reason is not None:
                    return f"a {form} address carrying {ipv4}, {reason.split(' (')[0]}"
            return None  # judged by the public IPv4 address it carries
    if address in METADATA_ADDRESSES:
        return "a cloud metadata address"
    for network, reason in RESERVED_NETWORKS:
        if address.version == network.version and address in network:
            return reason
    if address.is_link_local:
        return "a link-local address"
    reserved = address.is_reserved and not address.is_loopback  # ::1 sits in reserved ::/8
    if address.is_multicast or address.is_unspecified or reserved:
        return "not a unicast address"
    if not address.is_global and not allow_private:
        kind = "a loopback" if address.is_loopback else "a private"
        return f"{kind} address (set GPUPRICES_ALLOW_PRIVATE_WEBHOOKS=true for local receivers)"
    return None


MAX_HOST_CHARS = 253
MAX_LABEL_CHARS = 63
"""RFC 1035 section 2.3.4: a name of at most 253 characters, labels of 1 to 63."""


def _check_host_name(host: str) -> None:
    """A host name as DNS takes it (an IP address passes), checked before any lookup."""
    try:
        ipaddress.ip_address(host)
        return
    except ValueError:
        pass
    labels = host.removesuffix(".").split(".")
    if len(host) > MAX_HOST_CHARS or not all(0 < len(label) <= MAX_LABEL_CHARS for label in labels):
        raise UnsafeTargetError(
            f"Webhook URL host is not a valid host name: at most {MAX_HOST_CHARS} characters, "
            f"dot-separated labels of 1 to {MAX_LABEL_CHARS}"
        )


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
        reason = _refusal(ipaddress.ip_address(text), allow_private)
        if reason is not None:
            shown = host if host == text else f"{host} ({text})"
            raise UnsafeTargetError(f"Webhook target {shown} is refused: {reason}")
    return CheckedTarget(url=parsed, address=addresses[0])
