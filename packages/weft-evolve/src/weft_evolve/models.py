"""The records self-evolution produces (paper §3.2): evidence, attributions, revisions, rounds.

Every attribution carries the evidence it was decided from; every revision names the component
version it replaced and the revalidation it passed or failed, so a round report can be audited.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import Field

from weft_core.models import CheckOutcome, EvaluationResult, LedgerEntry
from weft_core.models._base import WeftModel
from weft_core.state import DBState, WorkspaceState


class Component(StrEnum):
    """Who is responsible for a failure (§3.2.2). Infrastructure failures are retried, never
    attributed to a component of the task."""

    POLICY = "policy"
    ENVIRONMENT = "environment"
    TASK = "task"
    VERIFIER = "verifier"
    INFRASTRUCTURE = "infrastructure"


class Fix(StrEnum):
    """The targeted revision an attribution routes to."""

    NONE = "none"
    REVISE_ROUTE = "revise_route"  # environment: envsynth revision of the named tools
    REVALIDATE = "revalidate"  # environment: operational feedback only; rerun construction checks
    REBIND = "rebind"  # task: an input or binding names the wrong (or no) value
    REGROUND = "reground"  # task: the initial state violates a node's precondition
    DROP_NODE = "drop_node"  # task: nothing can supply what the node needs
    REGENERATE_VERIFIER = "regenerate_verifier"  # verifier: checks and rubric from evidence


class EvidenceItem(WeftModel):
    """One fact a decision rests on, with where it came from."""

    source: str = Field(
        description="reference_replay, contract, initial_db, ledger, checkpoint, cross_view, "
        "rubric, megamcp_stats, task_graph or verifier_generation."
    )
    detail: str
    data: dict[str, Any] = Field(default_factory=dict)


class Target(WeftModel):
    """The component a revision would change."""

    mcp: str | None = None
    tool: str | None = None
    node_id: str | None = None
    check_ids: list[str] = Field(default_factory=list)
    input_name: str | None = None
    fix: Fix = Fix.NONE

    def key(self, task_id: str) -> str:
        """Stable identity of the revised component (environment targets are shared by tasks)."""
        if self.fix in (Fix.REVISE_ROUTE, Fix.REVALIDATE):
            return f"env:{self.mcp}:{self.tool}"
        if self.fix == Fix.REGENERATE_VERIFIER:
            return f"verifier:{task_id}:{self.node_id}"
        return f"task:{task_id}:{self.node_id}"


class CallRecord(WeftModel):
    """One call of a reference replay, as MegaMCP served it."""

    mcp: str
    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    is_error: bool = False
    error_code: str | None = Field(default=None, description="Leading code of an error text.")
    text: str = ""
    value: Any = None


class NodeReplay(WeftModel):
    """A node's reference calls replayed after its upstream nodes, with the state it left."""

    node_id: str
    mcp: str
    calls: list[CallRecord] = Field(default_factory=list)
    template_error: str | None = Field(
        default=None, description="An input no given value, upstream output or binding supplies."
    )
    before: DBState | None = None
    after: DBState | None = None
    workspace_after: WorkspaceState | None = None
    ledger: list[LedgerEntry] = Field(default_factory=list, description="The MCP's ledger so far.")
    outcome: EvaluationResult | None = Field(
        default=None, description="The node's current checks on this evidence."
    )

    @property
    def executed(self) -> bool:
        return self.template_error is None and not any(c.is_error for c in self.calls)


class ReferenceReplay(WeftModel):
    """The reference solution of one task version replayed on fresh clones of its snapshots."""

    task_id: str
    task_hash: str
    initial: dict[str, DBState] = Field(default_factory=dict)
    nodes: dict[str, NodeReplay] = Field(default_factory=dict)
    error: str | None = Field(default=None, description="Why the replay could not run.")


class FailureUnit(WeftModel):
    """One checkpoint outcome that needs an explanation: a failed checkpoint, or a passed one the
    rubric judge rejects (rubric vs executable disagreement)."""

    unit_id: str
    kind: Literal["failed_checkpoint", "rubric_disagreement"]
    trace_id: str
    task_id: str
    task_hash: str
    node_id: str
    view: str
    harness: str
    model: str
    failed_checks: list[CheckOutcome] = Field(default_factory=list)
    ledger: list[LedgerEntry] = Field(default_factory=list, description="The turn's calls.")
    rubric_failures: list[str] = Field(default_factory=list)


