"""MegaMCP's operational feedback (§3.3.3): per MCP version and tool, calls, errors and crashes.

The host's counters are cumulative; a round reads them before and after its rollouts and keeps the
difference, so each round is judged on its own calls.
"""

from __future__ import annotations

from typing import Any

from weft_evolve.models import ToolStats


async def read_tool_stats(client: Any) -> dict[tuple[str, str], ToolStats]:
    """(mcp, tool) -> counters now, summed over the MCP's versions."""
    raw = await client.stats()
    out: dict[tuple[str, str], ToolStats] = {}
    for m in raw.get("mcps", []):
        for t in m.get("tools", []):
            key = (str(m["mcp"]), str(t["tool"]))
            kinds = t.get("errors_by_kind") or {}
            cur = out.setdefault(key, ToolStats(mcp=key[0], tool=key[1]))
            cur.version = m.get("mcp_version")
            cur.calls += int(t.get("calls", 0))
            cur.errors += int(t.get("errors", 0))
            cur.crashes += int(t.get("crashes", 0))
            cur.timeouts += int(kinds.get("timeout", 0))
    return out


def stats_delta(
    before: dict[tuple[str, str], ToolStats], after: dict[tuple[str, str], ToolStats]
) -> list[ToolStats]:
    """Per-tool counters of the calls made between two readings."""
    out: list[ToolStats] = []
    for key, now in sorted(after.items()):
        old = before.get(key)
        d = ToolStats(
            mcp=now.mcp,
            version=now.version,
            tool=now.tool,
            calls=now.calls - (old.calls if old else 0),
            errors=now.errors - (old.errors if old else 0),
            crashes=now.crashes - (old.crashes if old else 0),
            timeouts=now.timeouts - (old.timeouts if old else 0),
        )
        if d.calls > 0 or d.crashes > 0:
            out.append(d)
    return out
