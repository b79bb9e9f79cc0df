"""How ``web_fetch``'s requests travel: hop by hop, each host looked up once, every address it
has checked, and the connection made to an address that was checked.

Looking a name up to check it and letting the HTTP client look it up again to connect would
leave a gap: the second answer can be ``127.0.0.1`` (DNS rebinding). So the request goes to the
checked address itself, with the ``Host`` header and, for https, the TLS server name (SNI) set
to the host the URL names; the certificate is verified against that name as usual.

Redirects are followed here, one hop at a time, never by the client: each hop's URL is parsed
again (http or https only, no credentials), its host looked up and checked, and it is followed
without asking only when the call's approval covers it (the same host the call started on) or
the approval policy would let a fetch of it run unasked (``[fetch] allow``, the mode). Other
hops are reported, not followed.

Through a proxy from the environment (``HTTPS_PROXY``, ``NO_PROXY``), the proxy connects: the
host is checked as written and as this machine resolves it, and a name this machine cannot
resolve is left to the proxy.
"""

from __future__ import annotations

import asyncio
import functools
import ipaddress
import os
import re
import socket
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from email.message import Message
from typing import TYPE_CHECKING, Final

from dcode.settings.web_address import (
    BadAddress,
    IPAddress,
    WebAddress,
    host_kind,
    parse_address,
    private_allowed,
    private_kind,
    private_refusal,
)

if TYPE_CHECKING:
    import httpx2 as httpx

CONNECT_TIMEOUT_S: Final = 10.0
DEADLINE_S: Final = 30.0
MAX_REDIRECTS: Final = 5
MAX_BYTES: Final = 5 * 1024 * 1024
ERROR_BODY_BYTES: Final = 64 * 1024
"""Of an error answer, only this much is read."""
ACCEPT: Final = "text/html,application/xhtml+xml,text/markdown;q=0.9,text/plain;q=0.9,application/json;q=0.9,*/*;q=0.8"

Resolver = Callable[[str, int], Awaitable[list[IPAddress]]]


