"""A two-node CRM task and traces of it, as the rollout runner writes them."""

from __future__ import annotations

import json
from typing import Any

from weft_core.models import (
    AtomicTask,
    ChatMessage,
    CheckOutcome,
    EvaluationResult,
    LedgerEntry,
    TaskGraph,
    TaskInput,
    TaskNode,
    ToolCall,
    ToolCallFunction,
    Trace,
    TraceFailure,
    TurnSegment,
)

CHECKS = [
    {
        "kind": "field_equals",
        "table": "customer",
        "where": {"id": 3},
        "field": "tier",
        "value": "vip",
    }
]


def crm_task(task_id: str = "task-1", checks: list[dict[str, Any]] | None = None) -> TaskGraph:
    find = AtomicTask(
        id="find",
        mcp="crm",
        intent="Find the customer with email ann@ex.com",
        inputs=[TaskInput(name="email", value="ann@ex.com")],
        tool_chain=["find_customer"],
    )
    upgrade = AtomicTask(
        id="upgrade",
        mcp="crm",
        intent="Upgrade that customer to the vip tier",
        inputs=[TaskInput(name="tier", value="vip")],
        tool_chain=["update_tier"],
        writes=True,
        checks=checks if checks is not None else CHECKS,  # type: ignore[arg-type]
    )
    return TaskGraph(
        id=task_id,
        objective="Make Ann a VIP customer",
        nodes=[
            TaskNode(id="n1", task=find, intent=find.intent, inputs=find.inputs),
            TaskNode(
                id="n2",
                task=upgrade,
                intent=upgrade.intent,
                inputs=upgrade.inputs,
                checks=checks if checks is not None else CHECKS,
            ),  # type: ignore[arg-type]
        ],
        order=["n1", "n2"],
    )


def trace(
    trace_id: str,
    calls: list[tuple[str, dict[str, Any], bool]],
    verifier: tuple[bool, bool],
    *,
    reply: str | None = "Ann is now a VIP customer.",
    failures: list[TraceFailure] | None = None,
) -> Trace:
    """`calls`: (tool, arguments, mutated); `verifier`: the checkpoint outcomes of n1 and n2."""
    messages = [ChatMessage(role="user", content="Please make Ann (ann@ex.com) a VIP.")]
    ledger = []
    for i, (tool, args, mutated) in enumerate(calls):
        cid = f"c{i}"
        messages.append(
            ChatMessage(
                role="assistant",
                tool_calls=[
                    ToolCall(
                        id=cid, function=ToolCallFunction(name=tool, arguments=json.dumps(args))
                    )
                ],
            )
        )
        messages.append(ChatMessage(role="tool", tool_call_id=cid, content='{"ok": true}'))
        ledger.append(
            LedgerEntry(
                seq=i,
                session_id="s",
                mcp="crm",
                tool=tool,
                arguments=args,
                result={"ok": True},
                mutated=mutated,
                call_id=cid,
            )
        )
    if reply:
        messages.append(ChatMessage(role="assistant", content=reply))

    def outcome(ok: bool) -> EvaluationResult:
        return EvaluationResult(
            outcomes=[CheckOutcome(check_id="c", kind="field_equals", passed=ok)]
        )

    segments = [
        TurnSegment(node_id="n1", start=0, end=len(messages), outcome=outcome(verifier[0])),
        TurnSegment(node_id="n2", start=0, end=len(messages), outcome=outcome(verifier[1])),
    ]
    return Trace(
        id=trace_id,
        task_id="task-1",
        view="agentic/full",
        harness="react",
        messages=messages,
        ledger=ledger,
        segments=segments,
        failures=failures or [],
    )


FULL = [
    ("find_customer", {"email": "ann@ex.com"}, False),
    ("update_tier", {"id": 3, "tier": "vip"}, True),
]
HALF = [("find_customer", {"email": "ann@ex.com"}, False)]
NONE: list[tuple[str, dict[str, Any], bool]] = []


def pilots(verifier_ok: bool = True) -> list[Trace]:
    """Eight pilots of mixed quality. With `verifier_ok=False` the verifier rejects complete
    solutions and rewards incomplete ones (the failure the filter exists to catch)."""
    shapes = [FULL, FULL, FULL, HALF, HALF, NONE, FULL, HALF]
    out = []
    for i, calls in enumerate(shapes):
        full, half = calls is FULL, calls is not NONE
        v = (half, full) if verifier_ok else (not half, not full)
        out.append(trace(f"p{i}", calls, v, reply=None if calls is NONE else "Done."))
    return out
