from weft_evolve.attribution.conformance import contract_of, judge_call
from weft_evolve.models import CallRecord

from ..conftest import MCP, ORDERS, db


def _call(tool: str, args: dict, *, error: str | None = None, value: object = None) -> CallRecord:
    return CallRecord(
        mcp=MCP,
        tool=tool,
        arguments=args,
        is_error=error is not None,
        error_code=error.split(":")[0] if error else None,
        text=error or "",
        value=value,
    )


def test_undeclared_error_is_the_backends(contracts):
    j = judge_call(
        _call("get_order", {"order_id": "ORD-1"}, error="internal_error: RuntimeError"),
        contract_of(contracts, MCP, "get_order"),
        db(ORDERS),
        None,
    )
    assert (j.verdict, j.rule) == ("environment", "undeclared_error")


def test_not_found_is_judged_against_the_state(contracts):
    c = contract_of(contracts, MCP, "get_order")
    present = judge_call(
        _call("get_order", {"order_id": "ORD-1"}, error="not_found: order not found"),
        c,
        db(ORDERS),
        None,
    )
    absent = judge_call(
        _call("get_order", {"order_id": "ORD-9"}, error="not_found: order not found"),
        c,
        db(ORDERS),
        None,
    )
    assert (present.verdict, present.rule) == ("environment", "not_found_but_present")
    assert (absent.verdict, absent.rule) == ("task", "key_absent_from_state")


def test_write_landing_in_another_field_is_named(contracts):
    after = {k: dict(v) for k, v in ORDERS.items()}
    after["ORD-1"]["note"] = "shipped"
    j = judge_call(
        _call("update_order", {"order_id": "ORD-1", "status": "shipped"}),
        contract_of(contracts, MCP, "update_order"),
        db(ORDERS),
        db(after),
    )
    assert j.verdict == "environment" and j.rule == "write_mismatch"
    assert j.data["mismatches"][0]["found_in"] == ["note"]


def test_conformant_write_and_read(contracts):
    after = {k: dict(v) for k, v in ORDERS.items()}
    after["ORD-1"]["status"] = "shipped"
    w = judge_call(
        _call("update_order", {"order_id": "ORD-1", "status": "shipped"}),
        contract_of(contracts, MCP, "update_order"),
        db(ORDERS),
        db(after),
    )
    r = judge_call(
        _call("get_order", {"order_id": "ORD-1"}, value={"order": ORDERS["ORD-1"]}),
        contract_of(contracts, MCP, "get_order"),
        db(ORDERS),
        None,
    )
    assert w.verdict == "conformant" and r.verdict == "conformant"


def test_stale_read_disagrees_with_state(contracts):
    stale = {"order": {**ORDERS["ORD-1"], "status": "cancelled"}}
    j = judge_call(
        _call("get_order", {"order_id": "ORD-1"}, value=stale),
        contract_of(contracts, MCP, "get_order"),
        db(ORDERS),
        None,
    )
    assert (j.verdict, j.rule) == ("environment", "read_disagrees_with_state")


def test_empty_filtered_answer_is_judged_against_the_state():
    from weft_core.models.env import ArgMapping, ToolContract

    lst = ToolContract(
        tool="list_orders",
        state_kind="database",
        operation="list",
        entity="order",
        mappings=[ArgMapping(argument="status", entity="order", field="status", role="filter")],
    )
    empty = {"items": [], "count": 0}
    none_match = judge_call(
        _call("list_orders", {"status": "lost"}, value=empty), lst, db(ORDERS), None
    )
    some_match = judge_call(
        _call("list_orders", {"status": "pending"}, value=empty), lst, db(ORDERS), None
    )
    assert (none_match.verdict, none_match.rule) == ("task", "no_matching_state")
    assert none_match.data["argument"] == "status" and none_match.data["alone"]
    assert (some_match.verdict, some_match.rule) == ("environment", "empty_answer_but_rows_match")
