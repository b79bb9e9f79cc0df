"""Web addresses as ``web_fetch`` reads them: one parse, one canonical form, one verdict on the host.

Every decision about a URL is made on the ``WebAddress`` parsed here: whether it is refused,
whether ``[fetch] allow`` names its host, what an approval shows, where the request goes. No
second parser ever reads the URL the model wrote, so no two parsers can disagree about which
host it names.

The canonical form is what the request uses: the scheme and host in lower case, a host in
ASCII (IDNA), an IPv4 address in any spelling the resolver accepts (``2130706433``,
``0x7f000001``, ``127.1``) written as four decimals, IPv6 compressed, no trailing dot, the
default port left out, no user name or password (a URL with one is refused), no fragment.

A *private* address is one that reaches this machine or its networks rather than the public
Internet: loopback, private, shared (carrier-grade NAT), link-local, unique-local, multicast,
reserved and documentation ranges, the IPv4 forms hidden in IPv6 ones (mapped, compatible,
6to4, NAT64), and the cloud metadata services, by address and by name. ``web_fetch`` never
reaches one unless the user's own config names the host in ``[fetch] allow_private``.

Standard library only: the config, the approval policy and the TUI read addresses too.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from dataclasses import dataclass
from typing import Final
from urllib.parse import quote, urljoin, urlsplit

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

DEFAULT_PORTS: Final = {"http": 80, "https": 443}
ALLOW_PRIVATE: Final = "[fetch] allow_private"

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_HOST_CHARS = re.compile(r"[a-z0-9_-]+(\.[a-z0-9_-]+)*")
_NUMERIC_LABEL = re.compile(r"[0-9]+|0x[0-9a-f]*")
_SAFE_PATH = "/%:@!$&'()*+,;=-._~"
_SAFE_QUERY = _SAFE_PATH + "?"

METADATA_NAMES: Final = frozenset({"metadata.google.internal", "metadata.goog", "metadata"})
"""Names of cloud instance metadata services, which answer with the machine's credentials."""
METADATA_ADDRESSES: Final = frozenset(
    ipaddress.ip_address(a)
    for a in ("169.254.169.254", "169.254.170.2", "100.100.100.200", "192.0.0.192", "fd00:ec2::254")
)

_N4 = ipaddress.IPv4Network
_N6 = ipaddress.IPv6Network
_PRIVATE_V4: Final = (
    (_N4("0.0.0.0/8"), "unspecified"),
    (_N4("127.0.0.0/8"), "loopback"),
    (_N4("10.0.0.0/8"), "private"),
    (_N4("172.16.0.0/12"), "private"),
    (_N4("192.168.0.0/16"), "private"),
    (_N4("100.64.0.0/10"), "shared (carrier-grade NAT)"),
    (_N4("169.254.0.0/16"), "link-local"),
    (_N4("224.0.0.0/4"), "multicast"),
    (_N4("192.0.0.0/24"), "special-purpose"),
    (_N4("192.0.2.0/24"), "documentation"),
    (_N4("198.51.100.0/24"), "documentation"),
    (_N4("203.0.113.0/24"), "documentation"),
    (_N4("192.88.99.0/24"), "reserved"),
    (_N4("198.18.0.0/15"), "benchmarking"),
    (_N4("240.0.0.0/4"), "reserved"),  # 255.255.255.255, the broadcast address, among them
)
_PRIVATE_V6: Final = (
    (_N6("::/128"), "unspecified"),
    (_N6("::1/128"), "loopback"),
    (_N6("fe80::/10"), "link-local"),
    (_N6("fec0::/10"), "site-local"),
    (_N6("fc00::/7"), "unique-local"),
    (_N6("ff00::/8"), "multicast"),
    (_N6("2001::/23"), "special-purpose"),  # Teredo among them
    (_N6("2001:db8::/32"), "documentation"),
    (_N6("3fff::/20"), "documentation"),
)
_GLOBAL_UNICAST: Final = _N6("2000::/3")
_NAT64: Final = _N6("64:ff9b::/96")
_COMPATIBLE: Final = _N6("::/96")


class BadAddress(ValueError):
    """The URL is not fetched: the message says why, in a few words."""


