from weft_core.models import FailureKind, Trace, TraceFailure
from weft_tasks.rollout import TraceSink


def _t(i, failures=()):
    return Trace(id=i, task_id="t", view="agentic/full", harness="teacher", failures=list(failures))


def test_append_load_dedupes_by_id_and_skips_torn_lines(tmp_path):
    sink = TraceSink(tmp_path / "x" / "traces.jsonl")
    assert sink.load() == ([], [])
    down = TraceFailure(kind=FailureKind.INFRASTRUCTURE, message="ConnectError")
    sink.append(_t("a", [down]))
    sink.append(_t("b"))
    with sink.path.open("a") as fh:
        fh.write('{"id": "c", "task_')  # a crash mid-line
    sink.append(_t("a"))  # the rerun of a after its infrastructure failure
    traces, problems = sink.load()
    assert [t.id for t in traces] == ["b", "a"]
    assert traces[1].error is None and traces[1].failures == []
    assert len(problems) == 1 and ":3:" in problems[0]
    assert all(t.verify_hash() is None for t in traces)


def test_a_hand_edited_trace_is_reported_not_loaded(tmp_path):
    sink = TraceSink(tmp_path / "traces.jsonl")
    sink.append(_t("a"))
    sink.path.write_text(sink.path.read_text().replace('"teacher"', '"react"'))
    traces, problems = sink.load()
    assert traces == [] and "does not match its hash" in problems[0]


def test_rewrite_orders_the_file_and_old_traces_still_load(tmp_path):
    import json

    from weft_core._hashing import content_hash

    sink = TraceSink(tmp_path / "traces.jsonl")
    for i in ("c", "a", "b"):
        sink.append(_t(i))
    sink.rewrite(sorted(sink.load()[0], key=lambda t: t.id))
    assert [json.loads(x)["id"] for x in sink.path.read_text().splitlines()] == ["a", "b", "c"]
    # a line sealed by an older weft-core (the hash then covered every field)
    raw = json.loads(_t("old").model_dump_json())
    raw.pop("task_hash")
    raw["content_hash"] = content_hash(
        {k: v for k, v in raw.items() if k not in ("content_hash", "version")}
    )
    with sink.path.open("a") as fh:
        fh.write(json.dumps(raw) + "\n")
    traces, problems = sink.load()
    assert problems == [] and [t.id for t in traces] == ["a", "b", "c", "old"]
