"""A small run folder laid out as `weft run` writes it: two MCPs (one failed), their atomic
libraries, one composed two-MCP task, and traces from a reference teacher and a model policy
that fails a checkpoint, makes a tool error and was rerun after an infrastructure failure."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from weft.summary import MCPRow, PipelineSummary
from weft_core.models import (
    AtomicTask,
    ChatMessage,
    CheckOutcome,
    EntityBinding,
    EvaluationResult,
    FailureKind,
    LedgerEntry,
    ReferenceCall,
    TaskEdge,
    TaskGraph,
    TaskInput,
    TaskNode,
    ToolCall,
    ToolCallFunction,
    Trace,
    TraceFailure,
    TurnSegment,
)
from weft_core.models.check import FieldEquals, ReturnContains
from weft_core.models.ledger import ErrorKind
from weft_core.state import CheckpointDiff, SessionChanges, diff_sqlite

POLICY_MODEL = "openai:gpt-4o-mini"


def _write(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1), encoding="utf-8")


def _graph() -> TaskGraph:
    find = AtomicTask(
        id="crm.t001",
        mcp="crm",
        intent="Look up customer Ada and report her email",
        tool_chain=["get_customer"],
        reference_calls=[ReferenceCall(tool="get_customer", arguments={"customer_id": "C1"})],
        checks=[ReturnContains(id="c1", tool="get_customer", value="ada@x.io")],
        outputs={"email": "customer email"},
    )
    ticket = AtomicTask(
        id="helpdesk.t002",
        mcp="helpdesk",
        intent="Open a ticket for the customer",
        tool_chain=["create_ticket"],
        reference_calls=[ReferenceCall(tool="create_ticket", arguments={"email": "{{email}}"})],
        checks=[
            FieldEquals(
                id="c1",
                table="ticket",
                where={"email": "ada@x.io"},
                field="status",
                value="open",
            )
        ],
        writes=True,
    )
    return TaskGraph(
        id="standard-0-00001",
        objective="Handle Ada's complaint across CRM and helpdesk",
        profile="Standard",
        nodes=[
            TaskNode(id="n1", task=find, intent=find.intent, checks=find.checks),
            TaskNode(
                id="n2",
                task=ticket,
                intent=ticket.intent,
                inputs=[
                    TaskInput(name="email", source="upstream", from_node="n1", from_output="email")
                ],
                checks=ticket.checks,
            ),
        ],
        edges=[TaskEdge(source="n1", target="n2", kind="information", fields=["email"])],
        bindings=[
            EntityBinding(
                name="customer",
                entity="customer",
                value={"email": "ada@x.io"},
                refs={"crm": "customer", "helpdesk": "requester"},
            )
        ],
        order=["n1", "n2"],
    )


def _call(cid: str, name: str, args: dict[str, Any]) -> ChatMessage:
    return ChatMessage(
        role="assistant",
        tool_calls=[
            ToolCall(id=cid, function=ToolCallFunction(name=name, arguments=json.dumps(args)))
        ],
    )


def _helpdesk_db(path: Path, script: str) -> Path:
    conn = sqlite3.connect(path)
    conn.executescript(script)
    conn.commit()
    conn.close()
    return path


def _turn_diffs(root: Path, *, fail_n2: bool) -> tuple[CheckpointDiff, CheckpointDiff]:
    """Each turn's state diff as MegaMCP computes it, on real SQLite files: the lookup changes
    nothing; a created ticket inserts its row and bumps its queue's open count."""
    root.mkdir(parents=True, exist_ok=True)
    seed = _helpdesk_db(
        root / "seed.sqlite",
        "CREATE TABLE ticket (id TEXT PRIMARY KEY, email TEXT, status TEXT);"
        "CREATE TABLE queue (name TEXT PRIMARY KEY, open INTEGER, updated TEXT);"
        "INSERT INTO queue VALUES ('support', 4, '2026-01-01');",
    )
    after = root / "n2.sqlite"
    shutil.copyfile(seed, after)
    if not fail_n2:
        _helpdesk_db(
            after,
            "INSERT INTO ticket VALUES ('T9', 'ada@x.io', 'open');"
            "UPDATE queue SET open = 5, updated = '2026-01-02' WHERE name = 'support';",
        )
    n1 = CheckpointDiff(
        since="initial",
        mcps={"crm": SessionChanges(), "helpdesk": SessionChanges(db=diff_sqlite(seed, seed))},
        max_rows=200,
    )
    n2 = CheckpointDiff(
        since="n1",
        mcps={"crm": SessionChanges(), "helpdesk": SessionChanges(db=diff_sqlite(seed, after))},
        max_rows=200,
    )
    return n1, n2


