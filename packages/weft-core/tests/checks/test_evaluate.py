from __future__ import annotations

from typing import Any

import pytest

from weft_core.checks import Evidence, evaluate
from weft_core.exceptions import CheckError, UserError
from weft_core.models import CheckOutcome, EntityBinding, FieldEquals, RowExists


def one(check: dict[str, Any], evidence: Any, bindings: Any = None) -> CheckOutcome:
    result = evaluate([check], evidence, bindings)
    assert len(result.outcomes) == 1
    return result.outcomes[0]


def passes(check: dict[str, Any], evidence: Any, bindings: Any = None) -> str:
    outcome = one(check, evidence, bindings)
    assert outcome.passed, outcome.reason
    return outcome.reason


def fails(check: dict[str, Any], evidence: Any, bindings: Any = None) -> str:
    outcome = one(check, evidence, bindings)
    assert not outcome.passed, f"expected failure, got pass: {outcome.reason}"
    assert outcome.reason
    return outcome.reason


# ------------------------------------------------------------------ row_exists / row_absent


def test_row_exists_final_and_initial(shop: Evidence) -> None:
    passes({"kind": "row_exists", "table": "order", "where": {"id": 12, "status": "pending"}}, shop)
    reason = fails(
        {"kind": "row_exists", "db": "initial", "table": "order", "where": {"id": 12}}, shop
    )
    assert "no row in initial order" in reason


def test_row_exists_with_binding_and_number_tolerance(
    shop: Evidence, bindings: dict[str, Any]
) -> None:
    check = {
        "kind": "row_exists",
        "table": "order",
        "where": {
            "customer_id": {"$binding": "customer.id"},
            "total": {"$binding": "new_order.total"},
        },
    }
    passes(check, shop, bindings)  # "42.00" (binding text) matches REAL 42.0


def test_row_exists_strings_are_case_sensitive(shop: Evidence) -> None:
    fails({"kind": "row_exists", "table": "customer", "where": {"name": "ada lovelace"}}, shop)
    passes({"kind": "row_exists", "table": "customer", "where": {"name": "Ada Lovelace"}}, shop)


def test_row_exists_operator_where(shop: Evidence) -> None:
    passes({"kind": "row_exists", "table": "customer", "where": {"credit": {"$gt": 100}}}, shop)
    fails({"kind": "row_exists", "table": "customer", "where": {"credit": {"$gt": 1000}}}, shop)
    passes({"kind": "row_exists", "table": "order", "where": {"tags": {"$contains": "rush"}}}, shop)
    passes(
        {"kind": "row_exists", "table": "customer", "where": {"email": {"$exists": False}}}, shop
    )
    passes(
        {
            "kind": "row_exists",
            "table": "order",
            "where": {"updated_at": {"$ge": "2026-02-01", "$lt": "2026-03"}},
        },
        shop,
    )


def test_row_absent(shop: Evidence) -> None:
    passes({"kind": "row_absent", "table": "order", "where": {"status": "cancelled"}}, shop)
    reason = fails({"kind": "row_absent", "table": "order", "where": {"status": "shipped"}}, shop)
    assert "expected none" in reason
    passes({"kind": "row_absent", "db": "initial", "table": "order", "where": {"id": 12}}, shop)


def test_unknown_table_and_column_fail_with_reason(shop: Evidence) -> None:
    reason = fails({"kind": "row_exists", "table": "orders", "where": {"id": 1}}, shop)
    assert "unknown table 'orders'" in reason and "customer" in reason
    reason = fails({"kind": "row_absent", "table": "order", "where": {"state": "x"}}, shop)
    assert "no column 'state'" in reason


# ------------------------------------------------------------------ field_equals


def test_field_equals_ops(shop: Evidence, bindings: dict[str, Any]) -> None:
    base = {"kind": "field_equals", "table": "order", "where": {"id": {"$binding": "order.id"}}}
    passes({**base, "field": "status", "value": "shipped"}, shop, bindings)
    passes({**base, "field": "total", "value": "99.90"}, shop, bindings)
    passes({**base, "field": "total", "op": "gt", "value": 50}, shop, bindings)
    passes(
        {**base, "field": "status", "op": "in", "value": ["shipped", "delivered"]}, shop, bindings
    )
    passes({**base, "field": "status", "op": "not_in", "value": ["pending"]}, shop, bindings)
    passes({**base, "field": "status", "op": "ne", "value": "pending"}, shop, bindings)
    passes({**base, "field": "tags", "value": ["gift"]}, shop, bindings)  # JSON text column
    passes({**base, "field": "updated_at", "op": "exists"}, shop, bindings)
    reason = fails({**base, "field": "status", "value": "Shipped"}, shop, bindings)
    assert "'shipped'" in reason and "fails" in reason


