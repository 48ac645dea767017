"""Registration probes forked from one pre-imported sandboxed process (a zygote).

A registration probe (`_probe.py`) starts a fresh Python in the sandbox, and ~85 % of its CPU
is importing fastmcp, SQLModel and FastAPI before the module's own code runs: ~1.9 s of CPU per
MCP, 10 s of wall time for nine MCPs on two cores. The zygote imports those libraries once, in
the same sandbox a probe gets, and forks one child per probe; a child imports only the module.

What a child can and cannot do to others (children share the zygote's sandbox: its PID
namespace, its private `/tmp`): every child runs with only stderr and its own result pipe open
(nothing else the zygote holds), and the zygote is not dumpable, so no child reads or writes
another's pipe or the zygote's memory. A child can still signal a sibling or the zygote; the host
therefore trusts only a result a child reported as a success and re-runs every other outcome (an
error, a crash, a lost zygote) as a dedicated probe, whose verdict is authoritative. When no probe
is running, the zygote kills every other process left in its PID namespace, so nothing a module
started outlives its probe into another's; and it exits after `idle_s` without probes.

`python -m weft_megamcp._probe_zygote [--sweep]` reads one JSON request per line on stdin
({"id", "folder", "entry", "mcp_id", "version", "tag", "timeout_s"}) and writes one JSON line per
outcome on stdout: {"id", "result"} (the child's `_probe` result), {"id", "lost": "..."} or
{"id", "timeout": true}. It exits when stdin closes.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import select
import shutil
import signal
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from weft_megamcp.sandbox import Sandbox

_PR_SET_PDEATHSIG = 1
_PR_SET_DUMPABLE = 4


def _prctl(option: int, value: int) -> None:
    """Best effort: Linux only (elsewhere the zygote still works, with weaker guarantees)."""
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)


# ---- the zygote (inside the sandbox) ------------------------------------------------------------


@dataclass
class _Child:
    id: int
    pid: int
    fd: int
    deadline: float
    buf: bytearray = field(default_factory=bytearray)


def _write_line(fd: int, msg: object) -> None:
    data = (json.dumps(msg) + "\n").encode()
    while data:
        data = data[os.write(fd, data) :]


def _emit(msg: dict[str, Any]) -> None:
    _write_line(1, msg)


def _child(req: dict[str, Any], w: int) -> None:
    """In the forked child: confine the descriptors, probe, report, exit. Never returns."""
    try:
        os.setpgid(0, 0)
        _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(2, 1)  # whatever the module prints goes to stderr
        keep = sorted({0, 1, 2, w})
        for lo, hi in itertools.pairwise([*keep, 1 << 16]):
            os.closerange(lo + 1, hi)
        sys.stdout = sys.stderr
        os.chdir(tempfile.mkdtemp(prefix="probe-"))
        from weft_megamcp._probe import _probe

        result = _probe(
            Path(req["folder"]),
            str(req["entry"]),
            str(req["mcp_id"]),
            int(req["version"]),
            str(req["tag"]),
        )
        _write_line(w, result)
    except BaseException:  # a result that never arrives is a lost probe: the host re-runs it
        pass
    finally:
        os._exit(0)


def _sweep() -> None:
    """Kill every process of this PID namespace but init and the zygote (run with no probe
    in flight, so whatever else is there was left behind by a module)."""
    keep = {1, os.getpid()}
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) not in keep:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(int(name), signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass


def _reap(child: _Child) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(child.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(child.pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(child.pid, 0)
    os.close(child.fd)


def zygote_main(sweep: bool) -> int:
    # What every probe imports: paid here once instead of once per probe.
    import fastmcp  # noqa: F401

    from weft_megamcp import _probe, loader, screening  # noqa: F401

    for name in ("sqlmodel", "fastapi", "weft_core.models"):
        with contextlib.suppress(ImportError):
            __import__(name)
    _prctl(_PR_SET_DUMPABLE, 0)
    # `-m` put the working directory on sys.path; a child must never import from a folder that
    # another child can write.
    cwd = os.getcwd()
    sys.path[:] = [p for p in sys.path if p not in ("", cwd)]
    children: dict[int, _Child] = {}  # by result fd
    pending = bytearray()
    stdin_open = True
    while stdin_open or children:
        now = time.monotonic()
        wait = min((c.deadline for c in children.values()), default=now + 3600) - now
        fds = ([0] if stdin_open else []) + list(children)
        ready, _, _ = select.select(fds, [], [], max(0.0, wait))
        for fd in ready:
            if fd == 0:
                chunk = os.read(0, 65536)
                if not chunk:
                    stdin_open = False
                    for c in list(children.values()):
                        _reap(c)
                    children.clear()
                    break
                pending += chunk
                while b"\n" in pending:
                    line, _, rest = bytes(pending).partition(b"\n")
                    pending[:] = rest
                    req = json.loads(line)
                    r, w = os.pipe()
                    pid = os.fork()
                    if pid == 0:
                        os.close(r)
                        _child(req, w)
                    os.close(w)
                    deadline = time.monotonic() + float(req["timeout_s"])
                    children[r] = _Child(int(req["id"]), pid, r, deadline)
            elif fd in children:
                c = children[fd]
                chunk = os.read(fd, 65536)
                if chunk:
                    c.buf += chunk
                    continue
                del children[fd]
                _reap(c)
                text = bytes(c.buf).decode("utf-8", "replace").strip()
                try:
                    _emit({"id": c.id, "result": json.loads(text)})
                except ValueError:
                    _emit({"id": c.id, "lost": "the probe ended without a result"})
        now = time.monotonic()
        for fd, c in list(children.items()):
            if c.deadline <= now:
                del children[fd]
                _reap(c)
                _emit({"id": c.id, "timeout": True})
        if sweep and not children:
            _sweep()
    return 0


# ---- the host side --------------------------------------------------------------------------------


@dataclass
class _Running:
    """One started zygote: its process, staging folder and the probes waiting on it."""

    proc: asyncio.subprocess.Process
    staging: Path
    inside: Path  # the staging folder's module root as the zygote sees it
    loop: asyncio.AbstractEventLoop
    waiting: dict[int, asyncio.Future[dict[str, Any]]] = field(default_factory=dict)
    reader: asyncio.Task[None] | None = None

    def kill(self) -> None:
        if self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)

    async def read(self) -> None:
        assert self.proc.stdout is not None
        try:
            while line := await self.proc.stdout.readline():
                with contextlib.suppress(ValueError, KeyError, TypeError):
                    msg = json.loads(line)
                    fut = self.waiting.pop(int(msg["id"]), None)
                    if fut is not None and not fut.done():
                        fut.set_result(msg)
        finally:
            # The zygote is gone: whoever still waits on it runs a dedicated probe.
            for fut in self.waiting.values():
                if not fut.done():
                    fut.set_result({"lost": "the probe zygote ended"})
            self.waiting.clear()
            self.kill()
            with contextlib.suppress(ProcessLookupError):
                await self.proc.wait()
            shutil.rmtree(self.staging, ignore_errors=True)


class ProbeZygote:
    """Runs registration probes as children of one zygote in `sandbox` (see the module doc).

    `probe()` returns the probe's {"screen", "tools"}, raises RegistrationError when the module
    ran out of time, and returns None for every other outcome: the caller then runs a dedicated
    probe (`_probe.run_probe`), whose verdict and error message are authoritative. The zygote
    starts with the first probe and exits `idle_s` after the last one: registrations that come
    together (a composer's, a script's loop) share it, and a serving host does not keep its
    ~125 MB of imports.
    """

    def __init__(self, sandbox: Sandbox, *, idle_s: float = 2.0) -> None:
        self.sandbox = sandbox
        self.idle_s = idle_s
        self._z: _Running | None = None
        self._ids = itertools.count(1)
        self._start_lock: tuple[asyncio.AbstractEventLoop, asyncio.Lock] | None = None
        self._idle: asyncio.TimerHandle | None = None
        self.forked = 0  # probes a child answered
        self.started = 0  # zygotes started

    async def _ensure(self) -> _Running:
        loop = asyncio.get_running_loop()
        if self._start_lock is None or self._start_lock[0] is not loop:
            self._start_lock = (loop, asyncio.Lock())
        async with self._start_lock[1]:
            z = self._z
            if z is not None and z.loop is loop and z.reader is not None and not z.reader.done():
                return z
            if z is not None:  # gone, or started under another event loop
                self.close()
            from weft_megamcp.sandbox import SANDBOX_MODULE

            staging = Path(tempfile.mkdtemp(prefix="megamcp-probes-"))
            (staging / "ws").mkdir()
            (staging / "m").mkdir()
            argv = [sys.executable, "-m", "weft_megamcp._probe_zygote"]
            if self.sandbox.mode == "bwrap":
                argv.append("--sweep")  # its own PID namespace: nothing but its probes to kill
            spec = self.sandbox.wrap(
                argv, env={}, workspace=staging / "ws", db=None, module_src=staging / "m"
            )
            try:
                proc = await asyncio.create_subprocess_exec(
                    *spec.argv,
                    env=spec.env,
                    cwd=spec.cwd,
                    stdin=asyncio.subprocess.PIPE,
                    stdout=asyncio.subprocess.PIPE,
                    stderr=asyncio.subprocess.DEVNULL,
                    start_new_session=True,
                )
            except BaseException:
                shutil.rmtree(staging, ignore_errors=True)
                raise
            self.started += 1
            inside = SANDBOX_MODULE if self.sandbox.mode == "bwrap" else staging / "m"
            z = self._z = _Running(proc, staging, inside, loop)
            z.reader = asyncio.create_task(z.read())
            return z

    async def probe(
        self,
        folder: Path,
        entry: str,
        mcp_id: str,
        version: int,
        tag: str,
        *,
        timeout_s: float,
    ) -> dict[str, Any] | None:
        from weft_megamcp._probe import probe_timeout

        if self._idle is not None:
            self._idle.cancel()
            self._idle = None
        try:
            z = await self._ensure()
        except Exception:  # no zygote here (e.g. the sandbox cannot start): probe alone
            return None
        n = next(self._ids)
        dest = z.staging / "m" / str(n)
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        z.waiting[n] = fut
        try:
            # Links stay links: a copy must never pull a host file into the sandbox.
            await asyncio.to_thread(shutil.copytree, folder, dest, symlinks=True)
            req = {
                "id": n,
                "folder": str(z.inside / str(n)),
                "entry": entry,
                "mcp_id": mcp_id,
                "version": version,
                "tag": tag,
                "timeout_s": timeout_s,
            }
            assert z.proc.stdin is not None
            z.proc.stdin.write((json.dumps(req) + "\n").encode())
            await z.proc.stdin.drain()
            # The zygote enforces timeout_s; this bound only covers a zygote that stops
            # answering altogether (its own start included).
            async with asyncio.timeout(timeout_s + 30):
                msg = await fut
        except (OSError, TimeoutError):
            z.kill()
            return None
        finally:
            z.waiting.pop(n, None)
            shutil.rmtree(dest, ignore_errors=True)
            if self._z is z and not z.waiting:
                if self._idle is not None:
                    self._idle.cancel()
                self._idle = asyncio.get_running_loop().call_later(self.idle_s, self._stop_idle)
        if msg.get("timeout"):
            raise probe_timeout(f"MCP {mcp_id!r} v{version}", entry, timeout_s)
        result = msg.get("result")
        if not isinstance(result, dict) or "error" in result or "tools" not in result:
            return None
        self.forked += 1
        return result

    async def warm(self, *, within_s: float = 10.0) -> None:
        """Start the zygote ahead of the first probe (a prefork master at boot: its imports then
        overlap the workers' start instead of delaying the first registration); it exits
        `within_s` later if no probe came. A zygote that cannot start is left to the probes."""
        try:
            z = await self._ensure()
        except Exception:
            return
        if self._z is z and not z.waiting and self._idle is None:
            self._idle = asyncio.get_running_loop().call_later(within_s, self._stop_idle)

    def _stop_idle(self) -> None:
        self._idle = None
        if self._z is not None and not self._z.waiting:
            self.close()

    def close(self) -> None:
        """Stop the zygote (its children die with it); a later probe starts a new one."""
        if self._idle is not None:
            self._idle.cancel()
            self._idle = None
        z, self._z = self._z, None
        if z is not None:
            z.kill()

    async def aclose(self) -> None:
        z = self._z
        self.close()
        if z is not None and z.reader is not None:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await z.reader


def main(argv: list[str]) -> int:
    return zygote_main(sweep="--sweep" in argv)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
