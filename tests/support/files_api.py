"""An in-memory OpenAI Files API for the scripted model server.

dcode uploads images through the Files API with the official ``openai`` SDK and then refers to
them by id in chat requests. To test that with real HTTP, :class:`ScriptedModelServer` owns one
:class:`FilesApi` (``server.files``) that answers ``/v1/files`` the way OpenAI does: multipart
uploads with ``expires_after``, cursor-paged lists the SDK's ``CursorPage`` walks, retrieve and
delete with OpenAI's 404. What a real provider does badly is injectable (an incomplete or wrong
file object, a storage quota, a resolution failure), and the clock is the test's, so expiry can
be tested without waiting::

    with ScriptedModelServer() as server:
        server.files.page_size = 2
        server.files.fail_next_upload("quota")
        ...
        server.files.offset += 7200  # two hours later: short-lived files have expired
        assert server.files.uploads[0].content == png_bytes

The chat side uses it too: a completion request whose body names a ``file_id`` that is unknown,
deleted or expired is refused with OpenAI's 400 ``invalid_file_id`` before the script is asked
(:meth:`FilesApi.refusal`), as a provider refuses it before the model runs.

Standard library only, like the server: it works the same in-process and in a subprocess.
"""

from __future__ import annotations

import itertools
import json
import math
import re
import secrets
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal
from urllib.parse import parse_qs, urlsplit

__all__ = [
    "FILES_PATH_PATTERN",
    "UPLOAD_FAULT_KINDS",
    "Answer",
    "FilesApi",
    "FilesRequest",
    "StoredFile",
    "Upload",
    "invalid_file_answer",
    "referenced_file_ids",
]

FILES_PATH_PATTERN = re.compile(r"^(?:/v1)?/files(?:/(?P<file_id>[^/]+))?$")
"""``/v1/files`` and ``/v1/files/{id}``, with or without the ``/v1`` prefix."""

UploadFaultKind = Literal["incomplete", "wrong_bytes", "quota", "error"]
UPLOAD_FAULT_KINDS: frozenset[str] = frozenset({"incomplete", "wrong_bytes", "quota", "error"})

INVALID_FILE_CODE = "invalid_file_id"
"""``RecordedRequest.refused`` of a completion request refused for its file ids."""

# OpenAI accepts expiry between one hour and thirty days after the anchor.
_MIN_EXPIRY_SECONDS = 3600
_MAX_EXPIRY_SECONDS = 30 * 24 * 3600
_INVALID = "invalid_request_error"
_QUOTA_MESSAGE = "File storage quota exceeded: delete files to upload more."
_UNNAMED_INVALID_MESSAGE = "File invalid: one or more referenced files are unavailable."


@dataclass(frozen=True)
class Answer:
    """An HTTP answer for the server to send: status, extra headers, JSON body bytes."""

    status: int
    body: bytes
    headers: Mapping[str, str] = field(default_factory=dict)

    def json(self) -> Any:
        """The body decoded, for assertions."""
        return json.loads(self.body)


def _error(
    status: int,
    message: str,
    error_type: str,
    code: str | None,
    param: str | None,
    headers: Mapping[str, str] | None = None,
) -> Answer:
    """OpenAI's ``{"error": {...}}`` answer."""
    error = {"message": message, "type": error_type, "code": code, "param": param}
    return Answer(status, json.dumps({"error": error}).encode(), dict(headers or {}))


def _ok(payload: Mapping[str, Any]) -> Answer:
    return Answer(200, json.dumps(payload).encode())


def _no_such_file(file_id: str) -> Answer:
    return _error(404, f"No such File object: {file_id}", _INVALID, None, "id")


def _quota_answer() -> Answer:
    return _error(400, _QUOTA_MESSAGE, _INVALID, "quota_exceeded", None)


def _resolution_failure() -> Answer:
    """A 500 the SDK must not retry: the provider could not resolve the upload."""
    message = "The server had an error while processing your file. Sorry about that!"
    return _error(500, message, "server_error", None, None, {"x-should-retry": "false"})


