"""Which URLs may be fetched: the address and host rules collectors and webhooks share.

One set of rules (the SSRF that OWASP's SSRF prevention cheat sheet describes), used by two
callers:
- a collector (`check_fetch_url`, installed on every run's client by `confine`) fetches only
  `https` URLs on its provider's own hosts (`Provider.hosts`), through pagination and redirects
  alike: no user name or password, no port but 443, no IP address (a provider is reached by
  name), a valid DNS name. The names are the provider's fixed ones, so they are not resolved here.
- a webhook (pipeline/alerts/targets.py) resolves its host and judges every address with
  `address_refusal` and the name with `host_name_problem`.

`address_refusal` refuses link-local, multicast, unspecified and reserved addresses, cloud
metadata endpoints and the ranges `ipaddress` counts as global that no server can hold
(`RESERVED_NETWORKS`), and, unless `allow_private`, private, loopback and shared ones. IPv6 forms
that carry an IPv4 address (IPv4-mapped `::ffff:a.b.c.d`, 6to4 `2002::/16`, NAT64
`64:ff9b::/96` and the local-use `64:ff9b:1::/48`, Teredo `2001::/32`) are judged by the IPv4
address they carry; a translated one (6to4, NAT64, Teredo) must carry a public one.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Collection
from urllib.parse import urlsplit

import httpx

from scrapers.errors import ProviderURLError

__all__ = [
    "MAX_URL_CHARS",
    "METADATA_ADDRESSES",
    "RESERVED_NETWORKS",
    "address_refusal",
    "check_fetch_url",
    "confine",
    "default_hosts",
    "host_name_problem",
]

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
"""Ranges Python's `ipaddress` counts as global that no server can hold: refused whatever the
setting (fec0::/10 passes `is_global` and `is_private` both false)."""
MAX_URL_CHARS = 2048
MAX_HOST_CHARS = 253
MAX_LABEL_CHARS = 63
"""RFC 1035 section 2.3.4: a name of at most 253 characters, labels of 1 to 63."""
NAT64_WELL_KNOWN = ipaddress.ip_network("64:ff9b::/96")  # RFC 6052: IPv4 in the last 32 bits
NAT64_LOCAL_USE = ipaddress.ip_network("64:ff9b:1::/48")  # RFC 8215: IPv4 anywhere after /48
IPV4_BITS = 32
HTTPS_PORT = 443
WWW = "www."


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


def address_refusal(address: IPAddress, *, allow_private: bool) -> str | None:
    """Why `address` may not be connected to ("a cloud metadata address", "a loopback address"),
    or None when it may."""
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            address = address.ipv4_mapped
        elif address in NAT64_LOCAL_USE:
            return "a local-use NAT64 address (it carries an IPv4 address)"
        elif carried := _carried_ipv4(address):
            for form, ipv4 in carried:
                reason = address_refusal(ipv4, allow_private=False)
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
        return "a loopback address" if address.is_loopback else "a private address"
    return None


def host_name_problem(host: str) -> str | None:
    """What makes `host` no name DNS takes (an IP address passes), or None."""
    try:
        ipaddress.ip_address(host)
        return None
    except ValueError:
        pass
    labels = host.removesuffix(".").split(".")
    if len(host) > MAX_HOST_CHARS or not all(0 < len(label) <= MAX_LABEL_CHARS for label in labels):
        return (
            f"not a valid host name: at most {MAX_HOST_CHARS} characters, dot-separated labels "
            f"of 1 to {MAX_LABEL_CHARS}"
        )
    return None


def default_hosts(url: str) -> frozenset[str]:
    """The hosts a provider that declares no `HOSTS` may fetch from: the host of its `URL`
    without a leading `www.`, its subdomains included."""
    host = (urlsplit(url).hostname or "").lower()
    return frozenset({host.removeprefix(WWW)} if host else ())


def _on_hosts(host: str, hosts: Collection[str]) -> bool:
    name = host.lower().removesuffix(".")
    return any(name == allowed or name.endswith(f".{allowed}") for allowed in hosts)


def check_fetch_url(url: httpx.URL | str, hosts: Collection[str], provider: str) -> None:
    """Raise `ProviderURLError` unless `url` is `https` on one of `hosts` (or a subdomain), with
    no credentials, no port but 443 and a host that is a DNS name, not an address."""
    text = str(url)
    if len(text) > MAX_URL_CHARS:
        raise ProviderURLError(f"{provider}: refused a URL longer than {MAX_URL_CHARS} characters")
    try:
        parsed = url if isinstance(url, httpx.URL) else httpx.URL(text)
        host = parsed.host
    except (httpx.InvalidURL, UnicodeError) as exc:
        raise ProviderURLError(f"{provider}: refused a URL that is not one ({exc})") from None
    shown = f"{parsed.scheme}://{host}"
    if parsed.scheme != "https":
        raise ProviderURLError(f"{provider}: refused {shown}: only https URLs are fetched")
    if parsed.userinfo:
        raise ProviderURLError(f"{provider}: refused {shown}: a URL with a user name or password")
    if parsed.port not in (None, HTTPS_PORT):
        raise ProviderURLError(f"{provider}: refused {shown}:{parsed.port}: only port 443")
    problem = host_name_problem(host) if host else "no host"
    if problem is None:
        try:
            address = ipaddress.ip_address(host)
        except ValueError:
            address = None
        if address is not None:
            refusal = address_refusal(address, allow_private=False)
            problem = f"an IP address ({refusal or 'a provider is reached by name'})"
    if problem is None and not _on_hosts(host, hosts):
        problem = f"not a host of {provider} ({', '.join(sorted(hosts)) or 'none declared'})"
    if problem is not None:
        raise ProviderURLError(f"{provider}: refused {shown}: {problem}")


def confine(client: httpx.Client, hosts: Collection[str], provider: str) -> httpx.Client:
    """`client`, checking every request it sends (each page, each redirect hop) with
    `check_fetch_url` before it leaves."""

    def check(request: httpx.Request) -> None:
        check_fetch_url(request.url, hosts, provider)

    client.event_hooks = {**client.event_hooks, "request": [*client.event_hooks["request"], check]}
    return client
