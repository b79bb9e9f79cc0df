"""The record a fence module lists a framework's private name in.

dcode leans on a few names that Textual, langchain-openai and LangGraph's in-memory server
runtime do not promise to keep: private modules, private attributes, private methods it
overrides, and behaviour no document states. Each framework has one fence module that is the
only place dcode touches them (``dcode/tui/textual_internals.py``,
``dcode/models/langchain_internals.py``, ``dcode/server/runtime_internals.py``). Each fence lists
every such name as a :class:`PrivateUse`, and ``tests/test_framework_internals.py`` checks
each one against the installed version, so that an upgrade which moves one fails there, naming
the dependency, the name and the dcode files that rely on it, instead of somewhere deep in a
rendered frame or a streamed answer.

Plain data: importing this imports no framework.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypedDict


class Shape(TypedDict, total=False):
    """What a ``PrivateUse`` says of its name beyond where it is: its optional fields, for the
    helpers that build several uses of one place."""

    bases: tuple[str, ...]
    parameters: tuple[str, ...] | None
    instance: bool
    value_type: str | None
    behaviour: str


@dataclass(frozen=True, slots=True)
class PrivateUse:
    """One private name (or undocumented behaviour) of a framework that dcode relies on.

    ``target`` is ``"module:Qualified.name"``. What the contract test checks follows from the
    other fields: ``bases`` for a class (the classes dcode assumes it derives from),
    ``parameters`` for a function or method (its parameters, in order, as dcode calls or
    overrides it), ``instance`` for an attribute that instances carry rather than the class,
    and ``value_type`` for what that attribute holds. Otherwise the name must exist.
    ``behaviour`` says what dcode relies on beyond the name; ``tests`` are the tests that would
    fail if that behaviour changed, each as ``path::test_name`` (the path from the repository
    root).
    """

    distribution: str
    target: str
    users: tuple[str, ...]
    tests: tuple[str, ...]
    bases: tuple[str, ...] = ()
    parameters: tuple[str, ...] | None = None
    instance: bool = False
    value_type: str | None = None
    behaviour: str = ""

    @property
    def module(self) -> str:
        return self.target.partition(":")[0]

    @property
    def qualname(self) -> str:
        return self.target.partition(":")[2]

    @property
    def owner(self) -> str:
        """The qualified name of the class that holds the attribute ("" for a module's own)."""
        return self.qualname.rpartition(".")[0]

    @property
    def attribute(self) -> str:
        return self.qualname.rpartition(".")[2]