@dataclass(frozen=True, slots=True)
class WebAddress:
    """An http or https URL in its canonical form."""

    scheme: str
    host: str
    """Lower-case ASCII without a trailing dot; an IP address in its standard form (IPv6
    without brackets)."""
    port: int
    """The port connected to: the URL's, else the scheme's default."""
    target: str
    """The path and query sent, percent-encoded; starts with ``/``."""

    @property
    def ip(self) -> IPAddress | None:
        """The host as an address, when the URL names one rather than a name."""
        try:
            return ipaddress.ip_address(self.host)
        except ValueError:
            return None

    @property
    def authority(self) -> str:
        """``host[:port]`` as the ``Host`` header and the canonical URL write it."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if self.port == DEFAULT_PORTS[self.scheme] else f"{host}:{self.port}"

    @property
    def url(self) -> str:
        return f"{self.scheme}://{self.authority}{self.target}"

    def join(self, location: str) -> WebAddress:
        """The address a redirect's ``Location`` names, relative to this one."""
        return parse_address(urljoin(self.url, location.strip()))


def parse_address(url: str) -> WebAddress:
    """``url`` in canonical form; ``BadAddress`` for anything but a plain http or https URL."""
    url = url.strip()
    if _CONTROL.search(url):
        raise BadAddress(f"not a valid URL (it holds a control character): {url!r}")
    try:
        parts = urlsplit(url)
    except ValueError as exc:
        raise BadAddress(f"not a valid URL ({exc}): {url}") from None
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS:
        named = f"the {scheme}: scheme" if scheme else "a URL without a scheme"
        raise BadAddress(f"only http:// and https:// URLs can be fetched, not {named}: {url}")
    if "@" in parts.netloc:
        raise BadAddress(
            "a URL with a user name or password in it is not fetched (web pages are read without credentials)"
        )
    host, port = _host_and_port(parts.netloc, url)
    path = quote(parts.path or "/", safe=_SAFE_PATH)
    query = f"?{quote(parts.query, safe=_SAFE_QUERY)}" if parts.query else ""
    return WebAddress(
        scheme, host, port if port is not None else DEFAULT_PORTS[scheme], path + query
    )


def canonical_url(url: str) -> str | None:
    """``url`` as it would be fetched, or None when it would be refused."""
    try:
        return parse_address(url).url
    except BadAddress:
        return None


def _host_and_port(netloc: str, url: str) -> tuple[str, int | None]:
    if "\\" in netloc or " " in netloc:
        raise BadAddress(f"not a valid URL (its host part holds a backslash or a space): {url}")
    if netloc.startswith("["):
        inside, bracket, rest = netloc[1:].partition("]")
        host_text, port_text = f"[{inside}{bracket}", rest
        if port_text and not port_text.startswith(":"):
            raise BadAddress(f"not a valid URL (text after the IPv6 address): {url}")
        port_text = port_text[1:]
    else:
        host_text, _, port_text = netloc.partition(":")
    if not host_text:
        raise BadAddress(f"the URL names no host: {url}")
    return canonical_host(host_text), _port(port_text, url)


def _port(text: str, url: str) -> int | None:
    if not text:
        return None
    if not text.isascii() or not text.isdigit() or not 0 < int(text) < 65536:
        raise BadAddress(f"not a valid URL (the port is not a number from 1 to 65535): {url}")
    return int(text)


def canonical_host(text: str) -> str:
    """A host as the resolver reads it: ``LOCALHOST.`` is ``localhost``, ``0x7f.1`` is
    ``127.0.0.1``, ``[::ffff:127.0.0.1]`` is ``::ffff:7f00:1``, ``bücher.example`` is
    ``xn--bcher-kva.example``; ``BadAddress`` for what is none."""
    if text.startswith("[") and text.endswith("]"):
        inner = text[1:-1]
        if "%" in inner:
            raise BadAddress(f"an IPv6 address with a zone is not fetched: {text}")
        try:
            return str(ipaddress.IPv6Address(inner))
        except ValueError:
            raise BadAddress(f"not a valid IPv6 address: {text}") from None
    host = text.lower().removesuffix(".")
    if not host.isascii():
        host = _idna(host, text)
    if not _HOST_CHARS.fullmatch(host):
        raise BadAddress(f"not a valid host name: {text}")
    if _NUMERIC_LABEL.fullmatch(host.rsplit(".", 1)[-1]):
        try:  # the resolver reads a name ending in a number as an IPv4 address, in inet_aton's spellings
            return socket.inet_ntoa(socket.inet_aton(host))
        except OSError:
            raise BadAddress(f"not a valid IPv4 address: {text}") from None
    return host


