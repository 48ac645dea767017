"""The products the synthesis nodes hand each other (besides weft_core's EntityModel/ContractSet).

Each is a pydantic model so an LLM strategy can be asked for it with structured output and the
answer validated deterministically before use.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field
from pydantic.json_schema import SkipJsonSchema

from weft_core.models import Entity, Relation, StateKind, StateTransition, WeftModel
from weft_core.models.env import Operation
from weft_envsynth.amounts import AmountMove
from weft_envsynth.bindings import ToolBindings

IssueCategory = Literal["structural", "mapping", "runtime"]


class ToolEffect(WeftModel):
    """What `analyze` infers for one tool: its operation, state kind, entity, reads and writes."""

    tool: str
    operation: Operation
    state_kind: StateKind
    entity: str | None = Field(
        default=None, description="The entity the tool is about (None for files)."
    )
    reads: list[str] = Field(default_factory=list)
    writes: list[str] = Field(default_factory=list)
    transitions: list[StateTransition] = Field(default_factory=list)
    rationale: str = ""


class Analysis(WeftModel):
    """`analyze` product: shared entities, relations and per-tool effects of the complete tool set."""

    entities: list[Entity] = Field(default_factory=list)
    relations: list[Relation] = Field(default_factory=list)
    tools: list[ToolEffect] = Field(default_factory=list)
    # Out of the JSON schema: the model is asked for the binding on its own (bindmodel), and an
    # analysis it writes must not smuggle in an unchecked one.
    bindings: SkipJsonSchema[ToolBindings | None] = Field(
        default=None,
        description="The specialised bindings the model chose (bindings.py); None: the rules'.",
    )

    def effect(self, tool: str) -> ToolEffect:
        for t in self.tools:
            if t.tool == tool:
                return t
        raise KeyError(tool)


class Transition(WeftModel):
    field: str
    to_value: str
    from_values: list[str] = Field(default_factory=list)


class RoutePlan(WeftModel):
    """`backend` product for one tool: what its FastAPI route does, turned into source by templates.

    `assignments` and `filters` map an entity field to the argument that supplies it.
    """

    tool: str
    operation: Operation
    entity: str | None = None
    key_argument: str | None = Field(default=None, description="Argument holding the entity key.")
    assignments: dict[str, str] = Field(
        default_factory=dict, description="field -> argument written."
    )
    filters: dict[str, str] = Field(
        default_factory=dict, description="field -> argument matched exactly."
    )
    text_argument: str | None = Field(
        default=None, description="Free-text argument matched against text fields."
    )
    text_fields: list[str] = Field(default_factory=list)
    limit_argument: str | None = None
    references: dict[str, str] = Field(
        default_factory=dict,
        description="argument -> entity whose row must exist (foreign key check).",
    )
    transition: Transition | None = None
    path_argument: str | None = None
    target_argument: str | None = Field(
        default=None, description="Second path (move/copy destination)."
    )
    content_argument: str | None = None
    file_verb: str | None = Field(
        default=None, description="Workspace verb with shell semantics (weft_envsynth.filesem)."
    )
    file_roles: dict[str, str] = Field(
        default_factory=dict, description="argument -> role for file_verb (path, target, ...)."
    )
    response_fields: list[str] = Field(
        default_factory=list, description="Documented result fields the route's result carries."
    )
    compute_op: str | None = Field(
        default=None, description="Operation computed from the arguments (computesem)."
    )
    compute_roles: dict[str, str] = Field(
        default_factory=dict, description="argument -> operand name for compute_op."
    )
    compute_constants: dict[str, Any] = Field(
        default_factory=dict,
        description="Operands of compute_op the definition fixes (a shift's sign, rate table).",
    )
    sql_verb: str | None = Field(
        default=None, description="SQL tool kind on the session's own tables (sqlsem)."
    )
    sql_argument: str | None = Field(
        default=None, description="The argument carrying the SQL statement or the table name."
    )
    vcs_verb: str | None = Field(
        default=None, description="Version-control verb on the session repository (vcssem)."
    )
    vcs_roles: dict[str, str] = Field(
        default_factory=dict, description="argument -> role for vcs_verb (repo, files, ...)."
    )
    vcs_choices: dict[str, list[str]] = Field(
        default_factory=dict, description="argument -> the only values the definition allows."
    )
    graph_verb: str | None = Field(
        default=None, description="Record-graph verb on the session's records (graphsem)."
    )
    graph: dict[str, Any] = Field(
        default_factory=dict,
        description="The tool's graphsem.GraphSemantics, its record kinds and its message.",
    )
    moves: list[AmountMove] = Field(
        default_factory=list, description="Balances the call moves an amount on (amounts)."
    )
    reads_all: list[str] = Field(
        default_factory=list, description="Entities a whole-store read returns (analyze)."
    )
    commit: bool = Field(default=True, description="Whether the route commits its session.")
    code: str | None = Field(
        default=None,
        description="Route code the model wrote (routecode) and validation passed: "
        "`def route(args, db) -> dict`, served instead of the planned route.",
    )


class BackendPlan(WeftModel):
    routes: list[RoutePlan] = Field(default_factory=list)

    def route(self, tool: str) -> RoutePlan:
        for r in self.routes:
            if r.tool == tool:
                return r
        raise KeyError(tool)


class CheckRecord(WeftModel):
    """One validation check that was run (validation.json lists every one)."""

    tool: str
    name: str
    kind: Literal["structural", "normal", "boundary", "query", "update", "behaviour"]
    passed: bool
    category: IssueCategory | None = None
    detail: str = ""
    arguments: dict[str, Any] | None = None


# Checks reported (validation.json, certification.behaviour) but not failing a tool. Results are
# shaped like the documented response (weft_envsynth.responses), so an answer that lacks a
# documented field fails `behaviour_documented_fields`; a field the state holds in another type
# than documented (BFCL's `id: integer` for a record whose key the schema made a string) is a
# disagreement between the schema and the definition, reported for the schema to settle.
ADVISORY_CHECKS = frozenset({"behaviour_documented_types"})


class ValidationReport(WeftModel):
    round: int = 0
    checks: list[CheckRecord] = Field(default_factory=list)
    server_error: str | None = Field(
        default=None, description="The server could not be built or started."
    )

    def failing_tools(self) -> dict[str, list[CheckRecord]]:
        out: dict[str, list[CheckRecord]] = {}
        for c in self.checks:
            if not c.passed and c.name not in ADVISORY_CHECKS:
                out.setdefault(c.tool, []).append(c)
        return out

    def passed_tools(self, tools: list[str]) -> list[str]:
        failing = self.failing_tools()
        ran = {c.tool for c in self.checks}
        return [t for t in tools if t in ran and t not in failing]


class SeedPlan(WeftModel):
    """Sample rows per entity (table name -> rows), inserted into seed.sqlite in table order."""

    rows: dict[str, list[dict[str, Any]]] = Field(default_factory=dict)
