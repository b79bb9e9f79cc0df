"""Where sessions are kept when they are not in ``$DCODE_HOME/sessions.db``: a PostgreSQL
server named by ``DCODE_DATABASE_URL`` or by ``database_url`` in the user's own config (never a
project's: a repository must not choose where the user's conversations go).

The address may hold a password, so it is never shown whole (``database_location``) and the
shell never sees the variable (``dcode.agent.backends.environment``). Standard library only.
"""

from __future__ import annotations

from urllib.parse import urlsplit

DATABASE_URL_ENV = "DCODE_DATABASE_URL"
SCHEMES = ("postgresql", "postgres")


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
