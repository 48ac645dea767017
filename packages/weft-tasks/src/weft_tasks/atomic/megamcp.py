"""The MegaMCP side of weft-tasks: a client (embedded host or a running one), bundle
registration, and a `ToolCaller` over one session group.

Atomic-task validation and the reachability replay both run real MCP calls through MegaMCP
sessions, so the evidence is what an agent's rollout would produce.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from weft_core.exceptions import WeftRuntimeError
from weft_core.models import ReferenceCall, Verifier
from weft_megamcp.models import CallResult, GroupHandle
from weft_megamcp.service import GroupService
from weft_tasks.atomic.execution import (
    RunRecord,
    StepRecord,
    TemplateError,
    ToolReturn,
    call_value,
    record_return,
    render,
    template_names,
)
from weft_tasks.atomic.execution import run_calls as run_reference_calls
from weft_tasks.exceptions import ExecutionError


@asynccontextmanager
async def megamcp_client(
    url: str | None = None,
    admin_token: str | None = None,
    *,
    data_dir: Path | None = None,
    subprocess: bool = False,
    workers: int = 0,
    groups_on_tmpfs: bool = False,
    while_starting: Callable[[], object] | None = None,
) -> AsyncIterator[Any]:
    """A `MegaMCPClient`: to the host at `url`, or to an embedded host started (and stopped) here
    whose registry and object store live in `data_dir` (so the snapshots it stores outlive it);
    `workers` > 1 starts it as a prefork host in its own process. `groups_on_tmpfs` keeps the
    embedded host's live groups in a RAM folder (see `tmpfs_folder`) when the machine has one.
    `while_starting` runs once the host's process is started and before it serves (see
    `MegaMCPHost.start`): the caller's imports and input loading overlap the host's boot, as
    does importing the client SDK here."""
    client_class: list[Any] = []

    def starting() -> None:
        try:
            from weft_megamcp.client import MegaMCPClient
        except ImportError as exc:  # part of the workspace: a broken install is a runtime failure
            raise ExecutionError(f"weft-megamcp client SDK unavailable: {exc}") from None
        client_class.append(MegaMCPClient)
        if while_starting is not None:
            while_starting()

    if url:
        starting()
        client = client_class[0](url, admin_token or "")
        try:
            yield client
        finally:
            await _aclose(client)
        return
    try:
        from weft_megamcp.host import MegaMCPHost
        from weft_megamcp.settings import MegaMCPSettings
    except ImportError as exc:
        raise ExecutionError(f"weft-megamcp host unavailable: {exc}") from None
    settings = MegaMCPSettings(workers=workers)
    if data_dir is not None:
        settings = settings.model_copy(update={"data_dir": data_dir})
    with tmpfs_folder() if groups_on_tmpfs else contextlib.nullcontext() as groups:
        if groups is not None:
            settings = settings.model_copy(update={"groups_dir": groups})
        # a host in its own process serves calls while this process samples and grounds
        async with MegaMCPHost.running(
            settings, subprocess=subprocess or workers > 1, while_starting=starting
        ) as host:
            client = client_class[0](host.url, host.admin_token)
            try:
                yield client
            finally:
                await _aclose(client)


TMPFS = Path("/dev/shm")
TMPFS_MIN_FREE = 1 << 30
TMPFS_PREFIX = "weft-tasks-groups-"
ORPHAN_AFTER_S = 600.0


def _sweep_orphans(root: Path, *, older_than_s: float = ORPHAN_AFTER_S) -> list[Path]:
    """Remove group folders a killed composer left in RAM (`kill -9` skips its cleanup): the
    pid in the name is gone and nothing has changed in the folder for `older_than_s` (a pid
    from another PID namespace sharing `root` may look gone; an active run's folder changes
    with every group it creates)."""
    removed = []
    now = time.time()
    for p in root.glob(f"{TMPFS_PREFIX}*-*"):
        pid_text = p.name[len(TMPFS_PREFIX) :].split("-", 1)[0]
        try:
            st = p.lstat()
            if not pid_text.isdigit() or st.st_uid != os.getuid() or not p.is_dir():
                continue
            if now - st.st_mtime < older_than_s:
                continue
            os.kill(int(pid_text), 0)
        except ProcessLookupError:
            shutil.rmtree(p, ignore_errors=True)
            removed.append(p)
        except OSError:  # alive under another user, or vanished meanwhile
            continue
    return removed


@contextlib.contextmanager
def tmpfs_folder(root: Path = TMPFS, min_free: int = TMPFS_MIN_FREE) -> Iterator[Path | None]:
    """A fresh folder in the RAM file system `root` (removed at exit), or None when there is
    none, it is not writable or has less than `min_free` bytes free (a container's 64 MiB
    /dev/shm would fill).

    Why: construction-time groups (certification, replays) are created, used and deleted within
    one request; on a journaling disk their folders, DB copies and deletes were about half of
    the host workers' system CPU. Nothing durable is lost: those groups are never resumed."""
    try:
        usage = shutil.disk_usage(root)
        _sweep_orphans(root)
        folder = (
            Path(tempfile.mkdtemp(prefix=f"{TMPFS_PREFIX}{os.getpid()}-", dir=root))
            if usage.free >= min_free and os.access(root, os.W_OK)
            else None
        )
    except OSError:
        folder = None
    try:
        yield folder
    finally:
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)


