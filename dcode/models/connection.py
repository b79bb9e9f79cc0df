"""A quick connection test against the configured endpoint (doctor and the first-run screen)."""

from __future__ import annotations

from dcode.models.factory import ResolvedModel


def check_connection(resolved: ResolvedModel, timeout: float = 10.0) -> tuple[bool, str]:
    """List the server's models; fall back to a one-token completion for servers without /models."""
    import openai

    from dcode.models.errors import describe_model_error

    endpoint = resolved.endpoint
    client = openai.OpenAI(base_url=endpoint.base_url, api_key=endpoint.api_key, timeout=timeout, max_retries=0)
    try:
        names = [m.id for m in client.models.list().data]
    except openai.NotFoundError:
        names = None
    except Exception as exc:  # noqa: BLE001
        return False, describe_model_error(exc, endpoint.base_url)
    if names is not None:
        known = endpoint.spec.model in names
        suffix = "" if known or not names else f" (the server does not list {endpoint.spec.model!r})"
        return True, f"{endpoint.base_url} answered with {len(names)} model(s){suffix}"
    return True, f"{endpoint.base_url} answered"
