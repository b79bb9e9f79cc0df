"""The environment through which ``dcode serve`` configures the server process it starts.

Light on purpose: ``dcode serve`` reads these names before anything heavy is imported, and the
served graph (``host``) reads them in the server's process.
"""

from __future__ import annotations

from pathlib import Path

WORKSPACE_ENV = "DCODE_SERVE_WORKSPACE"
"""The workspace the server's runs work in (default: the server's current directory)."""
MODEL_ENV = "DCODE_SERVE_MODEL"
BASE_URL_ENV = "DCODE_SERVE_BASE_URL"
API_ENV = "DCODE_SERVE_API"
EFFORT_ENV = "DCODE_SERVE_EFFORT"
"""The model flags ``dcode serve`` was given: the defaults of every run (a run's context may
name another model)."""
TOKEN_ENV = "DCODE_SERVE_TOKEN"
"""The token clients must send (``Authorization: Bearer ...``); unset: none is asked for."""
CLIENT_TOKEN_ENV = "DCODE_SERVER_TOKEN"
"""Where a client finds the token it sends to a dcode server."""
CLIENT_API_KEY_ENV = "DCODE_SERVER_API_KEY"
"""The API key a client sends as ``x-api-key`` (a LangSmith Deployment's)."""
LANGSMITH_API_KEY_ENV = "LANGSMITH_API_KEY"
"""LangSmith's own key variable: sent as ``x-api-key`` when no dcode token or key is set."""

ASSISTANT_ID = "dcode"
"""The graph's id in ``langgraph.json``: the assistant a client starts its runs on."""
SESSION_ASSISTANT = "dcode-session"
"""The graph a client asks about a session between its turns (``dcode.server.session_graph``)."""
MODEL_KEYS = ("model", "base_url", "api", "effort")
"""The keys of a run's context that choose its model (``ServedContext``'s): what a client asks
the ``dcode-session`` graph about when it asks which model answers its runs."""

CONFIG_FILE = Path(__file__).with_name("langgraph.json")
AEGRA_CONFIG_FILE = Path(__file__).with_name("aegra.json")
"""The same graph and auth for Aegra (``aegra serve -c``), which loads a graph from a file's
path, not a module's, and keeps checkpoints in its own PostgreSQL."""
