from weft_core.models import Trace
from weft_tasks.rollout import TraceSink


def _t(i, error=None):
    return Trace(id=i, task_id="t", view="agentic/full", harness="teacher", error=error)


def test_append_load_dedupes_by_id_and_skips_torn_lines(tmp_path):
    sink = TraceSink(tmp_path / "x" / "traces.jsonl")
    assert sink.load() == ([], [])
    sink.append(_t("a", error="infrastructure: ConnectError"))
    sink.append(_t("b"))
    with sink.path.open("a") as fh:
        fh.write('{"id": "c", "task_')  # a crash mid-line
    sink.append(_t("a"))  # the rerun of a after its infrastructure failure
    traces, problems = sink.load()
    assert [t.id for t in traces] == ["b", "a"]
    assert traces[1].error is None
    assert len(problems) == 1 and ":3:" in problems[0]
    assert all(t.verify_hash() is None for t in traces)


def test_a_hand_edited_trace_is_reported_not_loaded(tmp_path):
    sink = TraceSink(tmp_path / "traces.jsonl")
    sink.append(_t("a"))
    sink.path.write_text(sink.path.read_text().replace('"teacher"', '"react"'))
    traces, problems = sink.load()
    assert traces == [] and "does not match its hash" in problems[0]
