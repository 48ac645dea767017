import hashlib
import json
from pathlib import Path

from weft.cli import main
from weft_core.models import (
    ChatMessage,
    CheckOutcome,
    EvaluationResult,
    LedgerEntry,
    SnapshotRef,
    TaskGraph,
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


def test_verify_catches_a_tampered_moved_corpus(tmp_path: Path) -> None:
    """`weft verify` of a corpus fails when a reference does not resolve or is absolute."""
    from weft.verify import verify_corpus
    from weft_core.refs import mark_corpus_root

    root = mark_corpus_root(tmp_path / "c")
    lib = root / "stages" / "atomic" / "k" / "crm"
    lib.mkdir(parents=True)
    (root / "stages" / "atomic" / "k" / "done.json").write_text(
        json.dumps({"mcp": "crm", "library": "stages/atomic/k/gone"})
    )
    (root / "summary.json").write_text(json.dumps({"traces_path": "/tmp/abs/traces.jsonl"}))
    data = b"SQLite format 3\x00 the grounded state"
    sha = hashlib.sha256(data).hexdigest()
    graph = TaskGraph(
        id="t1",
        objective="o",
        nodes=[],
        initial_snapshots={"crm": SnapshotRef(mcp="crm", uri=f"sha256:{sha}", sha256=sha)},
    )
    graph.save(root / "stages" / "compose" / "k" / "tasks" / "t1.json")
    copy = root / "stages" / "compose" / "k" / "snapshots" / f"{sha}.sqlite"
    copy.parent.mkdir(parents=True)
    copy.write_bytes(data)
    check = verify_corpus(root)
    assert check.checked["snapshots"] == 1
    assert len(check.problems) == 2, check.problems
    assert any("does not resolve" in p for p in check.problems), check.problems
    assert any("absolute local path" in p for p in check.problems), check.problems
    copy.write_bytes(data + b"tampered")
    assert any("holds other bytes" in p for p in verify_corpus(root).problems)
    copy.unlink()
    assert any("held nowhere" in p for p in verify_corpus(root).problems)


def test_replay_needs_the_model_the_recording_was_made_with(tmp_path: Path, capsys) -> None:
    examples = Path(__file__).resolve().parents[3] / "examples" / "pipeline.toml"
    calls = tmp_path / "model-calls.jsonl"
    calls.write_text("")
    args = ["run", str(examples), "--out", str(tmp_path / "out"), "--replay", str(calls)]
    assert main(args) == 2
    assert "--replay needs the model" in capsys.readouterr().err


def test_verify_checks_a_grounded_workspace_tarball(tmp_path: Path) -> None:
    """A file MCP's initial workspace is part of the task's state: `weft verify` re-hashes it."""
    from weft.verify import verify_corpus
    from weft_core.refs import mark_corpus_root

    root = mark_corpus_root(tmp_path / "c")
    db, ws = b"SQLite format 3\x00 db", b"\x1f\x8b a workspace tarball"
    db_sha, ws_sha = hashlib.sha256(db).hexdigest(), hashlib.sha256(ws).hexdigest()
    ref = SnapshotRef(
        mcp="files", uri=f"sha256:{db_sha}", sha256=db_sha, workspace_uri=f"sha256:{ws_sha}"
    )
    TaskGraph(id="t1", objective="o", nodes=[], initial_snapshots={"files": ref}).save(
        root / "stages" / "compose" / "k" / "tasks" / "t1.json"
    )
    snaps = root / "stages" / "compose" / "k" / "snapshots"
    snaps.mkdir(parents=True)
    (snaps / f"{db_sha}.sqlite").write_bytes(db)
    tarball = snaps / f"{ws_sha}.tar.gz"
    tarball.write_bytes(ws)
    check = verify_corpus(root)
    assert check.problems == [] and check.checked["workspaces"] == 1
    tarball.write_bytes(ws + b"tampered")
    assert any("holds other bytes" in p for p in verify_corpus(root).problems)
    tarball.unlink()
    problems = verify_corpus(root).problems
    assert any("workspace of files" in p and "held nowhere" in p for p in problems), problems
