"""Prometheus text exposition of a `MetricsReport`, from a private CollectorRegistry.

Apart from `metrics` because prometheus_client (38 modules, ~2.3 MiB) is needed only where
`/metrics` is scraped, not in every serving process that folds ledger entries."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)

from weft_megamcp.metrics import LATENCY_BUCKETS_MS, MetricsReport

_GAUGE_HELP = {
    "groups": "Session groups open on this host.",
    "sessions": "Sessions open on this host (one per MCP of each open group).",
    "workers": "Live worker processes.",
}


class _ReportCollector:
    def __init__(self, report: MetricsReport, gauges: Mapping[str, float]) -> None:
        self.report = report
        self.gauges = gauges

    def collect(self) -> Iterator[Metric]:
        labels = ["mcp", "version", "tool"]
        calls = CounterMetricFamily("weft_megamcp_tool_calls", "Tool calls served.", labels=labels)
        errors = CounterMetricFamily(
            "weft_megamcp_tool_errors",
            "Tool calls that failed, by error kind.",
            labels=[*labels, "kind"],
        )
        rate = GaugeMetricFamily("weft_megamcp_tool_error_rate", "Errors per call.", labels=labels)
        latency = HistogramMetricFamily(
            "weft_megamcp_tool_latency_seconds", "Tool call latency.", labels=labels
        )
        crashes = CounterMetricFamily(
            "weft_megamcp_server_crashes",
            "Server crashes per MCP version.",
            labels=["mcp", "version"],
        )
        crash_rate = GaugeMetricFamily(
            "weft_megamcp_crash_rate",
            "Crashes per call per MCP version.",
            labels=["mcp", "version"],
        )
        # Not `weft_megamcp_sessions`: that is the host gauge of open sessions.
        sessions = CounterMetricFamily(
            "weft_megamcp_mcp_sessions",
            "Distinct sessions that called this MCP version.",
            labels=["mcp", "version"],
        )
        for m in self.report.mcps:
            v = "" if m.mcp_version is None else str(m.mcp_version)
            crashes.add_metric([m.mcp, v], m.crashes)
            crash_rate.add_metric([m.mcp, v], m.crash_rate)
            sessions.add_metric([m.mcp, v], m.sessions)
            for t in m.tools:
                lv = [m.mcp, v, t.tool]
                calls.add_metric(lv, t.calls)
                rate.add_metric(lv, t.error_rate)
                for kind, n in t.errors_by_kind.items():
                    errors.add_metric([*lv, kind], n)
                if t.latency_ms_buckets:
                    cumulative, running = [], 0
                    bounds = [*(f"{b / 1000:g}" for b in LATENCY_BUCKETS_MS), "+Inf"]
                    for bound, n in zip(bounds, t.latency_ms_buckets, strict=False):
                        running += n
                        cumulative.append((bound, running))
                    latency.add_metric(lv, cumulative, sum_value=t.latency_ms_sum / 1000)
        yield from (calls, errors, rate, latency, crashes, crash_rate, sessions)
        for name, value in sorted(self.gauges.items()):
            g = GaugeMetricFamily(f"weft_megamcp_{name}", _GAUGE_HELP.get(name, f"Host {name}."))
            g.add_metric([], value)
            yield g


def render(report: MetricsReport, gauges: Mapping[str, float]) -> str:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_ReportCollector(report, gauges))
    return generate_latest(registry).decode()
