"""Operational feedback: the rollout ledgers' backend faults reach the per-tool stats, so a route
the reference never calls is revalidated after one stray call that hit a fault."""

from weft_core.models import Trace
from weft_evolve.evidence.stats import backend_faults, with_faults
from weft_evolve.models import ToolStats

from ..conftest import ledger_entry


def _trace(*entries):
    return Trace(
        id="r", task_id="task-1", view="agentic/full", harness="react", ledger=list(entries)
    )


def test_undeclared_error_is_a_fault_and_declared_ones_are_not(contracts):
    traces = [
        _trace(
            ledger_entry(
                0, "get_order", {"order_id": "X"}, "not_found: order not found", error=True
            ),
            ledger_entry(
                1, "update_order", {}, "invalid_arguments: order_id: required", error=True
            ),
            ledger_entry(
                2, "update_order", {"order_id": "ORD-1"}, "internal_error: RuntimeError", error=True
            ),
        ),
        _trace(
            ledger_entry(
                0, "update_order", {"order_id": "ORD-2"}, "internal_error: KeyError", error=True
            )
        ),
    ]
    assert backend_faults(traces, contracts) == {("shop", "update_order"): 2}


def test_a_tool_without_a_contract_is_not_judged(contracts):
    t = _trace(ledger_entry(0, "mystery", {}, "internal_error: boom", error=True))
    assert backend_faults([t], contracts) == {}
    assert backend_faults([t], {}) == {}


def test_faults_join_megamcp_counters_and_add_unseen_tools():
    stats = [ToolStats(mcp="shop", tool="get_order", calls=10, errors=1)]
    merged = with_faults(stats, {("shop", "get_order"): 1, ("shop", "cancel_order"): 1})
    by = {s.tool: s for s in merged}
    assert by["get_order"].faults == 1 and by["get_order"].calls == 10
    # below any error-rate threshold, yet flagged: one undeclared error is a backend fault
    assert by["cancel_order"].faults == 1 and by["cancel_order"].calls == 1
    assert stats[0].faults == 0  # the round's MegaMCP reading is not changed in place


def test_one_fault_flags_a_rarely_called_tool_but_caller_errors_need_a_rate():
    from weft_evolve.rounds import flagged_tools
    from weft_evolve.settings import EvolveSettings

    settings = EvolveSettings(min_calls_for_rate=4, error_rate_threshold=0.5)
    stray = ToolStats(mcp="shop", tool="cancel_order", calls=1, errors=1, faults=1)
    misuse = ToolStats(mcp="shop", tool="get_order", calls=2, errors=2)  # callers' mistakes
    busy = ToolStats(mcp="shop", tool="update_order", calls=8, errors=5)
    crash = ToolStats(mcp="shop", tool="list_orders", calls=1, crashes=1)
    names = [t.tool for t in flagged_tools([stray, misuse, busy, crash], settings)]
    assert names == ["cancel_order", "update_order", "list_orders"]
