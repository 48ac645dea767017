"""Per-tool error rates and crash statistics per MCP version, as JSON and Prometheus text."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from weft_core.models.ledger import ErrorKind, LedgerEntry
from weft_megamcp.metrics import (
    MetricsAggregator,
    MetricsReport,
    compute_metrics,
    render_prometheus,
)


def entry(
    seq: int,
    tool: str,
    *,
    mcp: str = "notes",
    version: int | None = 1,
    session: str = "s1",
    kind: ErrorKind | None = None,
    ms: float = 10.0,
    mutated: bool = False,
) -> LedgerEntry:
    return LedgerEntry(
        seq=seq,
        session_id=session,
        mcp=mcp,
        mcp_version=version,
        tool=tool,
        is_error=kind is not None,
        error_kind=kind,
        duration_ms=ms,
        mutated=mutated,
    )


def ledger() -> list[LedgerEntry]:
    return [
        entry(0, "add_note", ms=5, mutated=True),
        entry(1, "add_note", ms=7, kind=ErrorKind.INVALID_ARGUMENTS),
        entry(2, "add_note", ms=9, kind=ErrorKind.SERVER_CRASH),
        entry(3, "list_notes", ms=1),
        entry(0, "add_note", session="s2", ms=6, mutated=True),
        entry(1, "nope", session="s2", kind=ErrorKind.UNKNOWN_TOOL),
        entry(0, "add_note", version=2, session="s3", ms=4, mutated=True),
        entry(0, "search", mcp="web", version=None, session="s3", kind=ErrorKind.TIMEOUT, ms=60000),
    ]


def test_per_tool_and_per_version_statistics() -> None:
    report = compute_metrics(ledger())
    assert report.total_calls == 8 and report.total_errors == 4
    v1 = report.find("notes", 1)
    assert v1 is not None
    assert (v1.calls, v1.errors, v1.crashes, v1.sessions, v1.sessions_with_crash) == (6, 3, 1, 2, 1)
    assert v1.error_rate == 0.5 and v1.crash_rate == round(1 / 6, 6)
    add = next(t for t in v1.tools if t.tool == "add_note")
    assert (add.calls, add.errors, add.policy_errors, add.infrastructure_errors, add.crashes) == (
        4,
        2,
        1,
        1,
        1,
    )
    assert add.errors_by_kind == {"invalid_arguments": 1, "server_crash": 1}
    assert add.mutating_calls == 2
    assert add.latency_ms_p50 == 7.0
    v2 = report.find("notes", 2)
    assert v2 is not None and v2.calls == 1 and v2.errors == 0  # versions are kept apart
    web = report.find("web")
    assert web is not None and web.mcp_version is None and web.tools[0].infrastructure_errors == 1


def test_json_roundtrip_and_out_of_call_crashes() -> None:
    agg = MetricsAggregator()
    agg.observe_many(ledger())
    agg.record_crash("notes", 2, session_id="s3")
    agg.record_crash("ghost", 1)  # a crash with no calls must not divide by zero
    report = MetricsReport.model_validate_json(agg.report().model_dump_json())
    v2 = report.find("notes", 2)
    assert (
        v2 is not None and v2.crashes == 1 and v2.sessions_with_crash == 1 and v2.crash_rate == 1.0
    )
    ghost = report.find("ghost", 1)
    assert ghost is not None and ghost.crashes == 1 and ghost.crash_rate == 0.0


def test_prometheus_text_parses_and_matches_json() -> None:
    report = compute_metrics(ledger())
    text = render_prometheus(report, gauges={"groups": 3})
    families = {f.name: f for f in text_string_to_metric_families(text)}
    calls = {
        (s.labels["mcp"], s.labels["version"], s.labels["tool"]): s.value
        for s in families["weft_megamcp_tool_calls"].samples
        if s.name.endswith("_total")
    }
    assert calls[("notes", "1", "add_note")] == 4
    assert calls[("web", "", "search")] == 1
    errors = {
        (s.labels["tool"], s.labels["kind"]): s.value
        for s in families["weft_megamcp_tool_errors"].samples
        if s.name.endswith("_total") and s.labels["version"] == "1"
    }
    assert errors == {
        ("add_note", "invalid_arguments"): 1,
        ("add_note", "server_crash"): 1,
        ("<unknown>", "unknown_tool"): 1,  # an agent's made-up name is not a label
    }
    crashes = {
        s.labels["version"]: s.value
        for s in families["weft_megamcp_server_crashes"].samples
        if s.name.endswith("_total")
    }
    assert crashes["1"] == 1
    assert families["weft_megamcp_groups"].samples[0].value == 3
    # a second render is independent: a private registry, no duplicate-registration error
    assert render_prometheus(report) != ""


def test_empty_and_hostile_labels() -> None:
    empty = render_prometheus(compute_metrics([]))
    assert "# TYPE weft_megamcp_tool_calls_total counter" in empty
    assert "weft_megamcp_tool_calls_total{" not in empty
    weird = [entry(0, 'to"ol\nname', mcp="m{x}")]
    text = render_prometheus(compute_metrics(weird))
    fam = {f.name: f for f in text_string_to_metric_families(text)}
    sample = next(s for s in fam["weft_megamcp_tool_calls"].samples if s.name.endswith("_total"))
    assert sample.labels["tool"] == 'to"ol\nname' and sample.labels["mcp"] == "m{x}"


def test_reservoir_bounds_memory() -> None:
    agg = MetricsAggregator()
    agg.observe_many(entry(i, "t", ms=float(i % 100)) for i in range(10_000))
    t = agg.report().mcps[0].tools[0]
    assert t.calls == 10_000
    assert t.latency_ms_p50 is not None and 30 <= t.latency_ms_p50 <= 70


def test_one_sessions_family_histogram_latency_and_bounded_tool_labels() -> None:
    entries = [entry(i, "add_note", ms=float(i)) for i in range(1, 101)]
    # An agent probing 1,000 made-up tool names, and a server with 400 real ones.
    entries += [entry(i, f"made_up_{i}", kind=ErrorKind.UNKNOWN_TOOL) for i in range(1000)]
    entries += [entry(i, f"real_{i}", version=2) for i in range(400)]
    report = compute_metrics(entries)
    text = render_prometheus(report, gauges={"groups": 1, "sessions": 7})
    families = {f.name: f for f in text_string_to_metric_families(text)}
    # One family per name, and `weft_megamcp_sessions` means open sessions only.
    assert text.count("# TYPE weft_megamcp_sessions ") == 1
    assert [s.value for s in families["weft_megamcp_sessions"].samples] == [7]
    assert "weft_megamcp_mcp_sessions" in families
    # Latency is a histogram in seconds: cumulative buckets, _count == calls, _sum in seconds.
    lat = families["weft_megamcp_tool_latency_seconds"]
    assert lat.type == "histogram"
    add = [s for s in lat.samples if s.labels.get("tool") == "add_note"]
    buckets = {s.labels["le"]: s.value for s in add if s.name.endswith("_bucket")}
    assert buckets["0.01"] == 10 and buckets["0.05"] == 50 and buckets["+Inf"] == 100
    assert next(s.value for s in add if s.name.endswith("_count")) == 100
    assert abs(next(s.value for s in add if s.name.endswith("_sum")) - 5.05) < 1e-9
    assert all("quantile" not in s.labels for f in families.values() for s in f.samples)
    # Bounded tool labels.
    tools_v1 = {
        s.labels["tool"]
        for s in families["weft_megamcp_tool_calls"].samples
        if s.labels["version"] == "1"
    }
    assert tools_v1 == {"add_note", "<unknown>"}
    v2 = report.find("notes", 2)
    assert v2 is not None and len(v2.tools) == 257 and v2.calls == 400
    other = next(t for t in v2.tools if t.tool == "<other>")
    assert other.calls == 400 - 256


def test_merged_worker_reports_add_histograms() -> None:
    from weft_megamcp._stats_merge import merge_reports

    a = compute_metrics([entry(i, "t", ms=3.0) for i in range(5)])
    b = compute_metrics([entry(i, "t", ms=700.0, session="s9") for i in range(3)])
    merged = merge_reports([a, b]).mcps[0].tools[0]
    assert merged.calls == 8 and sum(merged.latency_ms_buckets) == 8
    assert merged.latency_ms_sum == 15.0 + 2100.0