async def _aclose(client: object) -> None:
    close = getattr(client, "aclose", None)
    if close is not None:
        await close()


class Registrar:
    """Registers each bundle once per client and remembers its MCP id."""

    def __init__(self, client: GroupService) -> None:
        self.client = client
        self._ids: dict[Path, str] = {}

    async def mcp_id(self, bundle_path: Path) -> str:
        key = bundle_path.resolve()
        if key not in self._ids:
            rec = await self.client.register(str(key))
            self._ids[key] = rec.mcp_id
        return self._ids[key]


class GroupCaller:
    """`ToolCaller` over a session group: `mcp` names the library MCP, mapped to its MCP id."""

    def __init__(self, client: GroupService, group: GroupHandle, mcp_ids: dict[str, str]) -> None:
        self.client = client
        self.group = group
        self.mcp_ids = mcp_ids
        self.calls = 0

    async def call(self, mcp: str, tool: str, arguments: dict[str, Any]) -> ToolReturn:
        self.calls += 1
        res = await self.client.call_tool(self.group, self.mcp_ids.get(mcp, mcp), tool, arguments)
        return to_return(res)


def to_return(res: CallResult) -> ToolReturn:
    """A CallResult as the reference engine reads it: structured content, else JSON text, else text."""
    return ToolReturn(
        is_error=bool(res.is_error), value=call_value(res.structured, res.text), text=res.text
    )


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


class _Replayed:
    """A `ToolCaller` answering each call with the next step of a host-side run."""

    def __init__(self, steps: Iterator[Any]) -> None:
        self.steps = steps
        self.served = 0

    async def call(self, mcp: str, tool: str, arguments: dict[str, Any]) -> ToolReturn:
        self.served += 1
        step = next(self.steps, None)
        if step is None or step.call is None:
            why = step.error if step is not None else None
            return ToolReturn(is_error=True, text=why or "call not run")
        return to_return(step.call)


