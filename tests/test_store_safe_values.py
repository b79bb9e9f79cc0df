"""A checkpoint written by someone else (a shared store, a copied sessions.db) cannot run code
when dcode reads it: a value naming a class stays plain data."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

from langgraph.checkpoint.base import Checkpoint, empty_checkpoint
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.sqlite import SqliteSaver

from dcode.agent.store.base import SessionStore
from dcode.agent.store.sqlite import SqliteStore
from tests.support.hostile_values import Trap

CONFIG = {"configurable": {"thread_id": "s", "checkpoint_ns": ""}}


def trapped_checkpoint(marker: Path) -> Checkpoint:
    """A checkpoint whose channel ``x`` holds a value naming ``Trap``."""
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"x": Trap(str(marker))}
    checkpoint["channel_versions"] = {"x": 1}
    return checkpoint


async def assert_the_graph_reads_plain_data(store: SessionStore, marker: Path) -> None:
    """The graph's checkpointer reads the trapped value back as the data it was stored as."""
    saver = await store.open_checkpointer()
    try:
        saved = await saver.aget_tuple(CONFIG)
    finally:
        await store.aclose()
    assert saved is not None
    assert saved.checkpoint["channel_values"]["x"] == {"marker": str(marker)}
    assert not marker.exists()


def trapped_database(db: Path, marker: Path) -> None:
    """A sessions.db whose thread ``s`` holds a value naming ``Trap``, written by LangGraph's
    own saver with its default serializer, as another program could."""
    checkpoint = trapped_checkpoint(marker)
    with closing(sqlite3.connect(db, check_same_thread=False)) as conn:
        saver = SqliteSaver(conn)
        saver.setup()
        saver.put(CONFIG, checkpoint, {"source": "input", "step": 0}, {"x": 1})
    marker.unlink()  # made when the value was built, above


def test_the_payload_is_live(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    kind, payload = JsonPlusSerializer().dumps_typed(Trap(str(marker)))
    marker.unlink()
    JsonPlusSerializer().loads_typed((kind, payload))  # the default serializer calls it
    assert marker.exists()


def test_reading_a_thread_never_calls_a_class_it_names(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    trapped_database(tmp_path / "sessions.db", marker)
    store = SqliteStore(tmp_path / "sessions.db", tmp_path, read_only=True)
    store.read_thread("s")
    store.latest_checkpoint_id("s")
    assert not marker.exists()


async def test_the_graphs_checkpointer_never_calls_a_class_it_names(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    trapped_database(tmp_path / "sessions.db", marker)
    await assert_the_graph_reads_plain_data(SqliteStore(tmp_path / "sessions.db", tmp_path), marker)


def trapped_server(url: str, marker: Path) -> None:
    """The same checkpoint, written to a shared Postgres by LangGraph's own saver with its
    default serializer, as anyone with access to the server could."""
    import psycopg
    from langgraph.checkpoint.postgres import PostgresSaver
    from psycopg.rows import dict_row

    checkpoint = trapped_checkpoint(marker)
    with psycopg.connect(url, autocommit=True, row_factory=dict_row) as conn:
        saver = PostgresSaver(conn)
        saver.setup()
        saver.put(CONFIG, checkpoint, {"source": "input", "step": 0}, {"x": 1})
    marker.unlink()


async def test_a_shared_servers_checkpoint_never_calls_a_class_it_names(
    postgres_url: str, tmp_path: Path
) -> None:
    from dcode.agent.store.postgres import PostgresStore

    marker = tmp_path / "ran"
    trapped_server(postgres_url, marker)
    store = PostgresStore(postgres_url, tmp_path)
    store.read_thread("s")
    store.latest_checkpoint_id("s")
    assert not marker.exists()
    await assert_the_graph_reads_plain_data(store, marker)