class CrossViewPattern(WeftModel):
    """How one node of one task version fared across views, harnesses and models."""

    rollouts: int = 0
    failed: int = 0
    views_failed: list[str] = Field(default_factory=list)
    views_passed: list[str] = Field(default_factory=list)
    harnesses_failed: list[str] = Field(default_factory=list)
    check_failures: dict[str, int] = Field(
        default_factory=dict, description="Check id -> rollouts in which it failed."
    )

    @property
    def fails_everywhere(self) -> bool:
        return self.rollouts > 0 and self.failed == self.rollouts


class ToolStats(WeftModel):
    """MegaMCP's operational feedback for one tool of one MCP version (§3.3.3)."""

    mcp: str
    version: int | None = None
    tool: str
    calls: int = 0
    errors: int = 0
    crashes: int = 0
    timeouts: int = 0
    faults: int = Field(
        default=0,
        description="Errors in the round's rollout ledgers whose code the tool's contract never "
        "declares (e.g. internal_error): a backend fault, whoever made the call.",
    )

    @property
    def error_rate(self) -> float:
        return self.errors / self.calls if self.calls else 0.0


class Attribution(WeftModel):
    """A decision about one failure unit, with every fact it rests on."""

    unit_id: str
    task_id: str
    node_id: str
    trace_id: str
    view: str
    harness: str
    unit_kind: Literal["failed_checkpoint", "rubric_disagreement", "audit", "operational"] = (
        "failed_checkpoint"
    )
    component: Component
    target: Target = Field(default_factory=Target)
    decided_by: Literal["rules", "llm", "programmatic"] = "rules"
    rule: str = Field(description="Which rule (or agent strategy) decided.")
    confidence: float = 1.0
    evidence: list[EvidenceItem] = Field(default_factory=list)
    overridden: str | None = Field(
        default=None, description="A model verdict that the evidence contradicted, and why."
    )


class Revision(WeftModel):
    """One targeted change to one component, and whether it survived revalidation."""

    component: Component
    target_key: str
    task_ids: list[str] = Field(default_factory=list)
    fix: Fix
    from_version: str = ""
    to_version: str = ""
    changed: list[str] = Field(default_factory=list, description="What exactly changed.")
    attributions: list[str] = Field(default_factory=list, description="Unit ids behind it.")
    revalidated: bool = False
    revalidation: list[str] = Field(default_factory=list, description="Checks run, with results.")
    error: str | None = None
    failing_elsewhere: list[str] = Field(
        default_factory=list,
        description="Tools outside the revision whose unchanged routes failed the bundle's "
        "revalidation: defects found on the way (e.g. off the reference path), not regressions.",
    )


class RoundStats(WeftModel):
    round: int
    rollouts: int = 0
    calls: int = 0
    tool_errors: int = 0
    selected_rollouts: int = 0
    selected_calls: int = 0
    selected_tool_errors: int = 0
    checkpoints: int = 0
    failed_checkpoints: int = 0
    attributions: dict[str, int] = Field(default_factory=dict)
    revisions: dict[str, int] = Field(default_factory=dict)
    failed_revalidations: int = 0
    seconds: float = 0.0

    @property
    def tool_error_rate(self) -> float:
        return self.tool_errors / self.calls if self.calls else 0.0

    @property
    def selected_tool_error_rate(self) -> float:
        return self.selected_tool_errors / self.selected_calls if self.selected_calls else 0.0


class RoundRecord(WeftModel):
    """Everything one round did (saved as rounds/<n>.json; a finished round is never rerun)."""

    round: int
    stats: RoundStats
    attributions: list[Attribution] = Field(default_factory=list)
    revisions: list[Revision] = Field(default_factory=list)
    operational: list[ToolStats] = Field(default_factory=list)
    operational_actions: list[str] = Field(default_factory=list)
    task_versions: dict[str, str] = Field(
        default_factory=dict, description="Task id -> content hash used in this round."
    )