async def system_resolve(host: str, port: int) -> list[IPAddress]:
    """The addresses the system's resolver gives ``host``, in its order, each once."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(ipaddress.ip_address(info[4][0]) for info in infos))


def _never(_: WebAddress) -> bool:
    return False


@dataclass(frozen=True, slots=True)
class FetchRules:
    """What a fetch may reach, as the user's config and the run's approval policy say."""

    private_hosts: tuple[str, ...] = ()
    """``[fetch] allow_private``: the hosts that may be private addresses."""
    unasked: Callable[[WebAddress], bool] = _never
    """Whether a redirect to this address may be followed without asking; a hop on the host the
    call started with always may (the call's approval was for that host)."""
    resolve: Resolver = field(default=system_resolve)


@dataclass(frozen=True, slots=True)
class Fetched:
    """One answer, its body read up to a cap."""

    url: str
    final_url: str
    redirected: bool
    status: int
    reason: str
    media_type: str
    """The content type without its parameters, lower case; ``""`` when the server sent none."""
    charset: str | None
    body: bytes
    capped: bool
    """The body went on past the cap; ``body`` holds what came before it."""


class Unreachable(Exception):
    """The request did not get an answer: the message says why, in a few words."""


class Refused(Exception):
    """The URL, or a redirect's, is not fetched: the message says why."""


@dataclass(frozen=True, slots=True)
class Route:
    """Where one request goes."""

    addresses: tuple[IPAddress, ...]
    """The host's addresses, every one checked; connected to in order until one answers."""
    proxy: str | None = None
    """The proxy the request goes through (which then connects by name), or None."""


async def fetch(
    url: str,
    *,
    rules: FetchRules | None = None,
    max_bytes: int = MAX_BYTES,
    deadline: float = DEADLINE_S,
    connect_timeout: float = CONNECT_TIMEOUT_S,
) -> Fetched:
    """GET ``url``, following up to ``MAX_REDIRECTS`` redirects that ``rules`` allow, reading
    at most ``max_bytes`` of the body (``ERROR_BODY_BYTES`` of an error's) within ``deadline``
    seconds in all. ``Refused`` for a URL or a hop that is not fetched, ``Unreachable`` when no
    answer came."""
    import httpx2 as httpx

    rules = rules or FetchRules()
    try:
        start = parse_address(url)
    except BadAddress as exc:
        raise Refused(str(exc)) from None
    host = start.authority
    try:
        async with asyncio.timeout(deadline):
            return await _follow(
                start, rules, max_bytes, httpx.Timeout(deadline, connect=connect_timeout)
            )
    except TimeoutError:
        raise Unreachable(f"could not reach {host}: timed out after {deadline:g} s") from None
    except httpx.ConnectTimeout:
        raise Unreachable(
            f"could not reach {host}: no connection within {connect_timeout:g} s"
        ) from None
    except httpx.TimeoutException:
        raise Unreachable(f"could not reach {host}: timed out after {deadline:g} s") from None
    except httpx.ConnectError as exc:
        raise Unreachable(f"could not reach {host}: {reason(exc)}") from None
    except (httpx.HTTPError, httpx.InvalidURL, OSError) as exc:
        raise Unreachable(f"fetching {start.url} failed: {reason(exc)}") from None


async def _follow(
    start: WebAddress, rules: FetchRules, max_bytes: int, timeout: httpx.Timeout
) -> Fetched:
    """The answer at the end of the redirects from ``start``, each hop checked first."""
    current = start
    for hop in range(MAX_REDIRECTS + 1):
        try:
            route = await route_to(current, rules)
        except Refused as exc:
            raise Refused(f"{start.url} redirected to {exc}" if hop else str(exc)) from None
        async with _answer(current, route, timeout) as response:
            location = response.headers.get("location") if response.has_redirect_location else None
            if location is None:
                return await _read(response, start, current, max_bytes)
        if hop == MAX_REDIRECTS:
            break
        current = _next_hop(start, current, location, rules)
    raise Unreachable(f"{start.url} redirected more than {MAX_REDIRECTS} times")


def _next_hop(
    start: WebAddress, current: WebAddress, location: str, rules: FetchRules
) -> WebAddress:
    """Where a redirect leads, if it may be followed: ``Refused`` saying why not."""
    try:
        target = current.join(location)
    except BadAddress as exc:
        raise Refused(f"{start.url} redirected to a URL that is not fetched: {exc}") from None
    kind = host_kind(target)
    if kind is not None and not private_allowed(rules.private_hosts, target):
        raise Refused(f"{start.url} redirected to {private_refusal(target, kind)}")
    if target.host != start.host and not rules.unasked(target):
        raise Refused(
            f"{start.url} redirected to {target.url}, on another host, which needs the user's approval: "
            f"not followed. To read it, fetch that URL (the user is asked first)"
        )
    return target


async def route_to(address: WebAddress, rules: FetchRules) -> Route:
    """Where a request for ``address`` may go: its addresses, each checked (looked up once,
    here), or the proxy that takes it; ``Refused`` for a private one the user has not named."""
    allowed = private_allowed(rules.private_hosts, address)
    kind = host_kind(address)
    if kind is not None and not allowed:
        raise Refused(private_refusal(address, kind))
    proxy = _proxy_for(address)
    if address.ip is not None:
        return Route((address.ip,), proxy)
    try:
        found = await rules.resolve(address.host, address.port)
    except OSError as exc:
        if proxy is not None:
            return Route((), proxy)  # the proxy looks up names this machine cannot
        raise Unreachable(f"could not reach {address.authority}: {reason(exc)}") from None
    if not found:
        raise Unreachable(f"could not reach {address.authority}: the name has no address")
    if not allowed:
        for ip in found:
            if (kind := private_kind(ip)) is not None:
                raise Refused(private_refusal(address, kind, ip))
    return Route(tuple(found), proxy)


def _proxy_for(address: WebAddress) -> str | None:
    """The proxy the environment names for this URL (``https_proxy``, ``all_proxy``, in either
    case, the lower case first), unless ``no_proxy`` exempts its host; or None."""
    variables = {
        name.lower(): value
        for name, value in sorted(os.environ.items(), key=lambda item: item[0].islower())
        if value
    }
    proxy = variables.get(f"{address.scheme}_proxy") or variables.get("all_proxy")
    if not proxy or _exempt(address, variables.get("no_proxy", "")):
        return None
    return proxy


def _exempt(address: WebAddress, no_proxy: str) -> bool:
    """Whether ``no_proxy`` (``*``, hosts, ``.domains``, ``host:port``) names the address."""
    for entry in (item.strip().lower() for item in no_proxy.split(",")):
        if entry == "*":
            return True
        name, _, port = entry.rpartition(":") if entry.count(":") == 1 else (entry, "", "")
        if not name or (port and port != str(address.port)):
            continue
        name = name.strip("[]").removeprefix("*").removeprefix(".")
        if address.host == name or address.host.endswith(f".{name}"):
            return True
    return False


@asynccontextmanager
async def _answer(
    address: WebAddress, route: Route, timeout: httpx.Timeout
) -> AsyncIterator[httpx.Response]:
    """The streamed answer to ``GET address``, from the first of the route's addresses that
    takes the connection."""
    import httpx2 as httpx

    from dcode.models.user_agent import USER_AGENT

    transport = httpx.AsyncHTTPTransport(
        proxy=route.proxy, retries=0, verify=_tls_context(address, route)
    )
    headers = {"User-Agent": USER_AGENT, "Accept": ACCEPT, "Host": address.authority}
    async with httpx.AsyncClient(
        transport=transport, trust_env=False, timeout=timeout, headers=headers
    ) as client:
        response: httpx.Response | None = None
        failure: httpx.ConnectError | None = None
        for request in _requests(client, address, route):
            try:
                response = await client.send(request, stream=True)
                break
            except httpx.ConnectError as exc:
                failure = exc
        if response is None:
            raise failure or httpx.ConnectError("no address to connect to")
        try:
            yield response
        finally:
            await response.aclose()


def _tls_context(address: WebAddress, route: Route) -> ssl.SSLContext:
    """The context that verifies a hop's TLS: the trust store (the system's, or the one
    ``SSL_CERT_FILE`` or ``SSL_CERT_DIR`` names), loaded once; a plain http hop gets a context
    that trusts nothing, as it makes no TLS connection (loading the store takes ~0.1 s)."""
    if address.scheme == "https" or (route.proxy or "").startswith("https:"):
        return _trust_store(os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))
    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)


