"""AtomicTask and TaskGraph (paper §3.1.2, App. A)."""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal, Self

from pydantic import ConfigDict, Field, ValidationInfo, field_validator, model_validator

from weft_core.models._base import Artifact, WeftModel
from weft_core.models.check import Check, EvaluationResult
from weft_core.models.verifier import FINAL_CHECKPOINT, Verifier
from weft_core.refs import check_ref


class TaskInput(WeftModel):
    """An input an intent needs. `source` says whether the user gives it or the agent must find it."""

    # `schema` would shadow BaseModel.schema; the JSON key stays "schema" in both directions.
    model_config = ConfigDict(extra="forbid", populate_by_name=True, serialize_by_alias=True)

    name: str
    description: str = ""
    schema_: dict[str, Any] = Field(default_factory=dict, alias="schema")
    source: Literal["given", "retrieved", "upstream"] = "given"
    value: Any = None
    from_node: str | None = Field(default=None, description="Upstream node for 'upstream' inputs.")
    from_output: str | None = Field(default=None, description="Output name on the upstream node.")


class ReferenceCall(WeftModel):
    """One call of the reference solution. String arguments may hold `{{input}}` templates;
    `bind` names outputs taken from the result by dotted path (e.g. {"order_id": "id"})."""

    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    bind: dict[str, str] = Field(default_factory=dict)


class ValidationEvidence(WeftModel):
    """Proof that a task passed E2E validation: the run's outcome and the state it started from."""

    passed: bool
    evaluation: EvaluationResult | None = None
    initial_state_hash: str | None = None
    ledger_size: int = 0
    error: str | None = None


class AtomicTask(Artifact):
    """One intent on one MCP: the smallest independently executable and verifiable unit."""

    id: str
    mcp: str = Field(description="MCP identifier.")
    intent: str = Field(description="What the user wants, in words.")
    inputs: list[TaskInput] = Field(default_factory=list)
    tool_chain: list[str] = Field(description="Ordered tools the reference solution calls.")
    reference_calls: list[ReferenceCall] = Field(default_factory=list)
    checks: list[Check] = Field(default_factory=list, description="Completion conditions.")
    outputs: dict[str, str] = Field(
        default_factory=dict, description="Named outcomes a downstream task may use -> description."
    )
    entities: list[str] = Field(default_factory=list, description="Business entities touched.")
    writes: bool = Field(default=False, description="Whether the task changes state.")
    seed_rows: dict[str, list[dict[str, Any]]] = Field(
        default_factory=dict, description="Rows the task's independent initial state needs."
    )
    e2e_test: str | None = Field(default=None, description="Source of the task's E2E test.")
    evidence: ValidationEvidence | None = None

    @model_validator(mode="after")
    def _chain_matches_calls(self) -> Self:
        if self.reference_calls and [c.tool for c in self.reference_calls] != self.tool_chain:
            raise ValueError(f"task {self.id!r}: tool_chain does not match reference_calls")
        return self


class EdgeKind(StrEnum):
    INFORMATION = "information"
    STATE = "state"


class TaskNode(WeftModel):
    id: str
    task: AtomicTask
    intent: str
    inputs: list[TaskInput] = Field(default_factory=list)
    outcomes: dict[str, str] = Field(default_factory=dict)
    checks: list[Check] = Field(default_factory=list, description="Checkpoint after this node.")


class TaskEdge(WeftModel):
    source: str
    target: str
    kind: EdgeKind
    fields: list[str] = Field(default_factory=list, description="Outputs carried along the edge.")


class EntityBinding(WeftModel):
    """One business object aligned across MCPs, e.g. a customer in the CRM and in the helpdesk."""

    name: str
    entity: str
    value: dict[str, Any] = Field(default_factory=dict, description="Field values of the object.")
    refs: dict[str, str] = Field(
        default_factory=dict, description="MCP -> table where the object lives."
    )


class SnapshotRef(WeftModel):
    """An immutable initial DB (and workspace) for one MCP: a content address (`sha256:<hex>`),
    or an object-store URL; never a local path (see `weft_core.refs`)."""

    mcp: str
    uri: str
    sha256: str
    workspace_uri: str | None = None

    @field_validator("uri", "workspace_uri")
    @classmethod
    def _relocatable(cls, value: str | None, info: ValidationInfo) -> str | None:
        return check_ref(value, field=f"SnapshotRef.{info.field_name}") if value else value


class Disclosure(StrEnum):
    VAGUE = "vague"
    PARTIAL = "partial"
    FULL = "full"


class ViewMode(StrEnum):
    AGENTIC = "agentic"
    SIMUSER = "simuser"


class TaskView(WeftModel):
    mode: ViewMode
    disclosure: Disclosure = Disclosure.FULL
    persona: str | None = None
    brief: str | None = Field(default=None, description="Agentic brief (agentic mode).")
    requests: list[str] = Field(default_factory=list, description="Per-node requests (simuser).")


class TaskGraph(Artifact):
    """A composed task: atomic tasks in a DAG for one business objective, with grounded state."""

    id: str
    objective: str
    profile: str = "Standard"
    nodes: list[TaskNode]
    edges: list[TaskEdge] = Field(default_factory=list)
    bindings: list[EntityBinding] = Field(default_factory=list)
    order: list[str] = Field(default_factory=list, description="Stable topological order.")
    initial_snapshots: dict[str, SnapshotRef] = Field(default_factory=dict)
    final_checks: list[Check] = Field(default_factory=list)
    views: list[TaskView] = Field(default_factory=list)

    @property
    def mcps(self) -> list[str]:
        return sorted({n.task.mcp for n in self.nodes})

    def initial_dbs(self) -> dict[str, str | None]:
        """Each MCP's initial DB address (None: its bundle's seed), as a group is created from."""
        refs = self.initial_snapshots
        return {m: (refs[m].uri if m in refs else None) for m in self.mcps}

    def initial_workspaces(self) -> dict[str, str]:
        """The MCPs whose sessions start from a grounded workspace, and its address. A group
        created from `initial_dbs()` alone gives those MCPs their seed workspace instead."""
        return {
            m: ref.workspace_uri
            for m, ref in sorted(self.initial_snapshots.items())
            if ref.workspace_uri is not None and m in self.mcps
        }

    def node(self, node_id: str) -> TaskNode:
        for n in self.nodes:
            if n.id == node_id:
                return n
        raise KeyError(node_id)

    def verifier(self) -> Verifier:
        """One checkpoint per node (its checks) and `final`: the graph's final checks, or every
        node's checks while none were kept (before grounding replays the reference)."""
        final = self.final_checks or [c for n in self.nodes for c in n.checks]
        return Verifier(
            checkpoints={n.id: list(n.checks) for n in self.nodes} | {FINAL_CHECKPOINT: final},
            bindings={b.name: dict(b.value) for b in self.bindings},
        )

    def binding_values(self) -> dict[str, Any]:
        """Flat `{"binding.field": value}` map for check references."""
        out: dict[str, Any] = {}
        for b in self.bindings:
            for key, val in b.value.items():
                out[f"{b.name}.{key}"] = val
        return out
