"""Merge the metrics reports of several worker processes into one (the master's view)."""

from __future__ import annotations

from collections.abc import Iterable

from weft_megamcp.metrics import MCPVersionStats, MetricsReport, ToolStats

_COUNTS = ("calls", "errors", "policy_errors", "infrastructure_errors", "crashes", "mutating_calls")
_LATENCIES = ("latency_ms_p50", "latency_ms_p95", "latency_ms_p99")


def merge_reports(
    reports: Iterable[MetricsReport], crashes: Iterable[tuple[str, int | None, str]] = ()
) -> MetricsReport:
    """Counts add up exactly; latency quantiles are call-weighted means of the workers'
    quantiles (an approximation: exact quantiles would need every worker's samples).
    `crashes` are (mcp, version, session) of sessions whose worker died outside a call."""
    versions: dict[tuple[str, int | None], MCPVersionStats] = {}
    tools: dict[tuple[str, int | None, str], tuple[ToolStats, dict[str, float]]] = {}
    for report in reports:
        for v in report.mcps:
            key = (v.mcp, v.mcp_version)
            acc = versions.setdefault(key, MCPVersionStats(mcp=v.mcp, mcp_version=v.mcp_version))
            acc.calls += v.calls
            acc.errors += v.errors
            acc.crashes += v.crashes
            acc.sessions += v.sessions
            acc.sessions_with_crash += v.sessions_with_crash
            for t in v.tools:
                tkey = (v.mcp, v.mcp_version, t.tool)
                tacc, weights = tools.setdefault(tkey, (ToolStats(tool=t.tool), {}))
                for name in _COUNTS:
                    setattr(tacc, name, getattr(tacc, name) + getattr(t, name))
                if t.latency_ms_buckets:
                    if not tacc.latency_ms_buckets:
                        tacc.latency_ms_buckets = [0] * len(t.latency_ms_buckets)
                    tacc.latency_ms_buckets = [
                        a + b
                        for a, b in zip(tacc.latency_ms_buckets, t.latency_ms_buckets, strict=True)
                    ]
                tacc.latency_ms_sum += t.latency_ms_sum
                for name in _LATENCIES:
                    value = getattr(t, name)
                    if value is not None:
                        weights[name] = weights.get(name, 0.0) + value * t.calls
                        weights[name + "_n"] = weights.get(name + "_n", 0.0) + t.calls
    for mcp, version, session in crashes:
        acc = versions.setdefault((mcp, version), MCPVersionStats(mcp=mcp, mcp_version=version))
        acc.crashes += 1
        acc.sessions_with_crash += 1 if session else 0
    for (mcp, version, _), (tacc, weights) in sorted(tools.items()):
        for name in _LATENCIES:
            n = weights.get(name + "_n", 0.0)
            setattr(tacc, name, weights[name] / n if n else None)
        tacc.error_rate = tacc.errors / tacc.calls if tacc.calls else 0.0
        versions[(mcp, version)].tools.append(tacc)
    out = MetricsReport()
    for key in sorted(versions, key=lambda k: (k[0], k[1] or 0)):
        v = versions[key]
        v.error_rate = v.errors / v.calls if v.calls else 0.0
        v.crash_rate = v.crashes / v.calls if v.calls else 0.0
        out.mcps.append(v)
        out.total_calls += v.calls
        out.total_errors += v.errors
    return out