def invalid_file_answer(ids: Sequence[str], named: bool = True) -> Answer:
    """OpenAI's 400 for a chat request that refers to files it cannot use.

    ``named`` answers name every id (comma separated); unnamed ones (or ones with no ids to
    name) do not say which file was at fault, as some providers answer.
    """
    if named and ids:
        message = f"Invalid file id: {', '.join(ids)} has expired or been deleted."
    else:
        message = _UNNAMED_INVALID_MESSAGE
    return _error(400, message, _INVALID, INVALID_FILE_CODE, "file_id")


def referenced_file_ids(body: Any) -> list[str]:
    """Every string ``"file_id"`` value anywhere in a JSON body, first use first, once each.

    Covers both wires without knowing their shapes: Responses ``input_image``/``input_file``
    parts and Chat ``{"type": "file", "file": {"file_id": ...}}`` parts alike.
    """
    return list(dict.fromkeys(_walk_file_ids(body)))


def _walk_file_ids(node: Any) -> Iterator[str]:
    if isinstance(node, Mapping):
        for key, value in node.items():
            if key == "file_id" and isinstance(value, str):
                yield value
            else:
                yield from _walk_file_ids(value)
    elif isinstance(node, list | tuple):
        for item in node:
            yield from _walk_file_ids(item)


# --------------------------------------------------------------------------
# Records
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Upload:
    """One upload attempt (``POST /v1/files``) as the client sent it, and what came of it.

    ``expires_after`` holds the ``expires_after[...]`` form fields by sub-key (``seconds`` as
    an int when it is one), or ``None`` when the client sent none; ``file_id`` is the stored
    file's id, ``None`` when the upload was refused.
    """

    index: int
    filename: str | None
    content_type: str | None
    purpose: str | None
    content: bytes = field(repr=False)
    expires_after: Mapping[str, Any] | None
    fields: Mapping[str, str]
    status: int
    file_id: str | None

    @property
    def bytes(self) -> int:
        """Size of the uploaded content."""
        return len(self.content)


@dataclass(frozen=True)
class FilesRequest:
    """One Files API request, in arrival order.

    ``file_id`` is the id in the path (retrieve, delete) or the id the upload created;
    ``status`` is the HTTP status answered; ``received_at`` is ``time.monotonic()``.
    """

    index: int
    method: str
    path: str
    query: Mapping[str, str]
    headers: Mapping[str, str]
    received_at: float
    status: int
    file_id: str | None = None
    upload: Upload | None = None

    @property
    def action(self) -> str:
        """``upload``, ``list``, ``retrieve``, ``delete`` or ``other``."""
        match = FILES_PATH_PATTERN.match(self.path)
        if match is None:
            return "other"
        if match.group("file_id") is None:
            return {"POST": "upload", "GET": "list"}.get(self.method, "other")
        return {"GET": "retrieve", "DELETE": "delete"}.get(self.method, "other")


@dataclass(frozen=True)
class StoredFile:
    """A file the server holds; ``sequence`` orders files created in the same second."""

    id: str
    filename: str
    purpose: str
    content: bytes = field(repr=False)
    content_type: str | None
    created_at: int
    expires_at: int | None
    sequence: int

    def expired(self, now: float) -> bool:
        return self.expires_at is not None and self.expires_at <= now

    def to_object(self) -> dict[str, Any]:
        """The file object OpenAI answers."""
        return {
            "id": self.id,
            "object": "file",
            "bytes": len(self.content),
            "created_at": self.created_at,
            "filename": self.filename,
            "purpose": self.purpose,
            "status": "processed",
            "expires_at": self.expires_at,
        }


# --------------------------------------------------------------------------
# Multipart
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class _Part:
    name: str
    filename: str | None
    content_type: str | None
    data: bytes


