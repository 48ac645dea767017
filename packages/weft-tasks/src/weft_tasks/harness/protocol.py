"""The harness contract: how any agent loop plugs into Weft rollouts (paper §3.1.3, "harness
scaling").

A harness is given three things and nothing else:

1. a `HarnessTask` — the task graph, the view (agentic brief or SimUser), and the first user
   message of the episode;
2. the session group's MCP endpoints — one `MCPEndpoint` (streamable-HTTP URL + bearer token) per
   MCP, served by MegaMCP; a harness reaches tools ONLY through these, so every call is recorded in
   the ledger and verified server-side;
3. a `TurnCallback` — called each time the agent stops to talk (a reply without tool calls) with
   the transcript so far in OpenAI chat format; it returns the next user message (SimUser mode) or
   None when the episode is over (always None in agentic mode after the first turn). In SimUser
   mode that message is the simulated user's answer when the reply asked the user something (the
   atomic-task turn goes on, unverified), else the next turn's request. A harness treats both the
   same: one more user message.

The harness owns its prompts, memory, planning loop, tool-call protocol and error recovery, and
reports the full transcript (OpenAI format) in a `HarnessRun`. An external harness (OpenClaw,
Hermes, any agent CLI) plugs in either as a Python class satisfying `Harness`, or as a process
through `SubprocessHarness`, which speaks a line-delimited JSON protocol and hands the process the
endpoints in `WEFT_MCP_ENDPOINTS`.

Transport failures (MegaMCP unreachable, a worker crash) must propagate as exceptions — the rollout
runner retries them as infrastructure failures; tool errors are the policy's and belong in the
transcript.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from weft_core.models import ChatMessage, ModelCall, TaskGraph, TaskView, ViewMode


class MCPEndpoint(BaseModel):
    """Where one MCP of the session group is served, and the session's bearer token."""

    model_config = ConfigDict(frozen=True)

    mcp: str = Field(description="MCP identifier as registered in MegaMCP.")
    url: str = Field(description="Streamable-HTTP URL of the session's MCP endpoint.")
    token: str = Field(description="Bearer token that binds calls to this session.", repr=False)


class HarnessTask(BaseModel):
    """What a harness is asked to do: one task in one view."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    graph: TaskGraph
    view: TaskView
    first_request: str = Field(description="The episode's first user message.")
    rollout_id: str = ""

    @property
    def mode(self) -> ViewMode:
        return self.view.mode


class HarnessRun(BaseModel):
    """What a harness reports: the transcript and the tools it offered the model."""

    messages: list[ChatMessage]
    tools: list[dict[str, Any]] = Field(
        default_factory=list, description="OpenAI tool definitions."
    )
    model: str = "programmatic"
    reference: bool = Field(
        default=False, description="The policy read the task's reference calls (answer key)."
    )
    model_calls: list[ModelCall] = Field(
        default_factory=list, description="Token-exact record of each model call, when served so."
    )
    turns: int = 0
    stopped: str | None = Field(
        default=None,
        description="Why the harness ended early (a step or time limit): the policy's outcome.",
    )


TurnCallback = Callable[[list[ChatMessage]], Awaitable[str | None]]
"""`await on_turn(transcript)` -> next user message (an answer or the next request), or None to
end the episode."""


@runtime_checkable
class Harness(Protocol):
    """Drives a model (or a scripted policy) through one task view over MegaMCP endpoints.

    Contract: `run` sends `task.first_request` as the first user message, lets the agent call
    tools only through `endpoints`, calls `on_turn(transcript)` each time the agent ends a turn
    (a final reply without tool calls), continues with the returned message or stops on None, and
    returns the whole transcript in OpenAI chat format. `modes` lists the views it supports.
    """

    name: str
    modes: frozenset[ViewMode]

    @property
    def model_name(self) -> str: ...

    async def run(
        self,
        task: HarnessTask,
        endpoints: dict[str, MCPEndpoint],
        on_turn: TurnCallback,
    ) -> HarnessRun: ...
