"""The OpenAI-compatible Files API, through the OpenAI client (``RemoteFiles``).

Uploads ask for an expiry (``expires_after`` anchored at creation); listing walks every page
with the client's own cursor paginator; every request carries dcode's User-Agent. The OpenAI
client's retries and dcode's time limits apply as they do to chat requests (the same HTTP
client). A provider's "no room" answer becomes ``QuotaExceeded``; any other failure a
``FilesError`` whose message is one line.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Literal

import openai
from openai.types import FileObject

from dcode.media.uploads.remote import FilesError, QuotaExceeded, RemoteFile
from dcode.models.errors import api_message, describe_model_error
from dcode.models.transport import ModelHttpClient, RetryBudgetExceeded
from dcode.models.user_agent import USER_AGENT

if TYPE_CHECKING:
    from dcode.models.spec import Endpoint
    from dcode.settings.config import Settings

_QUOTA_WORDS = (
    "quota",
    "storage limit",
    "too many files",
    "file limit",
    "limit on the number of files",
)


class OpenAIFiles:
    def __init__(self, client: openai.AsyncOpenAI) -> None:
        self.client = client

    @classmethod
    def for_endpoint(
        cls, endpoint: Endpoint, settings: Settings, http_client: ModelHttpClient
    ) -> OpenAIFiles:
        """Files of ``endpoint``'s key, over ``http_client`` (``model_http_client``; the
        caller closes it)."""
        from dcode.models.transport import BudgetedAsyncOpenAI, Limits

        client = BudgetedAsyncOpenAI(
            api_key=endpoint.api_key,
            base_url=endpoint.base_url,
            max_retries=settings.max_retries,
            timeout=Limits.of(settings).httpx_timeout,
            http_client=http_client,
            retry_budget=settings.retry_budget,
            default_headers={"User-Agent": USER_AGENT},
        )
        return cls(client)

    async def upload(
        self, name: str, data: bytes, media_type: str, *, purpose: str, expires_after: int
    ) -> RemoteFile:
        try:
            answer = await self.client.files.create(
                file=(name, data, media_type),
                purpose=purpose,  # type: ignore[arg-type]  # providers have purposes of their own
                expires_after={"anchor": "created_at", "seconds": expires_after},
            )
        except openai.APIStatusError as exc:
            if is_quota_error(exc):
                raise QuotaExceeded(f"the provider has no room: {api_message(exc)}") from exc
            raise self._failure("upload", exc) from exc
        except (openai.APIError, RetryBudgetExceeded) as exc:
            raise self._failure("upload", exc) from exc
        return remote_file(answer)

    async def list(self, *, order: Literal["asc", "desc"] = "asc") -> AsyncIterator[RemoteFile]:
        try:
            async for answer in self.client.files.list(order=order):
                yield remote_file(answer)
        except (openai.APIError, RetryBudgetExceeded) as exc:
            raise self._failure("listing files", exc) from exc

    async def retrieve(self, file_id: str) -> RemoteFile | None:
        try:
            return remote_file(await self.client.files.retrieve(file_id))
        except openai.NotFoundError:
            return None
        except (openai.APIError, RetryBudgetExceeded) as exc:
            raise self._failure(f"looking up {file_id}", exc) from exc

    async def delete(self, file_id: str) -> bool:
        try:
            answer = await self.client.files.delete(file_id)
        except openai.NotFoundError:
            return False
        except (openai.APIError, RetryBudgetExceeded) as exc:
            raise self._failure(f"deleting {file_id}", exc) from exc
        return bool(getattr(answer, "deleted", True))

    def _failure(self, what: str, exc: BaseException) -> FilesError:
        if isinstance(exc, openai.APIStatusError):
            return FilesError(f"{what} refused (HTTP {exc.status_code}): {api_message(exc)}")
        return FilesError(
            f"{what} failed: {describe_model_error(exc, str(self.client.base_url).rstrip('/'))}"
        )


def remote_file(answer: FileObject) -> RemoteFile:
    """A file object as answered: a field the provider left out is None, not a guess."""

    def field(name: str) -> object:
        extra = answer.model_extra or {}
        return getattr(answer, name, None) if name in vars(answer) else extra.get(name)

    def number(name: str) -> int | None:
        value = field(name)
        return (
            int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
        )

    return RemoteFile(
        id=str(field("id") or ""),
        bytes=number("bytes"),
        created_at=number("created_at"),
        expires_at=number("expires_at"),
        filename=str(field("filename") or ""),
        purpose=str(field("purpose") or ""),
        status=str(field("status") or ""),
    )


def is_quota_error(exc: openai.APIStatusError) -> bool:
    text = api_message(exc).lower()
    return exc.status_code in {400, 403, 409, 413, 422, 429} and any(
        word in text for word in _QUOTA_WORDS
    )
