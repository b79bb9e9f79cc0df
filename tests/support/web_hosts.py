"""Hosts for web_fetch's tests: a loopback recorder, a certificate authority of the test's own,
and the user's config naming the hosts web_fetch may reach on this machine.

``Recorder`` is a tiny HTTP server that answers every GET with 200 ``recorded`` and keeps what
it was sent: the address the connection came in on, the path, the headers, and for https the
server name the client asked for (SNI). It listens on one port at several loopback addresses
at once (``127.0.0.1``, ``127.0.0.2``, ``::1``), so a request that reaches this machine by any
spelling of loopback is seen.

``allow_private`` writes ``[fetch] allow_private`` into ``$DCODE_HOME/config.toml`` and reads it
back through ``load_settings``: tests that fetch from the scripted server on loopback allow its
host the way a user would.
"""

from __future__ import annotations

import datetime
import socket
import ssl
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

if TYPE_CHECKING:
    from dcode.settings.config import Settings


@dataclass(frozen=True, slots=True)
class Hit:
    """One request the recorder received."""

    address: str
    """The local address the connection came in on (``127.0.0.2``, ``::1``)."""
    method: str
    path: str
    headers: dict[str, str]
    server_name: str | None
    """The TLS server name the client sent (https only)."""


@dataclass
class _State:
    hits: list[Hit] = field(default_factory=list)
    names: dict[int, str | None] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)


class _Handler(BaseHTTPRequestHandler):
    state: _State

    def do_GET(self) -> None:
        sock = self.connection
        name = self.state.names.get(id(sock)) if isinstance(sock, ssl.SSLSocket) else None
        hit = Hit(
            str(sock.getsockname()[0]),
            "GET",
            self.path,
            {k.lower(): v for k, v in self.headers.items()},
            name,
        )
        with self.state.lock:
            self.state.hits.append(hit)
        body = b"recorded"
        self.send_response(200)
        self.send_header("content-type", "text/plain")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        return


class _Server(HTTPServer):
    def __init__(
        self,
        address: tuple[str, int],
        family: socket.AddressFamily,
        handler: type[_Handler],
        tls: ssl.SSLContext | None,
    ) -> None:
        self.address_family = family
        self.tls = tls
        super().__init__(address, handler)

    def get_request(self) -> tuple[socket.socket, object]:
        sock, peer = super().get_request()
        if self.tls is not None:
            sock.settimeout(5)
            try:
                sock = self.tls.wrap_socket(sock, server_side=True)
            except (ssl.SSLError, OSError):
                sock.close()
                raise
        return sock, peer


class Recorder:
    """A recording HTTP(S) server on loopback: ``with Recorder() as recorder: ... recorder.hits``."""

    def __init__(
        self,
        addresses: tuple[str, ...] = ("127.0.0.1", "127.0.0.2", "::1"),
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self._state = _State()
        if tls is not None:
            tls.sni_callback = self._note_name
        handler = type("RecorderHandler", (_Handler,), {"state": self._state})
        self._servers: list[_Server] = []
        self.port = 0
        for address in addresses:
            family = socket.AF_INET6 if ":" in address else socket.AF_INET
            try:
                self._servers.append(_Server((address, self.port), family, handler, tls))
            except OSError:
                if not self._servers:
                    raise
                continue  # this machine has no such address (no IPv6, say): the others still listen
            self.port = int(self._servers[0].server_address[1])
        self.addresses = tuple(str(s.server_address[0]) for s in self._servers)
        self._threads = [
            threading.Thread(target=s.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
            for s in self._servers
        ]

    def _note_name(
        self, sock: ssl.SSLObject | ssl.SSLSocket, name: str | None, _: ssl.SSLContext
    ) -> None:
        self._state.names[id(sock)] = name

    @property
    def hits(self) -> list[Hit]:
        with self._state.lock:
            return list(self._state.hits)

    def __enter__(self) -> Self:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        for server in self._servers:
            server.shutdown()
            server.server_close()


@dataclass(frozen=True, slots=True)
class Authority:
    """A certificate authority made for one test, and how to make a server certificate under it."""

    folder: Path
    ca_file: Path
    _key: Any
    _cert: Any

    @classmethod
    def create(cls, folder: Path) -> Authority:
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import NameOID

        key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "dcode test authority")])
        cert = (
            _builder(name, name, key.public_key())
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(False, False, False, False, False, True, True, False, False),
                critical=True,
            )
            .add_extension(
                x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False
            )
            .sign(key, hashes.SHA256())
        )
        ca_file = folder / "authority.pem"
        ca_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        return cls(folder, ca_file, key, cert)

    def server_context(self, host: str) -> ssl.SSLContext:
        """A TLS server context whose certificate names ``host`` only, signed by this authority."""
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

        key = ec.generate_private_key(ec.SECP256R1())
        ca_cert: x509.Certificate = self._cert
        cert = (
            _builder(
                x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host)]),
                ca_cert.subject,
                key.public_key(),
            )
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(host)]), critical=False)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(self._key.public_key()),
                critical=False,
            )
            .sign(self._key, hashes.SHA256())
        )
        chain = self.folder / f"{host}.pem"
        chain.write_bytes(
            cert.public_bytes(serialization.Encoding.PEM)
            + key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(chain)
        return context


def _builder(subject: Any, issuer: Any, public_key: Any) -> Any:
    from cryptography import x509

    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
    )


def user_fetch_config(
    home: Path, *, allow_private: tuple[str, ...] = (), allow: tuple[str, ...] = ()
) -> Settings:
    """Write ``[fetch] allow_private`` and ``allow`` into the user's config in ``home``, and
    return the settings dcode reads back (``fetch_private``, ``fetch_allow``)."""
    from dcode.settings.config import load_settings

    def listed(items: tuple[str, ...]) -> str:
        return "[" + ", ".join(f'"{item}"' for item in items) + "]"

    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(
        f"[fetch]\nallow_private = {listed(allow_private)}\nallow = {listed(allow)}\n"
    )
    return load_settings(workspace=home, env={"DCODE_HOME": str(home)})


def allow_private(home: Path, *entries: str) -> tuple[str, ...]:
    """``[fetch] allow_private = entries`` in the user's config in ``home``, as dcode reads it."""
    return user_fetch_config(home, allow_private=entries).fetch_private
