"""Shutdown journal and the Reaper that finishes interrupted shutdowns.

Closing a session is a list of named steps (e.g. "final_checkpoint", "drop_local_state"). The
owner records `closing` with the pending steps in the store *before* doing them, marks each step
done as it completes, and records `closed` at the end. If the owner dies in between, the session
stays `closing`; the Reaper steals its lease (a new generation fences the dead owner), runs the
steps not yet done with the handlers it was given, and marks it `closed`. Handlers must be
idempotent: a step may have run partially (or fully, just before the crash).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence

from pydantic import BaseModel, Field

from weft_megamcp.checkpoints._errors import CheckpointError
from weft_megamcp.checkpoints.store import CheckpointStore, Lease, SessionStatus

__all__ = ["ReapReport", "Reaper", "ShutdownJournal", "StepHandler"]

StepHandler = Callable[[str, Lease], Awaitable[None] | None]


class ShutdownJournal:
    """The owner's side of a recoverable shutdown."""

    def __init__(self, store: CheckpointStore, lease: Lease) -> None:
        self.store = store
        self.lease = lease

    def begin(self, steps: Sequence[str]) -> SessionStatus:
        status = self.store.status(self.lease.session_id)
        status.state = "closing"
        status.pending_steps = [s for s in steps if s not in status.done_steps]
        self.store.write_status(self.lease, status)
        return status

    def step_done(self, step: str) -> None:
        status = self.store.status(self.lease.session_id)
        if step in status.pending_steps:
            status.pending_steps.remove(step)
        if step not in status.done_steps:
            status.done_steps.append(step)
        self.store.write_status(self.lease, status)

    def finish(self) -> None:
        status = self.store.status(self.lease.session_id)
        if status.pending_steps:
            raise CheckpointError(
                f"session {self.lease.session_id!r} cannot close: steps {status.pending_steps} "
                "are not done"
            )
        status.state = "closed"
        self.store.write_status(self.lease, status)


class ReapReport(BaseModel):
    finished: list[str] = Field(default_factory=list, description="Sessions the reaper closed.")
    steps_run: dict[str, list[str]] = Field(default_factory=dict)
    failed: dict[str, str] = Field(default_factory=dict, description="Session -> reason.")


class Reaper:
    def __init__(
        self,
        store: CheckpointStore,
        handlers: dict[str, StepHandler],
        *,
        owner: str = "reaper",
    ) -> None:
        self.store = store
        self.handlers = handlers
        self.owner = owner

    async def reap(self, sessions: Sequence[str] | None = None) -> ReapReport:
        """Finish every `closing` session (or those listed). Safe to run repeatedly or
        concurrently with itself: a closed session is skipped, a failed step is retried on the
        next run, and one session's failure does not stop the others."""
        report = ReapReport()
        for sid in sessions if sessions is not None else self.store.sessions():
            try:
                status = self.store.status(sid)
                if status.state != "closing":
                    continue
                unknown = [s for s in status.pending_steps if s not in self.handlers]
                if unknown:
                    report.failed[sid] = f"no handler for step(s) {unknown}"
                    continue
                lease = self.store.acquire(sid, self.owner, steal=True)
                journal = ShutdownJournal(self.store, lease)
                ran: list[str] = []
                for step in list(status.pending_steps):
                    result = self.handlers[step](sid, lease)
                    if inspect.isawaitable(result):
                        await result
                    journal.step_done(step)
                    ran.append(step)
                journal.finish()
                report.finished.append(sid)
                report.steps_run[sid] = ran
            except Exception as exc:  # one bad session must not stop the sweep
                report.failed[sid] = f"{exc.__class__.__name__}: {exc}"
        return report
