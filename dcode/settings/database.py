"""Where sessions are kept when they are not in ``$DCODE_HOME/sessions.db``: a PostgreSQL
server named by ``DCODE_DATABASE_URL`` or by ``database_url`` in the user's own config (never a
project's: a repository must not choose where the user's conversations go).

The address may hold a password, so it is never shown whole (``database_location``) and the
shell never sees the variable (``dcode.agent.backends.environment``). Standard library only.
"""

from __future__ import annotations

import re
from urllib.parse import unquote, urlsplit

DATABASE_URL_ENV = "DCODE_DATABASE_URL"
SCHEMES = ("postgresql", "postgres")
HIDDEN = "***"
_PASSWORDS = (
    re.compile(r"://[^:/?#@]*:([^@]*)@"),  # the user's password in the address
    re.compile(r"[?&]password=([^&#]*)", re.I),  # or as a parameter of its query
)


def is_postgres_url(url: str) -> bool:
    return url.split("://", 1)[0].lower() in SCHEMES and "://" in url


def database_location(url: str) -> str:
    """``url`` as a message shows it: scheme, user, host, port and database, without the
    password or the query (which may hold one too)."""
    try:
        parts = urlsplit(url)
        user, host, port = parts.username, parts.hostname, parts.port
    except ValueError:  # a port that is not a number, brackets that do not close
        scheme = url.split("://", 1)[0] if "://" in url else "?"
        return f"{scheme}://(an address that cannot be read)"
    netloc = f"{user}@" if user else ""
    netloc += f"[{host}]" if host and ":" in host else host or ""
    netloc += f":{port}" if port else ""
    return f"{parts.scheme}://{netloc}{parts.path}"


def without_secrets(text: str, url: str) -> str:
    """``text`` (a driver's words about ``url``) with the address shown as ``database_location``
    shows it and its password hidden: libpq quotes the address it could not read (a bracket
    that does not close) and the part it could not decode (a bad escape in the password)."""
    text = text.replace(url, database_location(url))
    secrets = {found for pattern in _PASSWORDS for found in pattern.findall(url)}
    for secret in sorted(secrets | {unquote(s) for s in secrets}, key=len, reverse=True):
        if secret:
            text = text.replace(secret, HIDDEN)
    return text
