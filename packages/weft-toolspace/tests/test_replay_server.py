"""A stateless environment's replay server, hosted by MegaMCP, answers from recorded results."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from weft_toolspace.models import TraceCall, TraceRecord
from weft_toolspace.replay import write_replay_module

# A real server install plus a MegaMCP host: about 40 s on a loaded machine.
pytestmark = [pytest.mark.integration, pytest.mark.slow]

TRACE = TraceRecord(
    id="t",
    source="ledger",
    calls=[
        TraceCall(
            mcp="time",
            tool="get_current_time",
            arguments={"timezone": "Asia/Tokyo"},
            result={"timezone": "Asia/Tokyo", "datetime": "2026-12-01T10:00:00+09:00"},
        ),
        TraceCall(
            mcp="time",
            tool="get_current_time",
            arguments={"timezone": "Mars/Base"},
            error="Invalid timezone: Mars/Base",
        ),
        TraceCall(mcp="other", tool="x", arguments={}, result=1),
    ],
)


async def test_replay_server_answers_recorded_calls_only(megamcp: Any, tmp_path: Path) -> None:
    module = write_replay_module([TRACE], "time", tmp_path / "replay_time.py")
    rec = await megamcp.register(module, name="replay_time")
    assert [t.name for t in rec.tools] == ["get_current_time"]
    g = await megamcp.create_group([rec.mcp_id])
    try:
        hit = await megamcp.call_tool(g, rec.mcp_id, "get_current_time", {"timezone": "Asia/Tokyo"})
        assert not hit.is_error and hit.structured["datetime"] == "2026-12-01T10:00:00+09:00"
        err = await megamcp.call_tool(g, rec.mcp_id, "get_current_time", {"timezone": "Mars/Base"})
        assert err.is_error and "Invalid timezone" in err.text
        miss = await megamcp.call_tool(g, rec.mcp_id, "get_current_time", {"timezone": "UTC"})
        assert miss.is_error and "no recorded result" in miss.text
    finally:
        await megamcp.close(g)


def test_no_recorded_call_is_a_user_error(tmp_path: Path) -> None:
    from weft_toolspace.exceptions import ToolSpaceUserError

    with pytest.raises(ToolSpaceUserError, match="'nope'"):
        write_replay_module([TRACE], "nope", tmp_path / "x.py")