def test_field_equals_bool_against_integer_column(shop: Evidence) -> None:
    passes(
        {
            "kind": "field_equals",
            "table": "customer",
            "where": {"id": 1},
            "field": "active",
            "value": True,
        },
        shop,
    )
    fails(
        {
            "kind": "field_equals",
            "table": "customer",
            "where": {"id": 3},
            "field": "active",
            "value": True,
        },
        shop,
    )


def test_field_equals_initial_db(shop: Evidence) -> None:
    passes(
        {
            "kind": "field_equals",
            "db": "initial",
            "table": "order",
            "where": {"id": 10},
            "field": "status",
            "value": "pending",
        },
        shop,
    )


def test_field_equals_ambiguous_and_missing(shop: Evidence) -> None:
    reason = fails(
        {
            "kind": "field_equals",
            "table": "customer",
            "where": {"active": 1},
            "field": "name",
            "value": "x",
        },
        shop,
    )
    assert "ambiguous: 2 rows match" in reason
    reason = fails(
        {
            "kind": "field_equals",
            "table": "customer",
            "where": {"id": 99},
            "field": "name",
            "value": "x",
        },
        shop,
    )
    assert "no row matches" in reason
    reason = fails(
        {
            "kind": "field_equals",
            "table": "customer",
            "where": {"id": 1},
            "field": "phone",
            "value": "x",
        },
        shop,
    )
    assert "no column 'phone'" in reason


def test_field_equals_incomparable_ordering_fails_not_raises(shop: Evidence) -> None:
    reason = fails(
        {
            "kind": "field_equals",
            "table": "customer",
            "where": {"id": 1},
            "field": "name",
            "op": "gt",
            "value": 3,
        },
        shop,
    )
    assert "cannot order" in reason


def test_null_never_orders(shop: Evidence) -> None:
    fails(
        {
            "kind": "field_equals",
            "table": "customer",
            "where": {"id": 3},
            "field": "email",
            "op": "lt",
            "value": "z",
        },
        shop,
    )
    passes(
        {
            "kind": "field_equals",
            "table": "customer",
            "where": {"id": 3},
            "field": "email",
            "value": None,
        },
        shop,
    )


# ------------------------------------------------------------------ row_count


def test_row_count(shop: Evidence, bindings: dict[str, Any]) -> None:
    passes({"kind": "row_count", "table": "order", "value": 3}, shop)
    passes({"kind": "row_count", "db": "initial", "table": "order", "value": 2}, shop)
    passes(
        {
            "kind": "row_count",
            "table": "order",
            "where": {"customer_id": {"$binding": "customer.id"}},
            "op": "ge",
            "value": 2,
        },
        shop,
        bindings,
    )
    reason = fails({"kind": "row_count", "table": "audit", "value": 0}, shop)
    assert "1 row(s)" in reason
    passes(
        {
            "kind": "row_count",
            "table": "audit",
            "where": {"event": "order.create"},
            "op": "in",
            "value": [1, 2],
        },
        shop,
    )


def test_row_count_binding_to_non_number_fails(shop: Evidence) -> None:
    reason = fails(
        {"kind": "row_count", "table": "order", "value": {"$binding": "c.name"}},
        shop,
        {"c": {"name": "Ada"}},
    )
    assert "must be a number" in reason


# ------------------------------------------------------------------ diff_contains / no_other_changes


def test_diff_contains_insert_update_delete(shop: Evidence) -> None:
    passes(
        {
            "kind": "diff_contains",
            "table": "order",
            "change": "insert",
            "where": {"id": 12, "total": 42},
        },
        shop,
    )
    passes({"kind": "diff_contains", "table": "audit", "change": "insert"}, shop)
    passes(
        {
            "kind": "diff_contains",
            "table": "order",
            "change": "update",
            "where": {"id": 10},
            "fields": ["status"],
        },
        shop,
    )
    passes(
        {
            "kind": "diff_contains",
            "table": "customer",
            "change": "update",
            "where": {"tier": "silver"},
        },
        shop,
    )
    reason = fails({"kind": "diff_contains", "table": "order", "change": "delete"}, shop)
    assert "no delete in order" in reason and "1 inserts, 1 updates" in reason


