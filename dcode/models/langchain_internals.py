"""Every private name of langchain, langchain-core, langchain-openai and LangGraph that dcode
uses, and the only module that may import one.

dcode builds on their public API: ``create_agent`` and ``AgentMiddleware``, ``ChatOpenAI``,
messages, the checkpointer. Where that does not reach, a private name is imported here and
re-exported under a name of dcode's own, or, when dcode overrides a private method (which
cannot move out of the subclass), it is listed here with the file that overrides it.
``PRIVATE_USES`` lists every one with the tests that exercise it;
``tests/test_framework_internals.py`` checks each against the installed versions and fails
on any private import outside this module. pyproject.toml keeps each dependency listed here
below its next major version.

Plain data: importing this imports none of those packages.
"""

from __future__ import annotations

from dcode.framework_internals import PrivateUse

CHAT_MODEL = "dcode/models/chat_model.py"
OPENAI_BASE = "langchain_openai.chat_models.base"

PRIVATE_USES: tuple[PrivateUse, ...] = (
    # ``DcodeChatOpenAI`` overrides the hook that turns one streamed Chat Completions chunk
    # into a message chunk, to keep the ``reasoning_content`` (or ``reasoning``) that
    # DeepSeek, vLLM and others stream: ChatOpenAI drops it, and no public hook sees the raw
    # chunk. ChatOpenAI must still be the class that defines the hook, and call it with
    # these arguments.
    PrivateUse(
        "langchain-openai",
        f"{OPENAI_BASE}:BaseChatOpenAI._convert_chunk_to_generation_chunk",
        (CHAT_MODEL,),
        (
            "tests/test_agent_e2e.py::test_reasoning_reaches_the_event_stream",
            "tests/test_framework_internals.py::test_kept_reasoning_is_never_sent_back",
        ),
        parameters=("self", "chunk", "default_chunk_class", "base_generation_info"),
        behaviour=(
            "called once per streamed Chat Completions chunk, with the chunk as a dict; the "
            "additional_kwargs it sets are never sent back in a request"
        ),
    ),
    PrivateUse(
        "langchain-openai",
        "langchain_openai:ChatOpenAI",
        (CHAT_MODEL,),
        ("tests/test_agent_e2e.py::test_reasoning_reaches_the_event_stream",),
        bases=(f"{OPENAI_BASE}:BaseChatOpenAI",),
    ),
)
