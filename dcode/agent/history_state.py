"""The agent's state schema, with the thread's messages in a ``DeltaChannel`` (``history_channel``).

``create_agent``'s ``state_schema`` wins over ``AgentState``'s ``add_messages`` channel. Built
when the graph is, with the snapshot cadence of that moment. No ``from __future__ import
annotations`` here: the schema's annotations must be objects, which langchain reads with
``get_type_hints`` in this module's namespace.
"""

from typing import Annotated, Required

from langchain.agents.middleware import AgentState
from langchain_core.messages import AnyMessage
from langgraph.channels import DeltaChannel

from dcode.agent import history_channel


def history_state() -> type:
    class HistoryState(AgentState[object]):
        messages: Required[
            Annotated[
                list[AnyMessage],
                DeltaChannel(
                    history_channel.fold_messages,
                    list,
                    snapshot_frequency=history_channel.SNAPSHOT_EVERY,
                ),
            ]
        ]

    return HistoryState
