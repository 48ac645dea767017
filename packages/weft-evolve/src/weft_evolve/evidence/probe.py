"""Reading a session group's state through MegaMCP's own verifier channel.

MegaMCP hands a verifier the immutable initial DB, the DB at the checkpoint (the frozen final DB
at the end) and the ledger, server-side (§3.3.3). The state probe is a Python verifier registered
once per host that returns that evidence instead of a verdict, so evolution reads the same
artifacts the verifier reads — over the admin API, on any host, never from the host's files.
"""

from __future__ import annotations

import json
from typing import Any

from weft_core.state import DBState, WorkspaceState
from weft_evolve.exceptions import EvolveRuntimeError

STATE_PROBE = '''
"""weft-evolve state probe: returns each session's initial/current DB and workspace as JSON."""
import json


def verify(evidence, checkpoint, bindings):
    out = []
    for mcp, ev in sorted(evidence.items()):
        payload = {
            "initial": ev.initial.model_dump(mode="json") if ev.initial is not None else None,
            "final": ev.final.model_dump(mode="json") if ev.final is not None else None,
            "workspace": (
                ev.workspace_after.model_dump(mode="json")
                if ev.workspace_after is not None
                else None
            ),
        }
        out.append(
            {"check_id": "state:" + mcp, "kind": "state_probe", "passed": True,
             "reason": json.dumps(payload)}
        )
    return out
'''


class ProbedState:
    """Initial and current DB (and workspace) per MCP of a group at one checkpoint."""

    def __init__(self, payload: dict[str, dict[str, Any]]) -> None:
        self.initial: dict[str, DBState] = {}
        self.current: dict[str, DBState] = {}
        self.workspace: dict[str, WorkspaceState] = {}
        for mcp, data in payload.items():
            if data.get("initial") is not None:
                self.initial[mcp] = DBState.model_validate(data["initial"])
            if data.get("final") is not None:
                self.current[mcp] = DBState.model_validate(data["final"])
            if data.get("workspace") is not None:
                self.workspace[mcp] = WorkspaceState.model_validate(data["workspace"])


class StateProbe:
    """Registers the probe verifier once per client and reads group states with it."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self._id: str | None = None

    async def verifier_id(self) -> str:
        if self._id is None:
            self._id = await self.client.put_verifier("python", STATE_PROBE)
        return self._id

    async def read(self, group: Any, checkpoint: str) -> ProbedState:
        result = await self.client.checkpoint_verify(group, checkpoint)
        if getattr(result, "error", None):
            raise EvolveRuntimeError(f"state probe at {checkpoint!r}: {result.error}")
        payload: dict[str, dict[str, Any]] = {}
        for outcome in result.outcomes:
            if outcome.check_id.startswith("state:"):
                payload[outcome.check_id.removeprefix("state:")] = json.loads(outcome.reason)
        return ProbedState(payload)
