"""The status bar counts the streamed answer with the session's token counter."""

from __future__ import annotations

from pathlib import Path

from dcode.context.tokens.encodings import encoding
from tests.support.model_server import ScriptedModelServer, reply
from tests.test_tokens_lazy import not_loaded  # noqa: F401 - a fixture
from tests.test_tui_app_support import running_app

ANSWER = "上下文窗口的大小决定了模型一次能读取多少内容，压缩应当在请求溢出之前发生。"


async def test_streamed_tokens_are_counted_with_the_models_encoding(server: ScriptedModelServer, workspace: Path, dcode_home: Path) -> None:
    encoding()  # loaded, as it is in a worker soon after the engine opens
    async with running_app(server, workspace, dcode_home, reply(ANSWER)) as h:
        await h.send("hi")
        await h.idle()
        assert h.app.status.streamed_tokens == len(encoding().encode_ordinary(ANSWER))  # 4 chars a token would say 10


async def test_the_share_of_the_input_read_from_the_cache_is_shown(server: ScriptedModelServer, workspace: Path, dcode_home: Path) -> None:
    async with running_app(server, workspace, dcode_home, reply("first", usage=(4_000, 5)), reply("second", usage=(4_000, 5), cached_tokens=3_000)) as h:
        await h.send("one")
        await h.idle()
        assert "cached" not in h.text()  # nothing read from the cache: nothing said
        await h.send("two")
        await h.idle()
        assert "Context" in h.text() and " · 75% cached" in h.text()


async def test_the_tui_loads_the_encoding_at_its_first_prompt_not_at_start(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path, not_loaded: list[str]
) -> None:
    async with running_app(server, workspace, dcode_home, reply(ANSWER)) as h:
        await h.pilot.pause(0.3)
        assert not_loaded == []  # idle, it holds no encoding
        await h.send("hi")
        await h.idle()
        await h.until(lambda: not_loaded == ["o200k_base"], what="the encoding, loaded once")
