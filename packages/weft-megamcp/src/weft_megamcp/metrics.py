"""Operational feedback (paper §3.3.3): per-tool error rates and crash statistics per MCP version.

`MetricsAggregator` folds LedgerEntry records (weft_core) as the host serves calls, or in bulk
from stored ledgers; `report()` gives a pydantic `MetricsReport` (JSON for self-evolution, which
uses it to send an MCP version back to revalidation or to a stronger isolation tier) and
`render_prometheus(report)` gives Prometheus text exposition from a private CollectorRegistry
(never the process-global default registry, so several hosts in one process do not collide).

Error kinds split into the policy's (tool_error, invalid_arguments, unknown_tool: the agent called
badly or the tool refused) and infrastructure (server_crash, timeout, infrastructure: the serving
side failed). A crash is a `server_crash` entry or one recorded with `record_crash` (a worker died
outside any call).
"""

from __future__ import annotations

import bisect
import random
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from weft_core.models.ledger import ErrorKind, LedgerEntry

if TYPE_CHECKING:
    from prometheus_client.core import Metric

__all__ = [
    "MCPVersionStats",
    "MetricsAggregator",
    "MetricsReport",
    "ToolStats",
    "compute_metrics",
    "render_prometheus",
]

_RESERVOIR = 2048  # latency samples kept per tool; quantiles beyond this are estimates
# Histogram bucket upper bounds (ms); the last bucket of `latency_ms_buckets` is +Inf.
LATENCY_BUCKETS_MS: tuple[float, ...] = (
    1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000, 120000,
)  # fmt: skip
# Tool labels are bounded: a call to a tool the server does not have is counted under
# UNKNOWN_TOOL (an agent can send any name), and past MAX_TOOLS_PER_VERSION distinct tools of
# one MCP version the rest are counted under OTHER_TOOLS.
UNKNOWN_TOOL = "<unknown>"
OTHER_TOOLS = "<other>"
MAX_TOOLS_PER_VERSION = 256


class ToolStats(BaseModel):
    tool: str
    calls: int = 0
    errors: int = 0
    error_rate: float = Field(default=0.0, description="errors / calls")
    policy_errors: int = Field(
        default=0, description="tool_error + invalid_arguments + unknown_tool"
    )
    infrastructure_errors: int = Field(
        default=0, description="server_crash + timeout + infrastructure"
    )
    crashes: int = 0
    errors_by_kind: dict[str, int] = Field(default_factory=dict)
    mutating_calls: int = 0
    latency_ms_p50: float | None = None
    latency_ms_p95: float | None = None
    latency_ms_p99: float | None = None
    latency_ms_buckets: list[int] = Field(
        default_factory=list,
        description="Calls per latency bucket (upper bounds LATENCY_BUCKETS_MS, then +Inf); "
        "not cumulative, so reports of several workers add up bucket by bucket.",
    )
    latency_ms_sum: float = Field(default=0.0, description="Sum of all call latencies (ms).")


class MCPVersionStats(BaseModel):
    mcp: str
    mcp_version: int | None
    calls: int = 0
    errors: int = 0
    error_rate: float = 0.0
    crashes: int = Field(
        default=0, description="Server crashes in calls plus out-of-call worker deaths."
    )
    crash_rate: float = Field(default=0.0, description="crashes per call")
    sessions: int = Field(default=0, description="Distinct sessions that called this MCP version.")
    sessions_with_crash: int = 0
    tools: list[ToolStats] = Field(default_factory=list)


class MetricsReport(BaseModel):
    generated_at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    total_calls: int = 0
    total_errors: int = 0
    mcps: list[MCPVersionStats] = Field(default_factory=list)

    def find(self, mcp: str, version: int | None = None) -> MCPVersionStats | None:
        return next(
            (
                m
                for m in self.mcps
                if m.mcp == mcp and (version is None or m.mcp_version == version)
            ),
            None,
        )


def _quantile(sorted_values: list[float], q: float) -> float | None:
    if not sorted_values:
        return None
    idx = min(len(sorted_values) - 1, max(0, round(q * (len(sorted_values) - 1))))
    return round(sorted_values[idx], 3)


@dataclass
class _ToolAcc:
    calls: int = 0
    errors: int = 0
    kinds: dict[str, int] = field(default_factory=dict)
    mutating: int = 0
    latencies: list[float] = field(default_factory=list)
    seen_latencies: int = 0
    buckets: list[int] = field(default_factory=lambda: [0] * (len(LATENCY_BUCKETS_MS) + 1))
    latency_sum: float = 0.0


@dataclass
class _VersionAcc:
    tools: dict[str, _ToolAcc] = field(default_factory=dict)
    sessions: set[str] = field(default_factory=set)
    crash_sessions: set[str] = field(default_factory=set)
    out_of_call_crashes: int = 0