def test_diff_contains_update_missing_field(shop: Evidence) -> None:
    reason = fails(
        {
            "kind": "diff_contains",
            "table": "order",
            "change": "update",
            "where": {"id": 10},
            "fields": ["status", "total"],
        },
        shop,
    )
    assert "not all of ['status', 'total']" in reason


def test_diff_contains_where_mismatch_and_unknown_table(shop: Evidence) -> None:
    fails(
        {
            "kind": "diff_contains",
            "table": "order",
            "change": "insert",
            "where": {"customer_id": 1},
        },
        shop,
    )
    reason = fails({"kind": "diff_contains", "table": "invoice", "change": "insert"}, shop)
    assert "unknown table 'invoice'" in reason


def test_diff_contains_detects_a_delete() -> None:
    from weft_core.state import DBState

    ev = Evidence(
        initial=DBState(tables={"t": {"1": {"id": 1, "v": "a"}}}), final=DBState(tables={"t": {}})
    )
    passes({"kind": "diff_contains", "table": "t", "change": "delete", "where": {"v": "a"}}, ev)


def test_no_other_changes(shop: Evidence) -> None:
    allowed_all = [
        {"table": "order"},
        {"table": "customer", "change": "update"},
        {"table": "audit", "change": "insert"},
    ]
    passes({"kind": "no_other_changes", "allowed": allowed_all}, shop)
    reason = fails({"kind": "no_other_changes", "allowed": [{"table": "order"}]}, shop)
    assert "2 unexpected change(s)" in reason and "update customer[2] ['tier']" in reason
    assert "insert audit[1]" in reason
    reason = fails(
        {
            "kind": "no_other_changes",
            "allowed": [{"table": "order", "change": "insert"}, *allowed_all[1:]],
        },
        shop,
    )
    assert "update order[10]" in reason


def test_no_other_changes_ignore_fields(shop: Evidence) -> None:
    check = {
        "kind": "no_other_changes",
        "allowed": [
            {"table": "order", "change": "insert"},
            {"table": "audit"},
            {"table": "customer"},
        ],
        "ignore_fields": ["status", "updated_at"],
    }
    passes(check, shop)
    check["ignore_fields"] = ["updated_at"]
    assert "['status']" in fails(check, shop)


def test_diff_checks_without_db_evidence_fail() -> None:
    ev = Evidence()
    assert "no diff" in fails({"kind": "no_other_changes"}, ev)
    assert "no diff" in fails({"kind": "diff_contains", "table": "t", "change": "insert"}, ev)
    assert "no final DB state" in fails({"kind": "row_exists", "table": "t"}, ev)
    assert "no initial DB state" in fails({"kind": "row_count", "db": "initial", "table": "t"}, ev)


def test_explicit_diff_is_used(shop: Evidence) -> None:
    from weft_core.state import StateDiff

    ev = shop.model_copy(update={"diff": StateDiff()})
    passes({"kind": "no_other_changes"}, ev)


# ------------------------------------------------------------------ return_contains / call_made


def test_return_contains_forms(shop: Evidence, bindings: dict[str, Any]) -> None:
    passes({"kind": "return_contains", "tool": "ship_order", "value": "shipped via UPS"}, shop)
    passes({"kind": "return_contains", "tool": "get_order", "value": {"status": "pending"}}, shop)
    passes(
        {"kind": "return_contains", "tool": "get_order", "value": {"items": [{"sku": "A-1"}]}}, shop
    )
    passes(
        {"kind": "return_contains", "tool": "get_order", "value": {"id": {"$binding": "order.id"}}},
        shop,
        bindings,
    )
    passes({"kind": "return_contains", "tool": "get_order", "value": 99.9}, shop)
    passes({"kind": "return_contains", "tool": "get_order", "value": "99.9"}, shop)
    # JSON text inside a content block, matched as a nested subset.
    passes({"kind": "return_contains", "tool": "create_order", "value": {"id": 12}}, shop)
    reason = fails(
        {"kind": "return_contains", "tool": "get_order", "value": {"status": "shipped"}}, shop
    )
    assert "none of 1 successful 'get_order'" in reason
    fails({"kind": "return_contains", "tool": "ship_order", "value": "SHIPPED"}, shop)


def test_return_contains_skips_errors_and_unknown_tools(shop: Evidence) -> None:
    # The failed create_order returned "not valid"; errors never count as returns.
    fails({"kind": "return_contains", "tool": "create_order", "value": "not valid"}, shop)
    reason = fails({"kind": "return_contains", "tool": "refund", "value": "x"}, shop)
    assert "no successful call of 'refund'" in reason


