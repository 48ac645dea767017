"""The rubric and its programmatic judge (§3.2.1, §3.2.2 "rubric vs executable").

A rubric is written from the accepted reference execution, like the checks, but it is judged on
what an LLM judge would read — the turn's tool calls and returns — not on the databases. Where the
executable checks pass a turn that the rubric rejects, the checks may be too lax; one such
disagreement is a flag, the node's coverage audit decides.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import Field

from weft_core.checks import values_equal
from weft_core.models import ContractSet, LedgerEntry, TaskNode
from weft_core.models._base import WeftModel
from weft_evolve.attribution.conformance import contract_of
from weft_evolve.models import NodeReplay


class RubricItem(WeftModel):
    """One criterion of a node's rubric, with what a judge looks for in the turn."""

    criterion: str
    kind: Literal["write", "read", "file"]
    mcp: str
    tool: str
    argument: str | None = Field(default=None, description="Write: the argument that sets it.")
    value: Any = None
    key_argument: str | None = None
    key_value: Any = None


def rubric_for(
    node: TaskNode, nr: NodeReplay, contracts: dict[str, ContractSet]
) -> list[RubricItem]:
    """Criteria from the accepted reference: each value a write sets, the entity a read must
    retrieve, each file the node writes."""
    items: list[RubricItem] = []
    for c in nr.calls:
        if c.is_error:
            continue
        contract = contract_of(contracts, c.mcp, c.tool)
        if contract is None:
            continue
        key = next((m for m in contract.mappings if m.role == "key"), None)
        key_value = c.arguments.get(key.argument) if key else None
        if contract.operation in ("create", "update", "action"):
            for m in contract.mappings:
                if m.role == "value" and c.arguments.get(m.argument) is not None:
                    items.append(
                        RubricItem(
                            criterion=f"{m.entity}.{m.field} is set to {c.arguments[m.argument]!r}"
                            + (f" for {key_value!r}" if key_value is not None else ""),
                            kind="write",
                            mcp=c.mcp,
                            tool=c.tool,
                            argument=m.argument,
                            value=c.arguments[m.argument],
                            key_argument=key.argument if key else None,
                            key_value=key_value,
                        )
                    )
        elif contract.operation in ("read", "list", "search") and key_value is not None:
            items.append(
                RubricItem(
                    criterion=f"the answer is about {contract.entity} {key_value!r}",
                    kind="read",
                    mcp=c.mcp,
                    tool=c.tool,
                    value=key_value,
                )
            )
        elif contract.operation == "file_write":
            path = next(
                (
                    c.arguments[m.argument]
                    for m in contract.mappings
                    if m.role == "path" and m.argument in c.arguments
                ),
                None,
            )
            if path is not None:
                items.append(
                    RubricItem(
                        criterion=f"the file {path!r} is written",
                        kind="file",
                        mcp=c.mcp,
                        tool=c.tool,
                        value=path,
                    )
                )
    return items


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, default=str)


def judge_rubric(items: list[RubricItem], ledger: list[LedgerEntry]) -> list[str]:
    """The unmet criteria for one turn (its ledger slice); [] when every criterion is met."""
    ok = [e for e in ledger if not e.is_error]
    unmet: list[str] = []
    for item in items:
        if item.kind == "write":
            met = any(
                e.mcp == item.mcp
                and e.tool == item.tool
                and item.argument is not None
                and values_equal(e.arguments.get(item.argument), item.value)
                and (
                    item.key_argument is None
                    or values_equal(e.arguments.get(item.key_argument), item.key_value)
                )
                for e in ok
            )
        elif item.kind == "read":
            met = any(e.mcp == item.mcp and str(item.value) in _text(e.result) for e in ok)
        else:
            met = any(e.mcp == item.mcp and str(item.value) in _text(e.arguments) for e in ok)
        if not met:
            unmet.append(item.criterion)
    return unmet