class BatchedGroup:
    """A MegaMCP session group driven in batches: the first request creates it, each request
    carries as many reference calls as their binds allow plus the checks that follow them, and
    the last one closes it. A task whose calls need no value an earlier call of the same batch
    binds costs one request (create, calls, checks, close) instead of one per call and check.
    """

    def __init__(
        self,
        client: Any,
        mcps: dict[str, str | None],
        mcp_ids: dict[str, str],
        *,
        verifier: Verifier,
        task_id: str | None,
        bindings: dict[str, Any] | None = None,
        store: dict[str, Path] | None = None,
        workspaces: dict[str, Path] | None = None,
    ) -> None:
        self.client = client
        self.mcps = mcps
        self.store = store or {}  # MCP id -> initial DB the creating request stores first
        self.workspaces = workspaces or {}  # MCP id -> initial workspace tarball, likewise
        self.mcp_ids = mcp_ids
        # A verifier with no checks can never pass and a host refuses it: send none instead.
        self.verifier = verifier if verifier.has_checks else None
        self.task_id = task_id
        self.bindings = bindings or {}
        self.group_id: str | None = None
        self.closed = False
        self.requests = 0
        self.calls = 0

    async def send(
        self, ops: list[dict[str, Any]], *, close: bool = False, env: dict[str, Any] | None = None
    ) -> list[Any]:
        """Run `ops` (batch op dicts) on the group, creating it first if needed; their steps.
        With `env`, the host fills call templates and binds (`BatchRequest.env`)."""
        extra: dict[str, Any] = {} if env is None else {"env": env}
        if self.group_id is None:
            res = await self.client.run(
                self.mcps,
                ops,
                verifier=self.verifier,
                task_id=self.task_id,
                bindings=self.bindings,
                close=close,
                **({"snapshots": self.store} if self.store else {}),
                **({"workspace_files": self.workspaces} if self.workspaces else {}),
                **extra,
            )
        else:
            res = await self.client.batch(self.group_id, ops, close=close, **extra)
        self.requests += 1
        self.group_id, self.closed = res.group_id, res.closed
        return list(res.steps)

    async def close(self) -> None:
        """Close the group if a batch has not; a failing close never changes a verdict."""
        if self.group_id is not None and not self.closed:
            with contextlib.suppress(WeftRuntimeError):
                await self.client.close(self.group_id)
            self.closed = True

    def _record_step(
        self, record: RunRecord, i: int, call: ReferenceCall, args: dict[str, Any], step: Any
    ) -> bool:
        """Record call `i`'s batch step as `execution.run_calls` would; False = it failed."""
        self.calls += 1
        rec = StepRecord(call.tool, args)
        record.steps.append(rec)
        returned = (
            to_return(step.call)
            if step is not None and step.call is not None
            else ToolReturn(
                is_error=True, text=(step.error if step is not None else None) or "call not run"
            )
        )
        return record_return(record, i, call, rec, returned)

    async def read_calls(
        self, calls: Sequence[ReferenceCall], env: Mapping[str, Any], steps: Iterator[Any]
    ) -> RunRecord:
        """The run record of `calls` from the steps a host-side run of them produced (a batch
        with an env, see `grounding.reachability.replay_ops`): `execution.run_calls` itself,
        each call answered by the next of `steps`, so arguments, binds and the stopping rule
        are those of a call-by-call run."""
        replayed = _Replayed(steps)
        record = await run_reference_calls(replayed, "", calls, env)
        self.calls += replayed.served
        return record

    async def run_calls(
        self,
        mcp: str,
        calls: Sequence[ReferenceCall],
        env: Mapping[str, Any],
        *,
        then: Sequence[dict[str, Any]] = (),
        close: bool = False,
    ) -> tuple[RunRecord, list[Any]]:
        """`execution.run_calls` over batches, then the ops `then` in the last batch. Returns the
        run record (same steps, binds and stopping rule) and the steps of `then` (empty when a
        call failed: a batch stops at its first error)."""
        record = RunRecord(env=dict(env))
        pending: list[tuple[int, ReferenceCall, dict[str, Any]]] = []
        binds: set[str] = set()

        async def flush(extra: list[dict[str, Any]], close_after: bool) -> list[Any]:
            ops = [
                {"op": "call", "mcp": self.mcp_ids.get(mcp, mcp), "tool": c.tool, "arguments": a}
                for _, c, a in pending
            ]
            steps = await self.send(ops + extra, close=close_after)
            for (i, call, args), step in zip(pending, steps, strict=False):
                if not self._record_step(record, i, call, args, step):
                    return []
            tail = steps[len(pending) :]
            pending.clear()
            binds.clear()
            return tail

        for i, call in enumerate(calls):
            if pending and template_names(call.arguments) & binds:
                await flush([], False)  # this call needs a value the pending ones bind
                if not record.ok:
                    return record, []
            try:
                args = render(call.arguments, record.env)
            except TemplateError as exc:
                if pending:
                    await flush([], False)
                    if not record.ok:
                        return record, []
                record.steps.append(StepRecord(call.tool, dict(call.arguments), error=str(exc)))
                record.failed_at = i
                return record, []
            pending.append((i, call, args))
            binds.update(call.bind)
        if not pending and not then and not close:
            return record, []
        return record, await flush(list(then), close)