def test_call_made(shop: Evidence, bindings: dict[str, Any]) -> None:
    passes(
        {
            "kind": "call_made",
            "tool": "ship_order",
            "arguments": {
                "order_id": {"$binding": "order.id"},
                "carrier": {"$binding": "order.carrier"},
            },
        },
        shop,
        bindings,
    )
    passes({"kind": "call_made", "tool": "create_order", "arguments": {"tags": ["b2b"]}}, shop)
    passes(
        {"kind": "call_made", "tool": "create_order", "ok": False, "arguments": {"customer_id": 2}},
        shop,
    )
    passes({"kind": "call_made", "tool": "create_order", "ok": None, "min_count": 2}, shop)
    reason = fails({"kind": "call_made", "tool": "create_order", "min_count": 2}, shop)
    assert "1 successful call(s)" in reason and "at least 2" in reason
    reason = fails(
        {"kind": "call_made", "tool": "ship_order", "arguments": {"carrier": "DHL"}}, shop
    )
    assert "closest" in reason and "UPS" in reason
    fails(
        {"kind": "call_made", "tool": "create_order", "ok": None, "max_count": 1, "min_count": 0},
        shop,
    )
    passes({"kind": "call_made", "tool": "cancel_order", "min_count": 0, "max_count": 0}, shop)


# ------------------------------------------------------------------ workspace_file


def test_workspace_file(shop: Evidence, bindings: dict[str, Any]) -> None:
    passes({"kind": "workspace_file", "path": "/reports/summary.md"}, shop)
    passes(
        {"kind": "workspace_file", "path": "reports/summary.md", "contains": "Ada Lovelace"}, shop
    )
    passes(
        {"kind": "workspace_file", "path": "notes.txt", "equals": "draft"}, shop
    )  # trailing newline
    passes({"kind": "workspace_file", "path": "missing.txt", "exists": False}, shop)
    assert "does not exist" in fails({"kind": "workspace_file", "path": "missing.txt"}, shop)
    assert "exists, expected absent" in fails(
        {"kind": "workspace_file", "path": "notes.txt", "exists": False}, shop
    )
    assert "does not contain" in fails(
        {"kind": "workspace_file", "path": "notes.txt", "contains": "final"}, shop
    )
    assert "does not equal" in fails(
        {"kind": "workspace_file", "path": "notes.txt", "equals": "Draft"}, shop
    )
    assert "no text" in fails({"kind": "workspace_file", "path": "blob.bin", "contains": "x"}, shop)
    assert "no final workspace" in fails({"kind": "workspace_file", "path": "x"}, Evidence())


# ------------------------------------------------------------------ bindings, MCP selection, batches


def test_unknown_binding_fails_with_known_names(shop: Evidence, bindings: dict[str, Any]) -> None:
    reason = fails(
        {"kind": "row_exists", "table": "order", "where": {"id": {"$binding": "invoice.id"}}},
        shop,
        bindings,
    )
    assert "unknown binding 'invoice.id'" in reason and "customer" in reason
    reason = fails(
        {"kind": "row_exists", "table": "order", "where": {"id": {"$binding": "order.number"}}},
        shop,
        bindings,
    )
    assert "has no field 'number'" in reason and "carrier" in reason
    assert "unknown binding" in fails(
        {"kind": "row_exists", "table": "order", "where": {"id": {"$binding": "order.id"}}}, shop
    )


def test_entity_binding_list(shop: Evidence) -> None:
    eb = [
        EntityBinding(
            name="customer",
            entity="Customer",
            value={"id": 1, "email": "ada@example.com"},
            refs={"shop": "customer"},
        )
    ]
    passes(
        {
            "kind": "field_equals",
            "table": "customer",
            "where": {"id": {"$binding": "customer.id"}},
            "field": "email",
            "value": {"$binding": "customer.email"},
        },
        shop,
        eb,
    )


def test_multi_mcp_selection(shop: Evidence) -> None:
    from weft_core.state import DBState

    crm = Evidence(
        mcp="crm", final=DBState(tables={"contact": {"1": {"id": 1, "email": "ada@example.com"}}})
    )
    evidence = {"shop": shop, "crm": crm}
    passes(
        {
            "kind": "row_exists",
            "mcp": "crm",
            "table": "contact",
            "where": {"email": "ada@example.com"},
        },
        evidence,
    )
    passes(
        {
            "kind": "row_exists",
            "mcp": "shop",
            "table": "customer",
            "where": {"email": "ada@example.com"},
        },
        evidence,
    )
    assert "unknown MCP 'helpdesk'" in fails(
        {"kind": "row_exists", "mcp": "helpdesk", "table": "t"}, evidence
    )
    assert "names no MCP" in fails({"kind": "row_exists", "table": "contact"}, evidence)
    passes({"kind": "row_exists", "table": "contact"}, {"crm": crm})
    assert "evidence is for 'shop'" in fails(
        {"kind": "row_exists", "mcp": "crm", "table": "t"}, shop
    )


