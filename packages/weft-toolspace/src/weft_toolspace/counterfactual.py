"""State edges witnessed by execution (§4.1.2 "the same object"): replay a trace from s_0 on a
MegaMCP group and, before every call t that mutated state, fork the group (state s_{t-1}), run
call t+1 on the fork, and compare with t+1 after t. If skipping t changes what t+1 returns or
whether it fails, t+1 reads or mutates what t changed: a state edge. Calls on different servers
share no state, so only same-server pairs are tested."""

from __future__ import annotations

import asyncio
import json
import re
from typing import TYPE_CHECKING, Any

from weft_toolspace.models import TraceRecord

if TYPE_CHECKING:
    from weft_megamcp import CallResult, MegaMCPClient

_VOLATILE = re.compile(
    r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?([+-]\d{2}:?\d{2}|Z)?"
    r"|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
    r"|\b[0-9a-f]{7,40}\b"  # commit hashes
    # JavaScript Date strings (filesystem's get_file_info: created / modified / accessed)
    r"|\b\w{3} \w{3} \d{2} \d{4} \d{2}:\d{2}:\d{2} GMT[+-]\d{4}(?: \([^)]*\))?",
    re.I,
)


def observation(res: CallResult) -> tuple[bool, str]:
    """What the agent saw, with clock values, UUIDs and hashes masked (they differ every run)."""
    return res.is_error, _VOLATILE.sub("<v>", res.text)


def observation_text(value: Any) -> str:
    """A parsed result as canonical text with volatile values masked (for replay comparison)."""
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    return _VOLATILE.sub("<v>", text)


async def witness_state_edges(
    client: MegaMCPClient, trace: TraceRecord, *, max_forks: int = 50
) -> set[tuple[str, int]]:
    """(trace id, t) for every adjacent pair the counterfactual replay shows to share state."""
    mcps = sorted({c.mcp for c in trace.calls})
    group = await client.create_group(mcps)
    found: set[tuple[str, int]] = set()
    forks = 0
    try:
        skipped: dict[int, tuple[bool, str]] = {}
        for t, call in enumerate(trace.calls):
            nxt = trace.calls[t + 1] if t + 1 < len(trace.calls) else None
            if (
                nxt is not None
                and call.mutated
                and call.ok
                and nxt.mcp == call.mcp
                and forks < max_forks
            ):
                fork = (await client.fork(group, 1))[0]
                forks += 1
                try:
                    cf = await client.call_tool(fork, nxt.mcp, nxt.tool, dict(nxt.arguments))
                    skipped[t + 1] = observation(cf)
                finally:
                    await client.close(fork)
            res = await client.call_tool(group, call.mcp, call.tool, dict(call.arguments))
            if t in skipped and observation(res) != skipped[t]:
                found.add((trace.id, t - 1))
    finally:
        await client.close(group)
    return found


async def witness_all(
    client: MegaMCPClient, traces: list[TraceRecord], *, concurrency: int = 3, **kw: Any
) -> set[tuple[str, int]]:
    """Every trace's witnessed pairs; traces are replayed `concurrency` at a time (each on its
    own group, so they share nothing; most of the time is spent waiting for server processes)."""
    gate = asyncio.Semaphore(max(1, concurrency))

    async def one(tr: TraceRecord) -> set[tuple[str, int]]:
        async with gate:
            return await witness_state_edges(client, tr, **kw)

    found = await asyncio.gather(*(one(tr) for tr in traces))
    return set().union(*found) if found else set()
