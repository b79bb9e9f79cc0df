"""LangGraph's SQLite checkpointer, kept off a damaged sessions.db (and remembering what it read:
``checkpoint_memo``).

The checkpointer writes through a connection of its own, not through ``sqlite_file.connect``: its
``setup`` creates tables, and every step of a turn adds a checkpoint. So it asks the same
questions itself. A file this process has found damaged is never written to again, and a read
or write that fails has the file checked, so that the turn ends with the line that says what
is wrong and how to get going again, not with SQLite's words for it.
"""

# Any: LangGraph's saver API takes untyped channel writes and coroutines

from __future__ import annotations

from collections.abc import Coroutine, Sequence
from pathlib import Path
from typing import Any, TypeVar

import aiosqlite
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
)

from dcode.agent.store.checkpoint_memo import RememberingSaver
from dcode.agent.store.sqlite_file import async_database_errors, known_damage

T = TypeVar("T")


class CheckedSaver(RememberingSaver):
    def __init__(self, conn: aiosqlite.Connection, db_path: Path) -> None:
        super().__init__(conn)
        self.db_path = db_path

    async def setup(self) -> None:
        await self._write(super().setup())

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return await self._write(super().aput(config, checkpoint, metadata, new_versions))

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        await self._write(super().aput_writes(config, writes, task_id, task_path))

    async def adelete_thread(self, thread_id: str) -> None:
        await self._write(super().adelete_thread(thread_id))

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await self._checked(super().aget_tuple(config))

    async def _write(self, step: Coroutine[Any, Any, T]) -> T:
        damage = known_damage(self.db_path)
        if damage is not None:
            step.close()  # never started: nothing reaches the file
            raise damage
        return await self._checked(step)

    async def _checked(self, step: Coroutine[Any, Any, T]) -> T:
        async with async_database_errors(self.db_path):
            return await step