def test_batch_goes_on_after_failures_and_ids(shop: Evidence) -> None:
    checks = [
        RowExists(id="has-order", table="order", where={"id": 12}),
        {"kind": "row_exists", "table": "nope"},
        FieldEquals(table="customer", where={"id": 2}, field="tier", value="silver"),
    ]
    result = evaluate(checks, shop)
    assert [o.check_id for o in result.outcomes] == ["has-order", "check-1", "check-2"]
    assert [o.passed for o in result.outcomes] == [True, False, True]
    assert not result.passed and result.reward == 0.0
    assert [o.check_id for o in result.failures] == ["check-1"]
    assert evaluate(checks[:1], shop).reward == 1.0
    assert evaluate([], shop).passed


def test_evaluation_is_deterministic(shop: Evidence, bindings: dict[str, Any]) -> None:
    checks = [
        {"kind": "no_other_changes"},
        {"kind": "return_contains", "tool": "get_order", "value": {"status": "x"}},
        {"kind": "call_made", "tool": "create_order", "min_count": 5},
    ]
    first = evaluate(checks, shop, bindings)
    for _ in range(3):
        assert evaluate(checks, shop, bindings) == first


# ------------------------------------------------------------------ malformed checks


@pytest.mark.parametrize(
    ("check", "message"),
    [
        ({"kind": "row_exist", "table": "t"}, "kind"),
        ({"kind": "field_equals", "table": "t", "field": "x"}, "where"),
        ({"kind": "row_exists", "table": "t", "where": "id=1"}, "where"),
        ({"kind": "row_exists", "table": "t", "extra": 1}, "extra"),
        ({"kind": "row_exists", "table": " "}, "table is empty"),
        ({"kind": "row_count", "table": "t", "value": "many"}, "must be a number"),
        ({"kind": "row_count", "table": "t", "op": "contains", "value": 1}, "does not support op"),
        (
            {
                "kind": "field_equals",
                "table": "t",
                "where": {},
                "field": "f",
                "op": "in",
                "value": "a",
            },
            "needs a list",
        ),
        (
            {"kind": "row_exists", "table": "t", "where": {"x": {"$gte": 1}}},
            r"unknown operator '\$gte'",
        ),
        ({"kind": "call_made", "tool": "t", "min_count": 3, "max_count": 1}, "below min_count"),
        ({"kind": "workspace_file", "path": "/"}, "path is empty"),
        ({"kind": "workspace_file", "path": "a", "exists": False, "contains": "x"}, "exists=false"),
        (
            {"kind": "diff_contains", "table": "t", "change": "insert", "fields": ["a"]},
            "updates only",
        ),
        ({"kind": "diff_contains", "table": "t", "change": "upsert"}, "change"),
    ],
)
def test_malformed_checks_raise_check_error(
    shop: Evidence, check: dict[str, Any], message: str
) -> None:
    with pytest.raises(CheckError, match=message) as info:
        evaluate([{"kind": "row_count", "table": "order", "value": 3}, check], shop)
    assert isinstance(info.value, UserError)
    assert "check 1" in str(info.value)


def test_all_malformed_checks_are_reported_at_once(shop: Evidence) -> None:
    with pytest.raises(CheckError) as info:
        evaluate(
            [{"kind": "nope"}, {"id": "c2", "kind": "row_count", "table": "t", "value": "x"}], shop
        )
    text = str(info.value)
    assert "check 0" in text and "check 1 ('c2')" in text and "1 more" in text


def test_non_check_object_is_refused(shop: Evidence) -> None:
    with pytest.raises(CheckError, match="not a check"):
        evaluate([42], shop)  # type: ignore[list-item]


def test_check_set_with_its_own_bindings(shop: Evidence) -> None:
    from weft_core.models import CheckSet

    check = {
        "kind": "row_exists",
        "table": "order",
        "where": {"id": {"$binding": "order.id"}, "status": "shipped"},
    }
    verifier = CheckSet(name="ship", checks=[check], bindings={"order": {"id": 10}})
    assert evaluate(verifier, shop).passed
    assert not evaluate(verifier, shop, {"order": {"id": 11}}).passed  # task bindings win