def _idna(host: str, text: str) -> str:
    import idna  # loaded only for a name that is not ASCII

    try:
        return idna.encode(host, uts46=True).decode("ascii").lower()
    except idna.IDNAError:
        raise BadAddress(f"not a valid host name: {text}") from None


# -- private addresses


def private_kind(ip: IPAddress) -> str | None:
    """What makes ``ip`` private (``loopback``, ``link-local``, ``cloud metadata``…), or None
    for an address on the public Internet."""
    if ip in METADATA_ADDRESSES:
        return "cloud metadata"
    if isinstance(ip, ipaddress.IPv4Address):
        return next((kind for network, kind in _PRIVATE_V4 if ip in network), None)
    embedded = _embedded_v4(ip)
    if embedded is not None:
        inner = private_kind(embedded)
        if inner is not None or ip in _NAT64:  # NAT64 is how IPv6-only networks reach public IPv4
            return inner
    kind = next((kind for network, kind in _PRIVATE_V6 if ip in network), None)
    if kind is None and ip not in _GLOBAL_UNICAST:
        return "reserved"
    return kind


def _embedded_v4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one carries (mapped, compatible, 6to4, NAT64), or None."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip in _NAT64 or (ip in _COMPATIBLE and int(ip) > 1):  # :: and ::1 are IPv6's own
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def name_kind(host: str) -> str | None:
    """What a host *name* says of where it leads (``localhost`` and names under it, the
    metadata services' names), or None when only its addresses can tell."""
    if host == "localhost" or host.endswith(".localhost"):
        return "loopback"
    if host in METADATA_NAMES:
        return "cloud metadata"
    return None


def host_kind(address: WebAddress) -> str | None:
    """What the URL's host itself says, before any lookup: an address's kind, a name's."""
    ip = address.ip
    return private_kind(ip) if ip is not None else name_kind(address.host)


# -- [fetch] allow_private


def host_entry(text: str) -> str:
    """A ``[fetch] allow_private`` entry (``localhost:8000``, ``intranet.example``,
    ``[::1]:8080``) in canonical form; ``BadAddress`` for one that names no single host."""
    text = text.strip()
    if not text or any(c in text for c in "/*@?#"):
        raise BadAddress(f"{text!r} is not a host or host:port")
    if text.startswith("["):
        host_text, _, rest = text.partition("]")
        host_text += "]"
        if rest and not rest.startswith(":"):
            raise BadAddress(f"{text!r} is not a host or host:port")
        port_text = rest[1:]
    else:
        host_text, _, port_text = text.partition(":")
    host = canonical_host(host_text)
    port = _port(port_text, text)
    shown = f"[{host}]" if ":" in host else host
    return shown if port is None else f"{shown}:{port}"


def private_allowed(entries: tuple[str, ...], address: WebAddress) -> bool:
    """Whether ``entries`` (canonical ``host_entry`` forms) name the address's host, on any port
    (``host``) or on its own (``host:port``)."""
    shown = f"[{address.host}]" if ":" in address.host else address.host
    return shown in entries or f"{shown}:{address.port}" in entries


def private_refusal(address: WebAddress, kind: str, resolved: IPAddress | None = None) -> str:
    """The one line saying why ``address`` is not fetched: its host is, or resolves to, a
    private address."""
    where = (
        f"{address.host} resolves to {resolved}, a {kind} address"
        if resolved is not None
        else f"{address.host} is a {kind} address"
    )
    entry = (
        f"[{address.host}]:{address.port}"
        if ":" in address.host
        else f"{address.host}:{address.port}"
    )
    return (
        f"{address.url} is not fetched: {where}. Private addresses are fetched only from hosts the user names in "
        f'{ALLOW_PRIVATE} in their own config (allow_private = ["{entry}"])'
    )


def refused_outright(url: object, private_hosts: tuple[str, ...]) -> str | None:
    """Why ``url`` is refused before any lookup or request (not a plain http/https URL, or a
    private host the user has not named), or None."""
    if not isinstance(url, str):
        return "the URL is not text"
    try:
        address = parse_address(url)
    except BadAddress as exc:
        return str(exc)
    kind = host_kind(address)
    if kind is not None and not private_allowed(private_hosts, address):
        return private_refusal(address, kind)
    return None
