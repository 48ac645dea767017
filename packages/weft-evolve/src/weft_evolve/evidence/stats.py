"""MegaMCP's operational feedback (§3.3.3): per MCP version and tool, calls, errors and crashes.

The host's counters are cumulative; a round reads them before and after its rollouts and keeps the
difference, so each round is judged on its own calls. The counters cannot tell a caller's mistake
from a backend fault, and a route the reference never calls sees only the odd stray call of a
policy, far below any error-rate threshold; so the round's ledgers add, per tool, the errors whose
code its contract never declares (`backend_faults`). One such error is enough to revalidate.
"""

from __future__ import annotations

from typing import Any

from weft_core.models import ContractSet, Trace
from weft_evolve.attribution.conformance import declared_codes
from weft_evolve.evidence.replay import error_code
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


def backend_faults(
    traces: list[Trace], contracts: dict[str, ContractSet]
) -> dict[tuple[str, str], int]:
    """(mcp, tool) -> rollout calls that failed with an error code the contract does not declare.

    Infrastructure errors (crash, timeout) are MegaMCP's own counters; a tool without a contract
    is not judged."""
    out: dict[tuple[str, str], int] = {}
    for t in traces:
        for e in t.ledger:
            if not e.is_error or (e.error_kind is not None and e.error_kind.is_infrastructure):
                continue
            cs = contracts.get(e.mcp)
            contract = next((c for c in cs.contracts if c.tool == e.tool), None) if cs else None
            if contract is None:
                continue
            code = error_code(str(e.result)) or "unknown"
            if code not in declared_codes(contract):
                out[(e.mcp, e.tool)] = out.get((e.mcp, e.tool), 0) + 1
    return out


def with_faults(stats: list[ToolStats], faults: dict[tuple[str, str], int]) -> list[ToolStats]:
    """The round's per-tool counters with the ledgers' backend faults added."""
    by_key = {(s.mcp, s.tool): s.model_copy() for s in stats}
    for (mcp, tool), n in faults.items():
        cur = by_key.setdefault((mcp, tool), ToolStats(mcp=mcp, tool=tool, calls=n, errors=n))
        cur.faults = n
    return [by_key[k] for k in sorted(by_key)]
