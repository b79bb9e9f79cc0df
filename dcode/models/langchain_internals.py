"""Every private name of langchain, langchain-core, langchain-openai and LangGraph that dcode
uses, and the only module that may import one; also the OpenAI client's undocumented behaviour
that the model's time limits rely on.

dcode builds on their public API: ``create_agent`` and ``AgentMiddleware``, ``ChatOpenAI``,
messages, the checkpointer. Where that does not reach, a private name is imported here and
re-exported under a name of dcode's own, or, when dcode overrides a private method (which
cannot move out of the subclass), it is listed here with the file that overrides it.
``PRIVATE_USES`` lists every one with the tests that exercise it;
``tests/test_framework_internals.py`` checks each against the installed versions and fails
on any private import outside this module. pyproject.toml keeps each dependency listed here
below its next major version.

Plain data, and the helpers that touch a private name: importing this imports none of those
packages (a helper imports what it needs when it is called).
"""

from __future__ import annotations

from dcode.framework_internals import PrivateUse

CHAT_MODEL = "dcode/models/chat_model.py"
CHUNK_MERGE = "dcode/models/chunk_merge.py"
TRANSPORT = "dcode/models/transport.py"
KNOWN_PROFILES = "dcode/models/known_profiles.py"
OPENAI_BASE = "langchain_openai.chat_models.base"
MERGE_TESTS = (
    "tests/test_model_chunk_merge.py::test_a_stream_is_merged_through_its_first_chunk",
    "tests/test_model_chunk_merge.py::test_the_agent_graph_merges_through_the_first_chunk",
    "tests/test_model_chunk_merge.py::test_grouped_merge_equals_langchains_merge",
    "tests/test_model_chunk_merge.py::test_each_argument_byte_is_copied_a_bounded_number_of_times",
)

# langchain-openai's table of known model profiles, which ``ChatOpenAI.profile`` copies an entry
# of. ``dcode/models/known_profiles.py`` loads this module from its file, without the package's
# ``__init__`` (which imports ChatOpenAI, langchain-core and openai), to read the table.
OPENAI_PROFILES = "langchain_openai.data._profiles:_PROFILES"
HISTORY_CHANNEL = "dcode/agent/history_channel.py"
HISTORY_TESTS = (
    "tests/test_history_channel.py::test_a_saved_thread_is_rebuilt_across_a_snapshot",
    "tests/test_history_channel.py::test_the_fold_merges_as_add_messages_does",
)

