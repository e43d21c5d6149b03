"""Outbound HTTP to addresses tenants choose (webhooks), without opening a door inward.

A tenant admin picks a webhook URL; the worker POSTs to it. Unchecked, that is
a blind SSRF: `http://169.254.169.254/…` (cloud metadata), `http://localhost:6379`,
`http://10.0.0.1/admin`. So a destination is resolved and refused unless every
address it resolves to is globally routable (not private, loopback,
link-local, shared, reserved, documentation, multicast or unspecified), when
the URL is saved and again when it is used; the request then goes to the very
address that was checked (the Host header and TLS SNI carry the name), so DNS
cannot answer differently between the check and the connection. Redirects are
not followed.

`STATEROOM_WEBHOOK_ALLOW` lists CIDR networks and host names that may be
private anyway (a receiver inside your own network).

`RESOLVER` and `TRANSPORT` are what tests replace, so they never open a
connection to the addresses they name.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

import httpx
from django.conf import settings

Resolver = Callable[[str, int], list[str]]


class UnsafeDestination(Exception):
    """The URL names, or resolves to, an address the project does not send to."""


def system_resolver(host: str, port: int) -> list[str]:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return sorted({info[4][0] for info in infos})


RESOLVER: Resolver = system_resolver
TRANSPORT: httpx.BaseTransport | None = None


@dataclass(frozen=True)
class Destination:
    scheme: str
    host: str
    port: int
    address: str  # the checked address the request goes to


def check_url(url: str, *, resolver: Resolver | None = None) -> Destination:
    """The destination of `url` if it may be sent to, else UnsafeDestination saying why."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UnsafeDestination("The URL must be http or https with a host name.")
    if parts.username or parts.password:
        raise UnsafeDestination("The URL must not carry a user name or password.")
    host = parts.hostname.rstrip(".").lower()
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError as exc:
        raise UnsafeDestination("The URL's port is not a number from 1 to 65535.") from exc
    try:
        addresses = [str(ipaddress.ip_address(host))]
    except ValueError:
        try:
            addresses = (resolver or RESOLVER)(host, port)
        except OSError as exc:
            raise UnsafeDestination(f"{host} does not resolve.") from exc
    if not addresses:
        raise UnsafeDestination(f"{host} does not resolve.")
    if not _host_allowed(host):
        for address in addresses:
            if not _address_allowed(address):
                raise UnsafeDestination(
                    f"{host} resolves to {address}, which is not a public address"
                    " (private, loopback, link-local or reserved)."
                )
    return Destination(parts.scheme, host, port, addresses[0])


def request(
    method: str,
    url: str,
    *,
    headers: dict[str, str] | None = None,
    content: bytes | None = None,
    data: dict[str, str] | None = None,
    timeout: float,
    resolver: Resolver | None = None,
    transport: httpx.BaseTransport | None = None,
) -> httpx.Response:
    """`method` `url` at the address `check_url` approved; no redirects followed.

    The connection goes to that address (the URL's host replaced by it), the
    Host header and TLS SNI (hence the certificate check) carry the name: DNS is
    asked once, by the check.
    """
    destination = check_url(url, resolver=resolver)
    parts = urlsplit(url)
    address = destination.address
    literal = f"[{address}]" if ":" in address else address
    target = urlunsplit(
        (parts.scheme, f"{literal}:{destination.port}", parts.path or "/", parts.query, "")
    )
    default_port = 443 if parts.scheme == "https" else 80
    host_header = destination.host + (
        f":{destination.port}" if destination.port != default_port else ""
    )
    extensions = {"sni_hostname": destination.host} if parts.scheme == "https" else {}
    with httpx.Client(
        transport=transport or TRANSPORT, timeout=timeout, follow_redirects=False
    ) as client:
        return client.request(
            method,
            target,
            content=content,
            data=data,
            headers={**(headers or {}), "Host": host_header},
            extensions=extensions,
        )


def get(url: str, *, headers: dict[str, str] | None = None, timeout: float) -> httpx.Response:
    """GET `url` at the checked address (see `request`)."""
    return request("GET", url, headers=headers, timeout=timeout)


def post(
    url: str,
    *,
    content: bytes,
    headers: dict[str, str],
    timeout: float,
    resolver: Resolver | None = None,
    transport: httpx.BaseTransport | None = None,
) -> httpx.Response:
    """POST `content` to `url` at the checked address (see `request`)."""
    return request(
        "POST",
        url,
        content=content,
        headers=headers,
        timeout=timeout,
        resolver=resolver,
        transport=transport,
    )


def _allow_list() -> tuple[list[ipaddress._BaseNetwork], set[str]]:
    networks, names = [], set()
    for entry in settings.STATEROOM_WEBHOOK_ALLOW:
        try:
            networks.append(ipaddress.ip_network(entry, strict=False))
        except ValueError:
            names.add(entry.rstrip(".").lower())
    return networks, names


def _host_allowed(host: str) -> bool:
    return host in _allow_list()[1]


def _address_allowed(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if any(ip in network for network in _allow_list()[0]):
        return True
    return ip.is_global and not ip.is_multicast