class MetricsAggregator:
    """Incremental per-(MCP, version, tool) statistics. Not thread-safe: feed it from one task."""

    def __init__(self, *, seed: int = 0) -> None:
        self._acc: dict[tuple[str, int | None], _VersionAcc] = {}
        self._rng = random.Random(seed)

    def observe(self, entry: LedgerEntry) -> None:
        acc = self._acc.setdefault((entry.mcp, entry.mcp_version), _VersionAcc())
        name = entry.tool
        if entry.error_kind is ErrorKind.UNKNOWN_TOOL:
            name = UNKNOWN_TOOL
        elif name not in acc.tools and len(acc.tools) >= MAX_TOOLS_PER_VERSION:
            name = OTHER_TOOLS
        tool = acc.tools.setdefault(name, _ToolAcc())
        tool.buckets[bisect.bisect_left(LATENCY_BUCKETS_MS, entry.duration_ms)] += 1
        tool.latency_sum += entry.duration_ms
        tool.calls += 1
        acc.sessions.add(entry.session_id)
        if entry.is_error:
            tool.errors += 1
            kind = (entry.error_kind or ErrorKind.TOOL_ERROR).value
            tool.kinds[kind] = tool.kinds.get(kind, 0) + 1
            if entry.error_kind is ErrorKind.SERVER_CRASH:
                acc.crash_sessions.add(entry.session_id)
        if entry.mutated:
            tool.mutating += 1
        # Reservoir sampling keeps quantiles honest for long runs at bounded memory.
        tool.seen_latencies += 1
        if len(tool.latencies) < _RESERVOIR:
            tool.latencies.append(entry.duration_ms)
        else:
            j = self._rng.randrange(tool.seen_latencies)
            if j < _RESERVOIR:
                tool.latencies[j] = entry.duration_ms

    def observe_many(self, entries: Iterable[LedgerEntry]) -> None:
        for e in entries:
            self.observe(e)

    def record_crash(
        self, mcp: str, mcp_version: int | None, session_id: str | None = None
    ) -> None:
        """A worker serving this MCP version died outside a call (e.g. killed while idle)."""
        acc = self._acc.setdefault((mcp, mcp_version), _VersionAcc())
        acc.out_of_call_crashes += 1
        if session_id is not None:
            acc.crash_sessions.add(session_id)

    def report(self) -> MetricsReport:
        out = MetricsReport()
        for (mcp, version), acc in sorted(
            self._acc.items(), key=lambda kv: (kv[0][0], kv[0][1] or 0)
        ):
            stats = MCPVersionStats(mcp=mcp, mcp_version=version)
            for name, t in sorted(acc.tools.items()):
                lat = sorted(t.latencies)
                crashes = t.kinds.get(ErrorKind.SERVER_CRASH.value, 0)
                infra = sum(n for k, n in t.kinds.items() if ErrorKind(k).is_infrastructure)
                stats.tools.append(
                    ToolStats(
                        tool=name,
                        calls=t.calls,
                        errors=t.errors,
                        error_rate=round(t.errors / t.calls, 6) if t.calls else 0.0,
                        policy_errors=t.errors - infra,
                        infrastructure_errors=infra,
                        crashes=crashes,
                        errors_by_kind=dict(sorted(t.kinds.items())),
                        mutating_calls=t.mutating,
                        latency_ms_p50=_quantile(lat, 0.5),
                        latency_ms_p95=_quantile(lat, 0.95),
                        latency_ms_p99=_quantile(lat, 0.99),
                        latency_ms_buckets=list(t.buckets),
                        latency_ms_sum=round(t.latency_sum, 3),
                    )
                )
                stats.calls += t.calls
                stats.errors += t.errors
                stats.crashes += crashes
            stats.crashes += acc.out_of_call_crashes
            stats.error_rate = round(stats.errors / stats.calls, 6) if stats.calls else 0.0
            stats.crash_rate = round(stats.crashes / stats.calls, 6) if stats.calls else 0.0
            stats.sessions = len(acc.sessions)
            stats.sessions_with_crash = len(acc.crash_sessions)
            out.mcps.append(stats)
            out.total_calls += stats.calls
            out.total_errors += stats.errors
        return out


def compute_metrics(entries: Iterable[LedgerEntry]) -> MetricsReport:
    """Metrics of a batch of ledger entries (e.g. every session ledger of a run)."""
    agg = MetricsAggregator()
    agg.observe_many(entries)
    return agg.report()


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
        # Imported here and in render_prometheus: prometheus_client (38 modules, ~2.3 MiB) is
        # needed only where /metrics is scraped, not in every serving process.
        from prometheus_client.core import (
            CounterMetricFamily,
            GaugeMetricFamily,
            HistogramMetricFamily,
        )

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


def render_prometheus(report: MetricsReport, gauges: Mapping[str, float] | None = None) -> str:
    """Prometheus text exposition of `report` plus host-level `gauges` (e.g. {"groups": 12})."""
    from prometheus_client import CollectorRegistry, generate_latest

    registry = CollectorRegistry(auto_describe=False)
    registry.register(_ReportCollector(report, gauges or {}))
    return generate_latest(registry).decode()
