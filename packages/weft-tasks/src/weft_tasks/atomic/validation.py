"""E2E execution validation of atomic tasks through real MegaMCP sessions (App. A.1 (i)).

Each task gets its own session group cloned from the bundle's seed state (an independently
initialized state), its reference calls run as real MCP calls with the session's token, the group
is frozen and the task's completion conditions are evaluated server-side on the session's
initial and final DB, workspace and ledger.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Sequence
from pathlib import Path

from weft_core.exceptions import WeftRuntimeError
from weft_core.models import AtomicTask, EvaluationResult, ValidationEvidence, Verifier
from weft_megamcp.models import GroupHandle
from weft_megamcp.service import GroupService
from weft_tasks.atomic.bundle import BundleView
from weft_tasks.atomic.execution import input_values, render_checks
from weft_tasks.atomic.megamcp import BatchedGroup, Registrar, file_sha256, megamcp_client


async def close_quietly(client: GroupService, group: GroupHandle) -> None:
    """Close a finished group; a failing close never changes the task's verdict."""
    with contextlib.suppress(WeftRuntimeError):
        await client.close(group)


class MegaMCPValidator:
    """`TaskValidator` on a MegaMCP client; `concurrency` groups run at the same time."""

    def __init__(
        self, client: GroupService, *, concurrency: int = 8, registrar: Registrar | None = None
    ) -> None:
        self.client = client
        self.registrar = registrar or Registrar(client)
        self._sem = asyncio.Semaphore(concurrency)
        self.calls = 0
        self.requests = 0  # MegaMCP requests made (batched: about one per task)

    async def validate(
        self, bundle: BundleView, tasks: Sequence[AtomicTask]
    ) -> list[ValidationEvidence]:
        mcp_id = await self.registrar.mcp_id(bundle.path)
        seed_hash = file_sha256(bundle.seed_path)
        return list(await asyncio.gather(*(self._one(bundle, mcp_id, seed_hash, t) for t in tasks)))

    async def _one(
        self, bundle: BundleView, mcp_id: str, seed_hash: str, task: AtomicTask
    ) -> ValidationEvidence:
        env = input_values(task)
        try:
            checks = render_checks(task.checks, env)
        except ValueError as exc:
            return ValidationEvidence(passed=False, error=f"checks cannot be instantiated: {exc}")
        async with self._sem:
            group = BatchedGroup(
                self.client,
                {mcp_id: None},
                {bundle.mcp: mcp_id},
                verifier=Verifier.final(checks),
                task_id=task.id,
            )
            try:
                # calls, freeze and final checks, close: one request unless binds split it
                run, tail = await group.run_calls(
                    bundle.mcp, task.reference_calls, env, then=[{"op": "verify"}], close=True
                )
                self.calls += group.calls
                self.requests += group.requests
                if not run.ok:
                    return ValidationEvidence(
                        passed=False,
                        error=run.diagnostic,
                        ledger_size=group.calls,
                        initial_state_hash=seed_hash,
                    )
            finally:
                await group.close()
        step = tail[0] if tail else None
        res = step.verification if step is not None else None
        if res is None:
            why = step.error if step is not None else "no verification ran"
            return ValidationEvidence(
                passed=False,
                error=f"verifier: {why}",
                ledger_size=group.calls,
                initial_state_hash=seed_hash,
            )
        if getattr(res, "error", None):
            return ValidationEvidence(
                passed=False,
                error=f"verifier: {res.error}",
                ledger_size=group.calls,
                initial_state_hash=seed_hash,
            )
        evaluation = EvaluationResult(outcomes=list(res.outcomes))
        return ValidationEvidence(
            passed=evaluation.passed,
            evaluation=evaluation,
            ledger_size=group.calls,
            initial_state_hash=seed_hash,
        )


async def run_library_task(library: Path, task_id: str) -> ValidationEvidence:
    """Re-run one library task's E2E test (what `tests/test_<id>.py` in a library calls)."""
    from weft_tasks.atomic.library import load_mcp_library

    lib = load_mcp_library(library)
    task = next((t for t in lib.tasks if t.id == task_id), None)
    if task is None:
        raise KeyError(f"{library}: no task {task_id!r}")
    async with megamcp_client(
        os.environ.get("WEFT_MEGAMCP_URL"), os.environ.get("WEFT_MEGAMCP_ADMIN_TOKEN")
    ) as client:
        (evidence,) = await MegaMCPValidator(client, concurrency=1).validate(lib.bundle, [task])
    return evidence