PRIVATE_USES: tuple[PrivateUse, ...] = (
    # The thread's messages are a LangGraph DeltaChannel (dcode/agent/history_channel.py).
    # A checkpoint that snapshots it stores its value wrapped in this NamedTuple, which
    # ``DeltaChannel.from_checkpoint`` unwraps; a store reads a checkpoint without
    # the channel class (whose import pulls in LangGraph's runtime), so it unwraps it here.
    PrivateUse(
        "langgraph-checkpoint",
        "langgraph.checkpoint.serde.types:_DeltaSnapshot",
        (HISTORY_CHANNEL,),
        HISTORY_TESTS,
        bases=("builtins:tuple",),
        behaviour="a NamedTuple whose one field, value, is the channel's whole value at a snapshot",
    ),
    PrivateUse(
        "langchain-openai",
        OPENAI_PROFILES,
        (KNOWN_PROFILES,),
        (
            "tests/test_models_known_profiles.py::test_the_light_profile_is_the_one_chat_openai_reports",
            "tests/test_models_known_profiles.py::test_the_table_loads_from_its_file_alone",
        ),
        behaviour=(
            "a module that imports only typing and holds one dict of profile dicts keyed by model "
            "name; ChatOpenAI.profile is a copy of its entry for the model"
        ),
    ),
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
    # ``DcodeChatOpenAI`` overrides the method that builds the keyword arguments of the OpenAI
    # client's ``create`` (both wires), to move the conversation into ``extra_body``
    # (dcode/models/history_payload.py): the client's parameter transform walked every message
    # of every request. It must still be called with the messages, return a dict of create()'s
    # keyword arguments holding ``messages`` (Chat Completions) or ``input`` (Responses), and
    # the dict must be what is passed to create(). On Chat Completions it is called with only
    # the messages not converted before (dcode/models/message_dicts.py), so each message's
    # dict must depend on that message alone, one dict a message, in order.
    PrivateUse(
        "langchain-openai",
        f"{OPENAI_BASE}:BaseChatOpenAI._get_request_payload",
        (CHAT_MODEL, "dcode/models/message_dicts.py"),
        (
            "tests/test_model_history_payload.py::test_the_wire_body_is_the_conversation_sent_as_it_is",
            "tests/test_model_history_payload.py::test_the_sdk_does_not_walk_the_conversation",
            "tests/test_model_message_dicts.py::test_each_call_sends_what_chat_openai_sends",
            "tests/test_model_message_dicts.py::test_only_new_or_changed_messages_are_converted",
        ),
        parameters=("self", "input_", "stop"),
        behaviour=(
            "returns the keyword arguments for the OpenAI client's create(): the converted "
            "conversation under 'messages' (Chat Completions: one dict a message, in order, "
            "each from its message alone) or 'input' (Responses API)"
        ),
    ),
    # ``DcodeChatOpenAI`` wraps the stream of every call, on both wires: its first chunk becomes
    # the ``BalancedMergeChunk`` that heads the final merge, and an event that is not JSON
    # (which the OpenAI SDK lets out as a bare ``JSONDecodeError``) becomes ``InvalidModelData``.
    PrivateUse(
        "langchain-openai",
        f"{OPENAI_BASE}:ChatOpenAI._astream",
        (CHAT_MODEL,),
        (*MERGE_TESTS, "tests/test_model_limits.py::test_malformed_chunk_is_invalid_data"),
        parameters=("self",),
        behaviour=(
            "the async stream of every call on either wire, one ChatGenerationChunk per event; "
            "a streamed event that is not JSON comes out of it as json.JSONDecodeError"
        ),
    ),
    # langchain-core merges a streamed call's chunks into its message as ``first + list(rest)``,
    # ``first`` being the first chunk ``_astream`` yielded; ``BalancedMergeChunk.__add__`` groups
    # that merge, which is only the same message because the merge is associative.
    PrivateUse(
        "langchain-core",
        "langchain_core.language_models.chat_models:generate_from_stream",
        (CHUNK_MERGE,),
        MERGE_TESTS,
        parameters=("stream",),
        behaviour=(
            "merges as first += list(rest), also under LangGraph's messages stream; "
            "add_ai_message_chunks is associative"
        ),
    ),
    # The retry budget is a deadline around ``request``, which must hold the client's whole retry
    # loop (tries and back-off) and, for a streamed call, return once the answer's headers came.
    PrivateUse(
        "openai",
        "openai:AsyncOpenAI.request",
        (TRANSPORT,),
        (
            "tests/test_model_limits.py::test_retry_budget_caps_the_tries",
            "tests/test_model_limits.py::test_retries_succeed_within_the_budget",
            "tests/test_model_limits.py::test_stall_mid_answer_is_named",
        ),
        parameters=("self", "cast_to", "options", "stream", "stream_cls"),
        behaviour="holds the retry loop; a streamed call returns once its headers have come",
    ),
    # Whether a failed try is tried again: ``BudgetedAsyncOpenAI`` adds its rules to the
    # client's (a gateway's answer that it retried upstream, a Retry-After past the budget).
    PrivateUse(
        "openai",
        "openai:AsyncOpenAI._should_retry",
        (TRANSPORT,),
        (
            "tests/test_model_retries.py::test_a_gateway_that_retried_upstream_is_not_retried",
            "tests/test_model_retries.py::test_x_should_retry_false_is_final",
            "tests/test_model_retries.py::test_a_retry_after_past_the_budget_is_not_waited_for",
        ),
        parameters=("self", "response"),
        behaviour="asked once per failed HTTP answer whether to try again; False ends the retry loop with that answer's error",
    ),
    PrivateUse(
        "langchain-openai",
        "langchain_openai:ChatOpenAI",
        (CHAT_MODEL,),
        ("tests/test_agent_e2e.py::test_reasoning_reaches_the_event_stream",),
        bases=(f"{OPENAI_BASE}:BaseChatOpenAI",),
    ),
)


def delta_snapshot_value(value: object) -> object:
    """The channel value a LangGraph ``DeltaChannel`` snapshot holds; any other value as it is."""
    from langgraph.checkpoint.serde.types import _DeltaSnapshot

    return value.value if isinstance(value, _DeltaSnapshot) else value
