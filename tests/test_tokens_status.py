"""The status bar counts the streamed answer with the session's token counter."""

from __future__ import annotations

import threading
from pathlib import Path

from dcode.context.tokens.encodings import O200K, encoding
from dcode.tui.screens.context import ContextScreen
from tests.support.model_server import ScriptedModelServer, reply
from tests.test_tokens_lazy import Asked, not_loaded  # noqa: F401 - a fixture
from tests.test_tui_app_support import running_app

ANSWER = "上下文窗口的大小决定了模型一次能读取多少内容，压缩应当在请求溢出之前发生。"  # noqa: RUF001 - Chinese punctuation


async def test_streamed_tokens_are_counted_with_the_models_encoding(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    encoding()  # loaded, as it is in a worker soon after the engine opens
    async with running_app(server, workspace, dcode_home, reply(ANSWER)) as h:
        await h.send("hi")
        await h.idle()
        assert h.app.status.streamed_tokens == len(
            encoding().encode_ordinary(ANSWER)
        )  # 4 chars a token would say 10


async def test_the_share_of_the_input_read_from_the_cache_is_shown(
    server: ScriptedModelServer, workspace: Path, dcode_home: Path
) -> None:
    async with running_app(
        server,
        workspace,
        dcode_home,
        reply("first", usage=(4_000, 5)),
        reply("second", usage=(4_000, 5), cached_tokens=3_000),
    ) as h:
        await h.send("one")
        await h.idle()
        assert "cached" not in h.text()  # nothing read from the cache: nothing said
        await h.send("two")
        await h.idle()
        assert "Context" in h.text() and " · 75% cached" in h.text()


async def test_the_tui_answers_without_the_encoding_and_context_loads_it_off_the_loop(
    server: ScriptedModelServer,
    workspace: Path,
    dcode_home: Path,
    not_loaded: Asked,  # noqa: F811 - the fixture
) -> None:
    """Short turns are known to be far below the triggers from their lengths: the ~50 MB
    encoding waits until a figure needs it, and /context builds it in a worker thread."""
    async with running_app(server, workspace, dcode_home, reply(ANSWER), reply(ANSWER)) as h:
        await h.send("hi")
        await h.idle()
        await h.send("and again")
        await h.idle()
        assert h.app.status.context_tokens > 0  # the status bar's figure is the provider's
        assert not_loaded == []
        await h.send("/context")
        await h.until(lambda: isinstance(h.app.screen, ContextScreen), what="the context screen")
        assert not_loaded == [O200K] and not_loaded.threads[0] is not threading.main_thread()
