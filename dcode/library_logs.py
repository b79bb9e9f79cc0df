"""Where the libraries' log lines go: nowhere, unless ``--debug`` asks for them.

dcode says what went wrong in its own words: one line headless, a notice in the TUI. A library
that logs a warning while nothing is configured to handle it reaches stderr anyway, through
logging's last resort: a stray line beside that one, or across the TUI's screen. A handler on
the root logger that drops everything stops that for every library at once; with ``--debug``
the root prints everything instead.
"""

from __future__ import annotations

import logging

# Chatty at DEBUG, and never what --debug is for.
_NOISY = ("httpcore", "httpx", "aiosqlite", "psycopg", "asyncio", "openai", "urllib3")
# psycopg's pools log each failed connection attempt (``psycopg.pool``) while they retry: the
# store's own line says what is wrong, once.


def route_library_logs(*, debug: bool = False) -> None:
    root = logging.getLogger()
    if debug:
        logging.basicConfig(level=logging.DEBUG, format="dcode: %(name)s: %(message)s", force=True)
        for name in _NOISY:
            logging.getLogger(name).setLevel(logging.WARNING)
        return
    if not any(type(handler) is logging.NullHandler for handler in root.handlers):
        root.addHandler(logging.NullHandler())