_PARAM = re.compile(r';\s*([\w*-]+)="((?:[^"\\]|\\.)*)"|;\s*([\w*-]+)=([^;\s]+)')


def _header_params(value: str) -> dict[str, str]:
    """``name="x"; filename="y"`` style parameters of a header value."""
    params: dict[str, str] = {}
    for quoted_key, quoted, bare_key, bare in _PARAM.findall(value):
        if quoted_key:
            params[quoted_key.lower()] = re.sub(r"\\(.)", r"\1", quoted)
        else:
            params[bare_key.lower()] = bare
    return params


def _multipart_parts(content_type: str, body: bytes) -> list[_Part] | None:
    """Split a ``multipart/form-data`` body into parts, bytes untouched; ``None`` if it is not
    one. (The stdlib's ``cgi`` is gone from newer Pythons and ``email`` re-encodes binaries.)"""
    if not content_type.lower().startswith("multipart/form-data"):
        return None
    boundary = _header_params(";" + content_type.split(";", 1)[-1]).get("boundary")
    if not boundary:
        return None
    delimiter = b"--" + boundary.encode("latin-1")
    parts: list[_Part] = []
    for chunk in body.split(delimiter)[1:]:
        if chunk.startswith(b"--"):
            break
        head, _, data = chunk.removeprefix(b"\r\n").partition(b"\r\n\r\n")
        headers = {}
        for line in head.decode("utf-8", "replace").split("\r\n"):
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        disposition = _header_params(";" + headers.get("content-disposition", "").split(";", 1)[-1])
        parts.append(
            _Part(
                name=disposition.get("name", ""),
                filename=disposition.get("filename"),
                content_type=headers.get("content-type"),
                data=data.removesuffix(b"\r\n"),
            )
        )
    return parts


# --------------------------------------------------------------------------
# The Files API
# --------------------------------------------------------------------------


