"""Typed trace failures, and schema-1 traces (an `error` string) loading as schema 2.

`data/traces_schema1.jsonl` was written by weft-core before this change (schema 1), so the
hashes in it are the old code's, not recomputed here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from weft_core.exceptions import ArtifactError
from weft_core.models import FailureKind, Trace, TraceFailure
from weft_core.models.trace import failures_from_v1

SCHEMA1 = Path(__file__).parent / "data" / "traces_schema1.jsonl"


def _schema1() -> dict[str, str]:
    lines = SCHEMA1.read_text(encoding="utf-8").splitlines()
    return {json.loads(line)["id"]: line for line in lines}


def test_new_trace_carries_typed_failures_at_the_current_schema() -> None:
    trace = Trace(
        id="r",
        task_id="t",
        view="agentic/full",
        harness="react",
        failures=[
            TraceFailure(kind=FailureKind.VERIFIER, message="no such table", where="checkpoint n1")
        ],
    )
    loaded = Trace.from_json(trace.to_json())
    # typed failures came with schema 2; schema 3 (per-turn state diffs) kept them
    assert loaded.schema_version == Trace.SCHEMA_VERSION >= 2
    assert loaded.failures == trace.failures
    assert loaded.error == "verifier at checkpoint n1: no such table"
    assert not loaded.failed_on_infrastructure
    assert Trace(id="r", task_id="t", view="v", harness="h").error is None


def test_the_old_error_field_is_refused_on_a_new_trace() -> None:
    with pytest.raises(ValueError, match="error"):
        Trace(id="r", task_id="t", view="v", harness="h", error="x")  # type: ignore[call-arg]


def test_schema1_traces_load_with_their_failures_typed() -> None:
    traces = {i: Trace.from_json(line, source=f"schema1:{i}") for i, line in _schema1().items()}
    assert traces["r-clean"].failures == [] and traces["r-clean"].ledger[0].duration_ms == 4.2
    infra = traces["r-infra"]
    assert infra.failed_on_infrastructure and infra.infrastructure_retries == 2
    assert infra.failures == [
        TraceFailure(
            kind=FailureKind.INFRASTRUCTURE,
            message="ConnectError: [Errno 111] Connection refused",
        )
    ]
    verifier = traces["r-verifier"].failures
    assert [f.kind for f in verifier] == [FailureKind.VERIFIER]
    assert verifier[0].message.endswith("harness stopped: max_turns")  # no text lost
    assert traces["r-harness"].failures[0].kind is FailureKind.HARNESS
    for t in traces.values():
        assert t.schema_version == 2
        t.verify_hash()  # resealed under schema 2


def test_migrated_trace_saves_as_schema_2_and_reloads(tmp_path: Path) -> None:
    trace = Trace.from_json(_schema1()["r-infra"])
    path = trace.save(tmp_path / "t.json")
    raw = json.loads(path.read_text())
    assert raw["schema_version"] == 2 and "error" not in raw
    assert raw["failures"][0]["kind"] == "infrastructure"
    assert Trace.load(path) == Trace.from_json(path.read_text())


def test_a_tampered_schema1_trace_is_still_caught() -> None:
    raw = json.loads(_schema1()["r-infra"])
    raw["error"] = "infrastructure: something else"
    with pytest.raises(ArtifactError, match="content_hash"):
        Trace.from_json(json.dumps(raw), source="edited.json")
    raw = json.loads(_schema1()["r-clean"])
    raw["ledger"][0]["tool"] = "delete_contact"
    with pytest.raises(ArtifactError, match="content_hash"):
        Trace.from_json(json.dumps(raw))


def test_schema1_loads_through_plain_validation_too() -> None:
    # readers that validate without the hash check (the report) get the same typed failures
    trace = Trace.model_validate_json(_schema1()["r-infra"])
    assert trace.failed_on_infrastructure and trace.schema_version == 2


@pytest.mark.parametrize(
    ("error", "kind", "where"),
    [
        ("infrastructure: ReadTimeout: ", FailureKind.INFRASTRUCTURE, None),
        ("harness stopped: max_turns", FailureKind.HARNESS, "harness"),
        ("harness 'x' does not support simuser mode", FailureKind.HARNESS, None),
        ("final verification: verifier error: boom", FailureKind.VERIFIER, "final verification"),
        ("tool call c1 (get) reached no ledger entry", FailureKind.LEDGER, "ledger"),
        ("ValueError: bad task", FailureKind.ROLLOUT, None),
    ],
)
def test_failures_from_v1_reads_each_old_form(
    error: str, kind: FailureKind, where: str | None
) -> None:
    (failure,) = failures_from_v1(error)
    assert failure.kind is kind and failure.where == where
    assert failures_from_v1(None) == [] and failures_from_v1("") == []
