"""The package's artifacts: normalised trace calls, mined edges, environments, chains and tasks."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TraceCall(_Model):
    """One executed call (f_t, x_t, o_t) of a trajectory, whatever format it came from."""

    mcp: str = Field(default="", description="Server the tool belongs to; '' when unknown.")
    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    result: Any = Field(default=None, description="What the call returned (parsed JSON if it was).")
    error: str | None = Field(default=None, description="Error text when the call failed.")
    error_kind: str | None = Field(
        default=None, description="weft-core ErrorKind value, when the source records one."
    )
    mutated: bool | None = Field(
        default=None, description="Whether the call changed state; None when the source lacks it."
    )

    @property
    def ok(self) -> bool:
        return self.error is None


class TraceRecord(_Model):
    """One trajectory: calls in execution order, and the user text they started from."""

    id: str
    source: str = Field(description="'ledger', 'weft-trace' or 'openai'.")
    prompt: str = Field(default="", description="User-visible text (for the traceability filter).")
    calls: list[TraceCall] = Field(default_factory=list)


class EdgeKind(StrEnum):
    DATA = "data"
    STATE = "state"
    RETRY = "retry"


class DataLink(_Model):
    """An argument of the later call whose value came from a leaf of the earlier output."""

    argument: str = Field(description="Dotted path of the argument (e.g. 'names.0').")
    output: str = Field(description="Dotted path of the output leaf the value was taken from.")
    json_type: str
    value: Any = Field(default=None, description="The value carried (one witnessed instance).")


class Binding(_Model):
    """Where a value of one recorded instance of an edge came from, so a walk can put the value
    the actual call produced (data) or touched (state: the same object) in its place."""

    argument: str = Field(description="Dotted path of the argument of v_j.")
    source: str = Field(
        description="Dotted path in o_i (data) or, prefixed 'args:', in x_i (state)."
    )
    value: Any = Field(description="The value in the recorded instance.")
    whole: bool = Field(description="The argument is the value (else the value is a token in it).")
    context: str | None = Field(
        default=None,
        description="State token bindings: the recorded x_i string the token was found in.",
    )


class EdgeExample(_Model):
    """Arguments of v_j in one recorded transition v_i -> v_j, with what they took from v_i."""

    arguments: dict[str, Any]
    bindings: list[Binding] = Field(default_factory=list)


class EdgeRecord(_Model):
    source: str = Field(description="Node key of v_i.")
    target: str = Field(description="Node key of v_j.")
    kind: EdgeKind
    count: int = Field(description="N_ij: transitions v_i -> v_j witnessing this relation.")
    weight: float = Field(description="w(v_i, v_j) = N_ij / N_i.")
    links: list[DataLink] = Field(default_factory=list, description="Data edges: value routes.")
    examples: list[EdgeExample] = Field(
        default_factory=list, description="Recorded instances with their bindings, for walks."
    )


class NodeRecord(_Model):
    key: str
    mcp: str
    tool: str
    argument_names: list[str]
    count: int = Field(description="N_i: occurrences in the corpus.")
    mutations: int = Field(default=0, description="How many of those calls changed state.")
    errors: int = 0
    starts: int = Field(default=0, description="Traces that begin with it (callable at s_0).")
    examples: list[dict[str, Any]] = Field(
        default_factory=list, description="Argument values of successful calls, for walks."
    )


class EnvironmentKind(StrEnum):
    OPERATION = "operation"
    STATE_QUERY = "state_query"
    STATELESS = "stateless"


class Environment(_Model):
    """One cluster c_k of the tool graph and how its state is materialised."""

    id: str
    kind: EnvironmentKind
    mcps: list[str]
    nodes: list[str]
    materialisation: str = Field(description="How s_0 is obtained for this environment, in words.")


class ChainStep(_Model):
    node: str
    mcp: str
    tool: str
    arguments: dict[str, Any]
    result: Any = None
    environment: str
    via: EdgeKind | None = Field(default=None, description="Edge kind that led here (None: start).")
    mutated: bool = False
    failed: bool = Field(
        default=False, description="The call errored and a retry edge recovers from it."
    )


class Chain(_Model):
    """A retained walk omega = (v_1..v_L) with the snapshots it passed through."""

    id: str
    steps: list[ChainStep]
    rollbacks: int = 0
    s0: dict[str, str] = Field(default_factory=dict, description="mcp -> snapshot id of s_0.")
    ended: str = Field(
        default="",
        description="Why the walk ended: no new work, no neighbour, max length ('' when given).",
    )

    @property
    def environments(self) -> list[str]:
        return sorted({s.environment for s in self.steps})