@functools.lru_cache(maxsize=4)
def _trust_store(cafile: str | None, capath: str | None) -> ssl.SSLContext:
    """httpx's verifying context; the variables it reads key the cache."""
    import httpx2 as httpx

    return httpx.create_ssl_context()


def _requests(client: httpx.AsyncClient, address: WebAddress, route: Route) -> list[httpx.Request]:
    """One request per checked address, to the address itself; through a proxy, one by name."""
    if route.proxy is not None:
        return [client.build_request("GET", address.url)]
    # The TLS server name is the host the URL names, so the certificate is checked against it.
    extensions = (
        {"sni_hostname": address.host} if address.scheme == "https" and address.ip is None else {}
    )
    return [
        client.build_request("GET", _pinned_url(address, ip), extensions=extensions)
        for ip in route.addresses
    ]


def _pinned_url(address: WebAddress, ip: IPAddress) -> str:
    host = f"[{ip.compressed}]" if ip.version == 6 else str(ip)
    return f"{address.scheme}://{host}:{address.port}{address.target}"


async def _read(
    response: httpx.Response, start: WebAddress, final: WebAddress, max_bytes: int
) -> Fetched:
    cap = ERROR_BODY_BYTES if response.status_code >= 400 else max_bytes
    body = bytearray()
    capped = False
    async for chunk in response.aiter_bytes():
        room = cap - len(body)
        if len(chunk) > room:
            body += chunk[:room]
            capped = True
            break
        body += chunk
    media_type, charset = content_type(response.headers.get("content-type", ""))
    return Fetched(
        url=start.url,
        final_url=final.url,
        redirected=final is not start,
        status=response.status_code,
        reason=response.reason_phrase,
        media_type=media_type,
        charset=charset,
        body=bytes(body),
        capped=capped and response.status_code < 400,
    )


def content_type(header: str) -> tuple[str, str | None]:
    """A ``Content-Type`` header's media type (lower case, ``""`` for none) and charset."""
    message = Message()
    message["content-type"] = header
    media_type = message.get_content_type() if header.strip() else ""
    charset = message.get_param("charset")
    return media_type.lower(), (
        charset.strip() if isinstance(charset, str) and charset.strip() else None
    )


def reason(exc: BaseException) -> str:
    """Why a request failed, in a few words: the operating system's reason where one caused it
    (``connection refused``, ``name or service not known``), else the exception's message; its
    type when it says nothing."""
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, ssl.SSLCertVerificationError):  # an OSError whose errno says nothing
            return (
                f"certificate verify failed ({cause.verify_message})"
                if cause.verify_message
                else "certificate verify failed"
            )
        if isinstance(cause, ssl.SSLError):
            return f"TLS failed ({cause.reason or cause})"
        if isinstance(cause, OSError) and cause.strerror:
            # asyncio words a refusal "Connect call failed (...)"; the errno's own name is plainer
            plain = (
                os.strerror(cause.errno)
                if isinstance(cause.errno, int) and cause.errno > 0
                else cause.strerror
            )
            return plain.lower()
        cause = cause.__cause__ or cause.__context__
    text = re.sub(r"\[Errno -?\d+\]\s*", "", str(exc)).strip()
    return text[:1].lower() + text[1:] if text else type(exc).__name__
