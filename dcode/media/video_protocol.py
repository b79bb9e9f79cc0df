"""The pipe protocol between dcode and its video decoder process.

Each message is a 4-byte big-endian length, that many bytes of a JSON header, then
``header["size"]`` bytes of payload (a frame's JPEG; absent for other messages). JSON keeps
the headers debuggable and the payload stays raw, so a 300 KB frame costs one copy.

Requests (dcode → decoder) are one JSON object per line on the decoder's stdin: ``sample``
starts a job and ``stop`` ends the running one early. Replies (decoder → dcode):

- ``facts``: the stream's displayed size, rotation, duration and codec, once per job;
- ``frame``: one sampled frame (``target``, ``t``, ``width``, ``height``, ``size`` + JPEG);
- ``end``: the job is over (``reason``: ``window``, ``frames``, ``eof`` or ``stopped``;
  ``next_target`` the first target left unserved at ``eof``; ``damage`` the first read or
  decode error met, if any);
- ``error``: the job failed; ``message`` is the sentence shown to the model.

This module is light (no PyAV, no Pillow): both ends import it.
"""

# Any: a message's header is JSON read from the other process's pipe

from __future__ import annotations

import json
import struct
from dataclasses import dataclass, field
from typing import Any, BinaryIO

_LENGTH = struct.Struct(">I")
MAX_HEADER_BYTES = 64 * 1024
MAX_PAYLOAD_BYTES = 256 * 1024 * 1024


class ProtocolError(Exception):
    """The other end sent something that is not a message (it crashed mid-write, or is not ours)."""


@dataclass(frozen=True, slots=True)
class Message:
    header: dict[str, Any]
    payload: bytes = field(default=b"", repr=False)

    @property
    def kind(self) -> str:
        return str(self.header.get("kind", ""))


def encode_message(header: dict[str, object], payload: bytes = b"") -> bytes:
    body = json.dumps({**header, "size": len(payload)}, separators=(",", ":")).encode()
    return _LENGTH.pack(len(body)) + body + payload


def write_message(stream: BinaryIO, header: dict[str, object], payload: bytes = b"") -> None:
    stream.write(encode_message(header, payload))
    stream.flush()


class MessageBuffer:
    """Reassembles messages from bytes as they arrive (the reading end does its own waiting)."""

    def __init__(self) -> None:
        self._data = bytearray()

    def feed(self, chunk: bytes) -> None:
        self._data += chunk

    def pop(self) -> Message | None:
        """The next complete message, or None until more bytes arrive."""
        if len(self._data) < _LENGTH.size:
            return None
        (length,) = _LENGTH.unpack_from(self._data)
        if length > MAX_HEADER_BYTES:
            raise ProtocolError(f"message header of {length} bytes")
        end = _LENGTH.size + length
        if len(self._data) < end:
            return None
        try:
            header = json.loads(bytes(self._data[_LENGTH.size : end]))
        except ValueError as exc:
            raise ProtocolError(f"unreadable message header: {exc}") from exc
        if not isinstance(header, dict):
            raise ProtocolError("message header is not an object")
        size = header.get("size", 0)
        if not isinstance(size, int) or not 0 <= size <= MAX_PAYLOAD_BYTES:
            raise ProtocolError(f"bad payload size {size!r}")
        if len(self._data) < end + size:
            return None
        payload = bytes(self._data[end : end + size])
        del self._data[: end + size]
        return Message(header, payload)


def request_line(request: dict[str, object]) -> bytes:
    return json.dumps(request, separators=(",", ":")).encode() + b"\n"
