"""The completion-check language: declarative assertions over execution evidence.

A check reads one of: the initial or final SQLite state of an MCP session, their diff, the tool
returns and calls in the ledger, or workspace files. Any value may be a binding reference
`{"$binding": "customer.email"}` resolved against the task's entity bindings at evaluation time,
so one check serves every grounding of a task. Evaluated by `weft_core.checks.evaluate`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from weft_core.models._base import Artifact, WeftModel

Op = Literal["eq", "ne", "gt", "ge", "lt", "le", "contains", "in", "not_in", "exists"]
DBSide = Literal["initial", "final"]
ChangeKind = Literal["insert", "update", "delete"]


class _CheckBase(WeftModel):
    id: str = Field(
        default="", description="Stable id within its task; filled by the task if empty."
    )
    description: str = Field(default="", description="What the check asserts, in words.")
    mcp: str | None = Field(
        default=None, description="MCP whose evidence is read; None when the task has one MCP."
    )


class RowExists(_CheckBase):
    """A row matching `where` exists in `table` of the initial or final DB."""

    kind: Literal["row_exists"] = "row_exists"
    db: DBSide = "final"
    table: str
    where: dict[str, Any] = Field(default_factory=dict)


class RowAbsent(_CheckBase):
    """No row matching `where` exists in `table`."""

    kind: Literal["row_absent"] = "row_absent"
    db: DBSide = "final"
    table: str
    where: dict[str, Any] = Field(default_factory=dict)


class FieldEquals(_CheckBase):
    """The one row matching `where` has `field` satisfying `op value` (default: equals)."""

    kind: Literal["field_equals"] = "field_equals"
    db: DBSide = "final"
    table: str
    where: dict[str, Any]
    field: str
    value: Any = None
    op: Op = "eq"


class RowCount(_CheckBase):
    """The number of rows matching `where` satisfies `op value`."""

    kind: Literal["row_count"] = "row_count"
    db: DBSide = "final"
    table: str
    where: dict[str, Any] = Field(default_factory=dict)
    op: Op = "eq"
    value: Any = 0


class DiffContains(_CheckBase):
    """The initial→final diff has a `change` in `table` whose row matches `where`.

    For updates `where` matches the new row and `fields` (if given) must all be among the changed
    fields.
    """

    kind: Literal["diff_contains"] = "diff_contains"
    table: str
    change: ChangeKind
    where: dict[str, Any] = Field(default_factory=dict)
    fields: list[str] | None = None


class AllowedChange(WeftModel):
    table: str
    change: ChangeKind | None = Field(default=None, description="None allows every kind.")


class NoOtherChanges(_CheckBase):
    """Every change in the diff is in `allowed`; fields in `ignore_fields` never count."""

    kind: Literal["no_other_changes"] = "no_other_changes"
    allowed: list[AllowedChange] = Field(default_factory=list)
    ignore_fields: list[str] = Field(default_factory=list)


class ReturnContains(_CheckBase):
    """Some successful return of `tool` contains `value` (substring, or JSON subset for objects)."""

    kind: Literal["return_contains"] = "return_contains"
    tool: str
    value: Any


class CallMade(_CheckBase):
    """`tool` was called with arguments matching `arguments`, between min and max times."""

    kind: Literal["call_made"] = "call_made"
    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    ok: bool | None = Field(
        default=True, description="Count only successful (True) / failed calls."
    )
    min_count: int = 1
    max_count: int | None = None


class WorkspaceFile(_CheckBase):
    """A workspace file at `path` exists (or not), optionally containing or equal to a text."""

    kind: Literal["workspace_file"] = "workspace_file"
    path: str
    exists: bool = True
    contains: str | None = None
    equals: str | None = None


Check = Annotated[
    RowExists
    | RowAbsent
    | FieldEquals
    | RowCount
    | DiffContains
    | NoOtherChanges
    | ReturnContains
    | CallMade
    | WorkspaceFile,
    Field(discriminator="kind"),
]


class CheckOutcome(WeftModel):
    """One check's result; `reason` says why it failed (or what matched) in words."""

    check_id: str
    kind: str
    passed: bool
    reason: str = ""


class EvaluationResult(WeftModel):
    outcomes: list[CheckOutcome]

    @property
    def passed(self) -> bool:
        return all(o.passed for o in self.outcomes)

    @property
    def reward(self) -> float:
        """1.0 when every check passes, else 0.0 (the paper's binary completion outcome)."""
        return 1.0 if self.passed else 0.0

    @property
    def failures(self) -> list[CheckOutcome]:
        return [o for o in self.outcomes if not o.passed]


class CheckSet(Artifact):
    """A named list of checks, stored on its own (e.g. a verifier in the MegaMCP registry)."""

    name: str = ""
    checks: list[Check] = Field(default_factory=list)
    bindings: dict[str, Any] = Field(default_factory=dict)
