import json

from weft.cli import main
from weft_core.models import (
    ChatMessage,
    CheckOutcome,
    EvaluationResult,
    LedgerEntry,
    ToolCall,
    ToolCallFunction,
    Trace,
    TurnSegment,
)
from weft_tasks.rollout import TraceSink

OK = EvaluationResult(outcomes=[CheckOutcome(check_id="c", kind="row_exists", passed=True)])


def _trace(tid, ledger_args):
    call = ToolCall(
        id="k1", function=ToolCallFunction(name="crm_get", arguments=json.dumps({"id": 1}))
    )
    return Trace(
        id=tid,
        task_id="t",
        view="agentic/full",
        harness="teacher",
        messages=[
            ChatMessage(role="user", content="go"),
            ChatMessage(role="assistant", tool_calls=[call]),
            ChatMessage(role="tool", tool_call_id="k1", content="{}"),
        ],
        ledger=[
            LedgerEntry(
                seq=0, session_id="s", mcp="crm", tool="get", arguments=ledger_args, call_id="k1"
            )
        ],
        segments=[TurnSegment(node_id="n1", start=0, end=3, outcome=OK)],
        final=OK,
    )


def test_verify_accepts_agreeing_traces_and_rejects_a_disagreeing_one(tmp_path, capsys):
    sink = TraceSink(tmp_path / "traces.jsonl")
    sink.append(_trace("good", {"id": 1}))
    assert main(["verify", str(sink.path)]) == 0
    assert "1/1 traces verified" in capsys.readouterr().out
    sink.append(_trace("bad", {"id": 2}))  # the ledger says the call had other arguments
    assert main(["verify", str(sink.path)]) == 1
    assert "1/2 traces verified" in capsys.readouterr().out
    assert main(["verify", str(tmp_path / "missing.jsonl")]) == 2
