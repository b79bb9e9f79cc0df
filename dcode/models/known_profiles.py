"""langchain's known OpenAI profiles, read without importing langchain-openai or openai.

``ChatOpenAI(...).profile`` is a copy of one entry of the table langchain-openai ships in a
generated module holding one dict literal (``OPENAI_PROFILES`` in the fence module
``dcode/models/langchain_internals.py`` names it). Building a ``ChatOpenAI`` to read it costs
over a second of imports (langchain-core, openai, pydantic models), which commands such as
``dcode media inspect`` only need for a handful of numbers. This module loads that data file
by its path, so the package's ``__init__`` (and everything it pulls in) never runs, and the
table is loaded once per process.

The one difference from ``ChatOpenAI.profile``: on Chat Completions ChatOpenAI also turns off
``mid_conversation_tools`` (only the Responses API can add tools mid-conversation), a key dcode
does not read; every field ``resolve_profile`` takes is the same.

If a future langchain-openai moves or reshapes the table, the lookup falls back to building the
``ChatOpenAI`` probe: slower, never wrong.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from functools import cache
from pathlib import Path

from dcode.models.langchain_internals import OPENAI_PROFILES

_MODULE, _, _TABLE = OPENAI_PROFILES.partition(":")
_PACKAGE, _, _SUBMODULE = _MODULE.partition(".")


def openai_model_name(model: str) -> str:
    """The name langchain keys its table by: ``openai/gpt-5.1`` (OpenRouter) is ``gpt-5.1``."""
    return model.split("/", 1)[1] if model.startswith("openai/") else model


def known_openai_profile(model: str) -> dict[str, object] | None:
    """langchain's known profile for an OpenAI model name, as ``ChatOpenAI.profile`` gives it."""
    name = openai_model_name(model)
    table = _shipped_table()
    if table is None:
        return _probe(name)
    entry = table.get(name)
    return dict(entry) if entry else None


@cache
def _shipped_table() -> Mapping[str, Mapping[str, object]] | None:
    path = _data_file()
    if path is None:
        return None
    spec = importlib.util.spec_from_file_location("dcode._langchain_openai_profiles", path)
    if spec is None or spec.loader is None:
        return None
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception:  # noqa: BLE001 - a reshaped data file means "use the probe", not a crash
        return None
    table = getattr(module, _TABLE, None)
    return table if isinstance(table, dict) else None


def _data_file() -> Path | None:
    """Where the table is; ``find_spec`` of a top-level name locates it without importing it."""
    try:
        spec = importlib.util.find_spec(_PACKAGE)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    relative = Path(*_SUBMODULE.split(".")).with_suffix(".py")
    for location in spec.submodule_search_locations:
        candidate = Path(location) / relative
        if candidate.is_file():
            return candidate
    return None


def _probe(name: str) -> dict[str, object] | None:
    from langchain_openai import ChatOpenAI
    from pydantic import SecretStr

    probe = ChatOpenAI(model=name, api_key=SecretStr("profile-probe"), max_retries=0)
    return dict(probe.profile) if probe.profile else None
