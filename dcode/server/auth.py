"""Who may use a dcode server (``langgraph.json``'s ``auth``): whoever sends its token.

``dcode serve --token T`` (required off loopback) puts the token in the server's environment;
each request must then carry ``Authorization: Bearer T`` (a dcode client reads T from
``DCODE_SERVER_TOKEN``), or it gets one 401 line saying so. Without a token every request on
loopback is let in.

The same handler serves on ``langgraph dev`` and on Aegra, which call it differently: the first
passes the parameters it names (``headers``, as bytes), the second passes the headers, decoded,
as its one positional argument.
"""

from __future__ import annotations

import hmac
import os
from collections.abc import Mapping

from langgraph_sdk import Auth

from dcode.server.options import CLIENT_TOKEN_ENV, TOKEN_ENV

auth = Auth()

REFUSED = (
    f"this dcode server needs its token: set {CLIENT_TOKEN_ENV} "
    "(sent as Authorization: Bearer <token>)"
)
WRONG = f"this dcode server refused the token: check {CLIENT_TOKEN_ENV}"


@auth.authenticate
async def authenticate(
    headers: Mapping[bytes, bytes] | Mapping[str, str],
) -> Auth.types.MinimalUserDict:
    authorization = authorization_of(headers)
    expected = os.environ.get(TOKEN_ENV, "")
    if not expected:
        return {"identity": "local"}
    if not authorization:
        raise Auth.exceptions.HTTPException(status_code=401, detail=REFUSED)
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(
        token.strip().encode(), expected.encode()
    ):
        raise Auth.exceptions.HTTPException(status_code=401, detail=WRONG)
    return {"identity": "token"}


def authorization_of(headers: Mapping[bytes, bytes] | Mapping[str, str]) -> str:
    """The ``Authorization`` header's value ("": none), whichever way the server gave them."""
    for key, value in headers.items():
        name = key.decode("latin-1") if isinstance(key, bytes) else key
        if name.lower() == "authorization":
            return value.decode("latin-1") if isinstance(value, bytes) else value
    return ""