class FilesApi:
    """Files the scripted server holds, the faults it will inject, and what it was asked.

    Thread-safe: handler threads call :meth:`handle` and :meth:`refusal` while the test reads
    the records. Knobs a test may set at any time:

    - ``now``: the clock (a callable returning Unix seconds, default ``time.time``) and
      ``offset`` (seconds added to it) for ``created_at``, ``expires_at`` and expiry checks;
    - ``page_size``: the most files one list page holds, whatever ``limit`` asks (default 100);
    - ``max_files``: with this many live files, uploads get the quota error (default None);
    - ``name_bad_ids``: whether the chat-side ``invalid_file_id`` error names the ids;
    - ``upload_delay``: seconds an upload waits, body read, before it is stored and answered
      (a slow provider, for tests of waiters that leave).
    """

    def __init__(self, now: Callable[[], float] = time.time) -> None:
        self.now: Callable[[], float] = now
        self.offset: float = 0.0
        self.page_size: int = 100
        self.max_files: int | None = None
        self.name_bad_ids: bool = True
        self.upload_delay: float = 0.0
        self._lock = threading.RLock()
        self._files: dict[str, StoredFile] = {}  # every file ever made, gone ones too
        self._gone: set[str] = set()  # deleted or forgotten
        self._deleted: list[str] = []
        self._requests: list[FilesRequest] = []
        self._faults: list[tuple[str, int | None]] = []
        self._sequence = itertools.count(1)

    # -- clock --------------------------------------------------------------

    def clock(self) -> float:
        """The server's idea of now: ``now() + offset``."""
        return self.now() + self.offset

    def advance(self, seconds: float) -> None:
        """Move the clock forward (files expire as their time passes)."""
        with self._lock:
            self.offset += seconds

    # -- test controls -------------------------------------------------------

    def fail_next_upload(self, kind: UploadFaultKind, times: int | None = 1) -> None:
        """Make the next ``times`` upload attempts fail as ``kind`` (``None``: every one).

        ``incomplete``: 200 with a file object lacking ``bytes`` and ``expires_at`` (stored);
        ``wrong_bytes``: 200 whose ``bytes`` is one more than the content (stored);
        ``quota``: 400 ``quota_exceeded``, nothing stored;
        ``error``: 500 ``server_error`` with ``x-should-retry: false``, nothing stored.
        Faults queue up in call order; each is used by the next well-formed upload (one the
        server would otherwise store, or refuse for ``max_files``).
        """
        if kind not in UPLOAD_FAULT_KINDS:
            raise ValueError(
                f"unknown upload fault {kind!r} (known: {', '.join(sorted(UPLOAD_FAULT_KINDS))})"
            )
        if times is not None and times < 1:
            raise ValueError(f"a fault must be used at least once, got times={times}")
        with self._lock:
            self._faults.append((kind, times))

    def clear_faults(self) -> None:
        """Drop every queued upload fault."""
        with self._lock:
            self._faults.clear()

    def expire(self, file_id: str) -> None:
        """Make a file expire now (its ``expires_at`` becomes the current second)."""
        with self._lock:
            stored = self._require(file_id)
            self._files[file_id] = replace(stored, expires_at=math.floor(self.clock()))

    def forget(self, file_id: str) -> None:
        """Delete a file server side, as a provider's cleanup would: no request, not in
        :attr:`deleted`."""
        with self._lock:
            self._require(file_id)
            self._gone.add(file_id)

    def add(
        self,
        content: bytes,
        *,
        filename: str = "file.bin",
        purpose: str = "user_data",
        expires_in: int | None = None,
        content_type: str | None = None,
    ) -> StoredFile:
        """Store a file without a request (one uploaded earlier, by another run)."""
        with self._lock:
            return self._store(filename, purpose, content, content_type, expires_in)

    # -- inspection ----------------------------------------------------------

    @property
    def requests(self) -> list[FilesRequest]:
        """Every Files API request, in arrival order."""
        with self._lock:
            return list(self._requests)

    @property
    def uploads(self) -> list[Upload]:
        """Every upload attempt, refused ones included (their ``file_id`` is ``None``)."""
        with self._lock:
            return [r.upload for r in self._requests if r.upload is not None]

    @property
    def stored(self) -> dict[str, StoredFile]:
        """Live files by id: not deleted, forgotten or expired."""
        with self._lock:
            now = self.clock()
            return {
                i: f for i, f in self._files.items() if i not in self._gone and not f.expired(now)
            }

    @property
    def deleted(self) -> list[str]:
        """Ids the client deleted (``DELETE`` answered 200), in order."""
        with self._lock:
            return list(self._deleted)

    def usable(self, file_id: str) -> bool:
        """Whether a chat request may refer to ``file_id``."""
        return file_id in self.stored

    # -- serving -------------------------------------------------------------

    @staticmethod
    def serves(path: str) -> bool:
        """Whether ``path`` (no query) is a Files API path."""
        return FILES_PATH_PATTERN.match(path) is not None

    def handle(self, method: str, target: str, headers: Mapping[str, str], body: bytes) -> Answer:
        """Answer one Files API request (``target`` is the request line's path and query) and
        record it."""
        received_at = time.monotonic()
        if method == "POST" and self.upload_delay > 0:
            time.sleep(self.upload_delay)  # outside the lock: other requests go on meanwhile
        split = urlsplit(target)
        path = split.path.rstrip("/") or "/"
        query = {k: v[0] for k, v in parse_qs(split.query, keep_blank_values=True).items()}
        lowered = {k.lower(): v for k, v in headers.items()}
        match = FILES_PATH_PATTERN.match(path)
        path_id = match.group("file_id") if match else None
        with self._lock:
            upload: Upload | None = None
            file_id = path_id
            if match is None:
                answer = self._unknown(method, path)
            elif path_id is None and method == "POST":
                answer, upload = self._upload(len(self._requests), lowered, body)
                file_id = upload.file_id if upload else None
            elif path_id is None and method == "GET":
                answer = self._list(query)
            elif method == "GET":
                answer = self._retrieve(path_id)
            elif method == "DELETE":
                answer = self._delete(path_id)
            else:
                answer = self._unknown(method, path)
            self._requests.append(
                FilesRequest(
                    index=len(self._requests),
                    method=method,
                    path=path,
                    query=query,
                    headers=lowered,
                    received_at=received_at,
                    status=answer.status,
                    file_id=file_id,
                    upload=upload,
                )
            )
            return answer

    def refusal(self, body: Any) -> Answer | None:
        """The 400 a completion request gets for referring to files that are not usable,
        or ``None`` when every file it names is live."""
        with self._lock:
            bad = [i for i in referenced_file_ids(body) if not self.usable(i)]
            return invalid_file_answer(bad, self.name_bad_ids) if bad else None

    # -- the endpoints (called under the lock) -------------------------------

    def _require(self, file_id: str) -> StoredFile:
        if file_id not in self._files:
            raise KeyError(f"no file {file_id!r} was ever stored")
        return self._files[file_id]

    def _live(self, file_id: str) -> StoredFile | None:
        return self.stored.get(file_id)

    def _store(
        self,
        filename: str,
        purpose: str,
        content: bytes,
        content_type: str | None,
        expires_in: int | None,
    ) -> StoredFile:
        sequence = next(self._sequence)
        created_at = math.floor(self.clock())
        stored = StoredFile(
            # ids sort in creation order, and differ between servers
            id=f"file-{sequence:06d}{secrets.token_hex(6)}",
            filename=filename,
            purpose=purpose,
            content=content,
            content_type=content_type,
            created_at=created_at,
            expires_at=None if expires_in is None else created_at + expires_in,
            sequence=sequence,
        )
        self._files[stored.id] = stored
        return stored

    def _take_fault(self) -> str | None:
        if not self._faults:
            return None
        kind, times = self._faults[0]
        if times is not None:
            if times == 1:
                self._faults.pop(0)
            else:
                self._faults[0] = (kind, times - 1)
        return kind

    def _upload(
        self, index: int, headers: Mapping[str, str], body: bytes
    ) -> tuple[Answer, Upload | None]:
        parts = _multipart_parts(headers.get("content-type", ""), body)
        if parts is None:
            message = "Expected a multipart/form-data body with 'file' and 'purpose'."
            return _error(400, message, _INVALID, None, None), None
        fields = {p.name: p.data.decode("utf-8", "replace") for p in parts if p.filename is None}
        file_part = next((p for p in parts if p.name == "file" and p.filename is not None), None)
        expires_after = _expires_after(fields)
        purpose = fields.get("purpose")

        def record(answer: Answer, stored: StoredFile | None = None) -> tuple[Answer, Upload]:
            return answer, Upload(
                index=index,
                filename=file_part.filename if file_part else None,
                content_type=file_part.content_type if file_part else None,
                purpose=purpose,
                content=file_part.data if file_part else b"",
                expires_after=expires_after,
                fields=fields,
                status=answer.status,
                file_id=stored.id if stored else None,
            )

        invalid = _upload_problem(purpose, file_part, expires_after)
        if invalid is not None:  # the client's mistake: queued faults wait for a proper upload
            return record(invalid)
        fault = self._take_fault()
        if fault == "error":
            return record(_resolution_failure())
        if fault == "quota" or (self.max_files is not None and len(self.stored) >= self.max_files):
            return record(_quota_answer())
        assert file_part is not None and purpose is not None and file_part.filename is not None
        seconds = expires_after["seconds"] if expires_after else None
        stored = self._store(
            file_part.filename, purpose, file_part.data, file_part.content_type, seconds
        )
        payload = stored.to_object()
        if fault == "incomplete":
            del payload["bytes"], payload["expires_at"]
        elif fault == "wrong_bytes":
            payload["bytes"] += 1
        return record(_ok(payload), stored)

    def _list(self, query: Mapping[str, str]) -> Answer:
        order = query.get("order", "desc")
        if order not in ("asc", "desc"):
            return _error(
                400,
                f"Invalid value for 'order': {order!r}. Expected 'asc' or 'desc'.",
                _INVALID,
                "invalid_value",
                "order",
            )
        limit = self.page_size
        if "limit" in query:
            try:
                asked = int(query["limit"])
            except ValueError:
                asked = 0
            if asked < 1:
                return _error(
                    400,
                    f"Invalid value for 'limit': {query['limit']!r}.",
                    _INVALID,
                    "invalid_value",
                    "limit",
                )
            limit = min(asked, self.page_size)
        files = [
            f
            for f in self.stored.values()
            if "purpose" not in query or f.purpose == query["purpose"]
        ]
        files.sort(key=lambda f: (f.created_at, f.sequence), reverse=order == "desc")
        if query.get("after"):
            cursor = self._files.get(query["after"])
            if cursor is None:
                return _error(
                    400, f"No such File object: {query['after']}", _INVALID, None, "after"
                )
            key = (cursor.created_at, cursor.sequence)
            if order == "asc":
                files = [f for f in files if (f.created_at, f.sequence) > key]
            else:
                files = [f for f in files if (f.created_at, f.sequence) < key]
        page = files[:limit]
        return _ok(
            {
                "object": "list",
                "data": [f.to_object() for f in page],
                "first_id": page[0].id if page else None,
                "last_id": page[-1].id if page else None,
                "has_more": len(files) > len(page),
            }
        )

    def _retrieve(self, file_id: str) -> Answer:
        stored = self._live(file_id)
        return _ok(stored.to_object()) if stored else _no_such_file(file_id)

    def _delete(self, file_id: str) -> Answer:
        if self._live(file_id) is None:
            return _no_such_file(file_id)
        self._gone.add(file_id)
        self._deleted.append(file_id)
        return _ok({"id": file_id, "object": "file", "deleted": True})

    @staticmethod
    def _unknown(method: str, path: str) -> Answer:
        return _error(404, f"Invalid URL ({method} {path})", _INVALID, "unknown_url", None)


