"""Who may use a dcode server (``langgraph.json``'s ``auth``): whoever sends its token.

``dcode serve --token T`` (required off loopback) puts the token in the server's environment;
each request must then carry ``Authorization: Bearer T`` (a dcode client reads T from
``DCODE_SERVER_TOKEN``), or it gets one 401 line saying so. Without a token every request on
loopback is let in.
"""

from __future__ import annotations

import hmac
import os

from langgraph_sdk import Auth

from dcode.server.options import CLIENT_TOKEN_ENV, TOKEN_ENV

auth = Auth()

REFUSED = (
    f"this dcode server needs its token: set {CLIENT_TOKEN_ENV} "
    "(sent as Authorization: Bearer <token>)"
)
WRONG = f"this dcode server refused the token: check {CLIENT_TOKEN_ENV}"


@auth.authenticate
async def authenticate(authorization: str | None) -> Auth.types.MinimalUserDict:
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
