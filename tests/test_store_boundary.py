"""Only the store knows how sessions are kept: no module outside ``dcode.agent.store`` imports a
database driver or LangGraph's SQLite saver, and the SQLite store itself never queries the
checkpointer's tables (threads go through the saver's API, ``store/threads.py``)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import dcode

ROOT = Path(dcode.__file__).parent
STORE = ROOT / "agent" / "store"
DRIVERS = ("sqlite3", "aiosqlite", "langgraph.checkpoint.sqlite", "psycopg", "psycopg_pool")


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_no_module_outside_the_store_reaches_a_database() -> None:
    found = {
        str(path.relative_to(ROOT)): sorted(
            name for name in _imports(path) if name.startswith(DRIVERS)
        )
        for path in ROOT.rglob("*.py")
        if STORE not in path.parents
    }
    assert {path: names for path, names in found.items() if names} == {}


def test_the_stores_leave_the_checkpointers_tables_to_it() -> None:
    """SQLite's ``checkpoints`` and ``writes``; Postgres's ``checkpoints``, ``checkpoint_blobs``,
    ``checkpoint_writes`` and ``checkpoint_migrations``."""
    tables = r"(checkpoints|writes|checkpoint_blobs|checkpoint_writes|checkpoint_migrations)"
    for path in STORE.glob("*.py"):
        sql = path.read_text()
        touching = re.findall(rf"(?:FROM|INTO|UPDATE|TABLE)\s+{tables}\b", sql, re.I)
        assert not touching, f"{path.name} queries the checkpointer's tables: {touching}"