def _expires_after(fields: Mapping[str, str]) -> dict[str, Any] | None:
    """The ``expires_after[...]`` form fields by sub-key; ``seconds`` as an int if it is one."""
    found: dict[str, Any] = {}
    for name, value in fields.items():
        if name.startswith("expires_after[") and name.endswith("]"):
            key = name[len("expires_after[") : -1]
            found[key] = int(value) if key == "seconds" and value.strip().isdigit() else value
    return found or None


def _upload_problem(
    purpose: str | None, file_part: _Part | None, expires_after: Mapping[str, Any] | None
) -> Answer | None:
    """The 400 OpenAI gives an upload missing a field or with an expiry it does not accept."""
    if file_part is None:
        return _error(
            400,
            "Missing required parameter: 'file'.",
            _INVALID,
            "missing_required_parameter",
            "file",
        )
    if not purpose:
        return _error(
            400,
            "Missing required parameter: 'purpose'.",
            _INVALID,
            "missing_required_parameter",
            "purpose",
        )
    if expires_after is None:
        return None
    if expires_after.get("anchor") != "created_at":
        return _error(
            400,
            "Invalid 'expires_after.anchor': expected 'created_at'.",
            _INVALID,
            "invalid_value",
            "expires_after.anchor",
        )
    seconds = expires_after.get("seconds")
    if not isinstance(seconds, int) or not _MIN_EXPIRY_SECONDS <= seconds <= _MAX_EXPIRY_SECONDS:
        message = (
            f"Invalid 'expires_after.seconds': {seconds!r}. Expected an integer between "
            f"{_MIN_EXPIRY_SECONDS} and {_MAX_EXPIRY_SECONDS}."
        )
        return _error(400, message, _INVALID, "invalid_value", "expires_after.seconds")
    return None