def _trace(rid: str, harness: str, model: str, root: Path, *, fail_n2: bool) -> Trace:
    messages = [
        ChatMessage(role="user", content="Find Ada's email, then open a ticket for her."),
        _call("call_0", "crm_get_customer", {"customer_id": "C1"}),
        ChatMessage(role="tool", tool_call_id="call_0", content='{"email": "ada@x.io"}'),
        _call("call_1", "helpdesk_create_ticket", {"email": "ada@x"}),
        ChatMessage(role="tool", tool_call_id="call_1", content="error: invalid email"),
        ChatMessage(role="assistant", content="Done."),
    ]
    ledger = [
        LedgerEntry(
            seq=0,
            session_id="s1",
            mcp="crm",
            tool="get_customer",
            call_id="call_0",
            arguments={"customer_id": "C1"},
            result={"email": "ada@x.io"},
        ),
        LedgerEntry(
            seq=0,
            session_id="s2",
            mcp="helpdesk",
            tool="create_ticket",
            call_id="call_1",
            arguments={"email": "ada@x"},
            is_error=fail_n2,
            error_kind=ErrorKind.TOOL_ERROR if fail_n2 else None,
            mutated=not fail_n2,
            state_version=0 if fail_n2 else 1,
            result="error: invalid email" if fail_n2 else {"ticket_id": "T9"},
        ),
    ]
    diff1, diff2 = _turn_diffs(root / rid, fail_n2=fail_n2)
    ok = EvaluationResult(
        outcomes=[
            CheckOutcome(
                check_id="n1.c1", kind="return_contains", passed=True, reason="returned 'ada@x.io'"
            )
        ]
    )
    n2 = EvaluationResult(
        outcomes=[
            CheckOutcome(
                check_id="n2.c1",
                kind="field_equals",
                passed=not fail_n2,
                reason="no row of ticket matches {'email': 'ada@x.io'}"
                if fail_n2
                else "ticket.status = 'open'",
            )
        ]
    )
    return Trace(
        id=rid,
        task_id="standard-0-00001",
        view="simuser/vague",
        harness=harness,
        model=model,
        messages=messages,
        ledger=ledger,
        segments=[
            TurnSegment(
                node_id="n1",
                start=0,
                end=3,
                ledger_seqs={"crm": [0]},
                outcome=ok,
                state_diff=diff1,
            ),
            TurnSegment(
                node_id="n2",
                start=3,
                end=6,
                ledger_seqs={"helpdesk": [0]},
                outcome=n2,
                attempts=2 if fail_n2 else 1,
                state_diff=diff2,
            ),
        ],
        final=EvaluationResult(outcomes=ok.outcomes + n2.outcomes),
        infrastructure_retries=1 if fail_n2 else 0,
    )


def write_run(root: Path) -> Path:
    """The run folder; returns it."""
    out = root / "run"
    for key, slug, status, domain, n_cert in (
        ("k1", "crm", "certified", "CRM", 2),
        ("k2", "helpdesk", "certified", "Customer Support", 1),
        ("k3", "broken", "failed", "Finance", 0),
    ):
        bundle = out / "stages" / "envs" / key / slug
        _write(
            bundle / "manifest.json",
            {
                "name": slug,
                "domain": domain,
                "tools": [
                    {"name": f"tool{i}", "certified": i < n_cert, "reason": None} for i in range(2)
                ],
            },
        )
        _write(
            out / "stages" / "envs" / key / "done.json",
            {
                "source": f"/elsewhere/{slug}.json",
                "slug": slug,
                "status": status,
                "bundle": str(bundle),
                "tools_total": 2,
                "tools_certified": n_cert,
                "reason": "no tool certified" if status == "failed" else None,
            },
        )
    for key, mcp, tasks in (("a1", "crm", 3), ("a2", "helpdesk", 2)):
        lib = out / "stages" / "atomic" / key / mcp
        _write(lib / "library.json", {"mcp": mcp, "tools": ["tool0", "tool1"], "tasks": []})
        _write(
            out / "stages" / "atomic" / key / "done.json",
            {"mcp": mcp, "library": str(lib), "tasks": tasks, "coverage": 1.0},
        )
    graph = _graph()
    compose = out / "stages" / "compose" / "c1"
    graph.save(compose / "tasks" / f"{graph.id}.json")
    _write(compose / "done.json", {"tasks": [graph.id], "failures": []})
    traces = out / "stages" / "rollouts" / "r1" / "traces.jsonl"
    traces.parent.mkdir(parents=True)
    infra = Trace(
        id="r-policy",
        task_id=graph.id,
        view="simuser/vague",
        harness="react",
        model=POLICY_MODEL,
        failures=[
            TraceFailure(kind=FailureKind.INFRASTRUCTURE, message="ServerCrash: helpdesk died")
        ],
    )
    lines = [
        _trace("r-teacher", "teacher", "reference-chain", root / "dbs", fail_n2=False),
        infra,
        _trace("r-policy", "react", POLICY_MODEL, root / "dbs", fail_n2=True),
    ]
    traces.write_text(
        "".join(t.sealed().model_dump_json() + "\n" for t in lines) + '{"torn": \n',
        encoding="utf-8",
    )
    summary = PipelineSummary(
        out_dir=str(out),
        mcps=[
            MCPRow(name="crm", source="crm.json", status="certified"),
            MCPRow(name="helpdesk", source="helpdesk.json", status="certified"),
            MCPRow(name="broken", source="broken.json", status="failed"),
        ],
        traces_path=str(traces),
        traces=2,
        traces_verified=1,
    )
    (out / "summary.json").write_text(summary.model_dump_json(indent=1), encoding="utf-8")
    return out


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    return write_run(tmp_path)
