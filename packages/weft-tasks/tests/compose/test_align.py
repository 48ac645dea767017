"""A row renamed onto the bound object is renamed alike in the sibling nodes that seed it.

The example MCPs key one person differently (helpdesk: Renee Herrera is EMP-0002; the HR portal:
EMP-0001). A node of the HR portal that looks her up through the binding is re-grounded on
EMP-0002; a sibling node of the same MCP that only lists employees seeds her as EMP-0001 with
the same unique email. Left apart, the initial DB would need both rows and holds only one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from weft_core.models import (
    AtomicTask,
    ContractSet,
    Entity,
    EntityBinding,
    EntityField,
    EntityModel,
    MCPSpec,
)
from weft_tasks.atomic.bundle import BundleView
from weft_tasks.compose.align import share_renames

RENEE = {"employee_id": "EMP-0001", "email": "renee@example.com", "department": "engineering"}


def _hr(tmp_path: Path) -> BundleView:
    employee = Entity(
        name="employee",
        key="employee_id",
        fields=[
            EntityField(name="employee_id", primary_key=True),
            EntityField(name="email", unique=True),
            EntityField(name="department"),
        ],
    )
    return BundleView(
        path=tmp_path / "hr",
        spec=MCPSpec(name="hr", domain="hr", tools=[]),
        entities=EntityModel(mcp="hr", entities=[employee]),
        contracts=ContractSet(mcp="hr", contracts=[]),
        _rows={},
    )


def _task(tid: str, row: dict[str, Any], check_value: str, tool: str) -> AtomicTask:
    return AtomicTask.model_validate(
        {
            "id": tid,
            "mcp": "hr",
            "intent": "report the employee id of renee@example.com",
            "tool_chain": [tool],
            "reference_calls": [{"tool": tool, "arguments": {}}],
            "checks": [{"kind": "return_contains", "tool": tool, "value": check_value}],
            "seed_rows": {"employee": [row]},
        }
    )


def test_a_sibling_seeding_the_renamed_row_is_renamed_alike(tmp_path: Path) -> None:
    bundles = {"hr": _hr(tmp_path)}
    binding = EntityBinding(
        name="employee",
        entity="employee",
        value={"employee_id": "EMP-0002", "email": "renee@example.com"},
        refs={"helpdesk": "employee", "hr": "employee"},
    )
    lister = _task("hr.t1", RENEE, "EMP-0001", "list_employees")
    raw = _task("hr.t2", RENEE, "EMP-0001", "get_employee")
    aligned = _task("hr.t2", {**RENEE, "employee_id": "EMP-0002"}, "EMP-0002", "get_employee")
    other = _task("hr.t3", {**RENEE, "employee_id": "EMP-0009", "email": "x@y"}, "EMP-0009", "t")
    out = share_renames(
        [lister, raw, other],
        [(lister, {}), (aligned, {"employee_id": "employee.employee_id"}), (other, {})],
        bundles,
        binding,
    )
    lister2, aligned2, other2 = (t for t, _ in out)
    assert lister2.seed_rows["employee"] == [{**RENEE, "employee_id": "EMP-0002"}]
    assert lister2.checks[0].model_dump()["value"] == "EMP-0002"
    assert (
        aligned2 is aligned and other2 is other
    )  # the aligned node and another object: as they were
    assert [a for _, a in out] == [{}, {"employee_id": "employee.employee_id"}, {}]
    # no binding, or nothing renamed: the nodes are returned untouched
    assert share_renames([lister], [(lister, {})], bundles, None) == [(lister, {})]
    assert share_renames([raw], [(raw, {"x": "employee.email"})], bundles, binding)[0][0] is raw
