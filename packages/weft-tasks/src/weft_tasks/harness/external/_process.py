"""The shared part of external-harness adapters: one process per rollout in a fresh scratch
folder, its model pointed at the capture gateway, its transcript rebuilt from the gateway's
records, and its exit mapped to Weft's outcome kinds.

Outcome kinds: `ok` and `stopped` (a step or time limit: the policy's outcome, the trace is
scored) return a `HarnessRun`; `infrastructure` (model unreachable, harness crash) raises
`HarnessInfrastructureError`, which the rollout runner retries in a fresh group and never counts
against the policy; `config` (a bad install or config) raises `HarnessConfigError`.
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import enum
import os
import shutil
import signal
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from weft_core.models import CapturedCall, ViewMode
from weft_tasks.gateway import CaptureGateway, offered_tools, transcript_of
from weft_tasks.harness._errors import HarnessConfigError, HarnessRuntimeError
from weft_tasks.harness.external.install import installed
from weft_tasks.harness.external.settings import HarnessSettings
from weft_tasks.harness.protocol import HarnessRun, HarnessTask, MCPEndpoint, TurnCallback


class HarnessInfrastructureError(HarnessRuntimeError):
    """The harness could not run the episode for a reason outside the policy."""


class Outcome(enum.StrEnum):
    OK = "ok"
    STOPPED = "stopped"
    INFRASTRUCTURE = "infrastructure"
    CONFIG = "config"


@dataclass
class Verdict:
    outcome: Outcome
    reason: str = ""


@dataclass
class ProcessResult:
    code: int | None
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool = False


async def run_process(
    argv: list[str], *, env: dict[str, str], cwd: Path, timeout_s: float
) -> ProcessResult:
    """Run `argv` to completion (its whole process group is killed at `timeout_s`)."""
    started = time.perf_counter()
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
            cwd=cwd,
            start_new_session=True,
        )
    except OSError as exc:
        raise HarnessConfigError(f"cannot start {argv[0]!r}: {exc.strerror}") from None
    timed_out = False
    try:
        out, err = await asyncio.wait_for(proc.communicate(), timeout_s)
    except TimeoutError:
        timed_out = True
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        out, err = await proc.communicate()
    finally:
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            await proc.wait()
    return ProcessResult(
        code=proc.returncode,
        stdout=out.decode(errors="replace"),
        stderr=err.decode(errors="replace"),
        seconds=time.perf_counter() - started,
        timed_out=timed_out,
    )


def upstream_failed(calls: list[CapturedCall]) -> str | None:
    """The error of the rollout's last model call when the upstream failed it (5xx, 429, no
    answer): the model, not the policy, was the problem."""
    for call in reversed(calls):
        if call.error and (call.status >= 500 or call.status in (408, 429)):
            return call.error
        if call.error is None:
            return None
    return None


def time_limit_verdict(result: ProcessResult, calls: list[CapturedCall]) -> Verdict:
    """The verdict of a harness run killed at its time limit: the policy stopped if the model
    kept answering, else the infrastructure failed (no progress, or the upstream failing)."""
    if calls and upstream_failed(calls) is None:
        return Verdict(Outcome.STOPPED, f"time limit ({result.seconds:.0f}s) reached")
    return Verdict(Outcome.INFRASTRUCTURE, f"no progress in {result.seconds:.0f}s")


class CapturedHarness(abc.ABC):
    """Base of adapters whose transcript comes from the capture gateway. Subclasses write the
    harness's config (`prepare`) and judge its exit (`judge`)."""

    name = "external"
    modes = frozenset({ViewMode.AGENTIC})

    def __init__(
        self,
        gateway: CaptureGateway,
        model: str,
        *,
        settings: HarnessSettings | None = None,
    ) -> None:
        self.gateway = gateway
        self.model = model
        self.settings = settings or HarnessSettings()

    @property
    def model_name(self) -> str:
        return self.model

    def executable(self) -> Path:
        """The installed harness's command, or a config error that says how to install it."""
        path = installed(self.name, self.settings.home)
        if path is None:
            raise HarnessConfigError(
                f"{self.name} is not installed: run `weft-tasks harness install {self.name}` "
                f"(looked in {self.settings.home / self.name})"
            )
        return path

    @abc.abstractmethod
    def prepare(
        self, scratch: Path, task: HarnessTask, endpoints: dict[str, MCPEndpoint], base_url: str
    ) -> tuple[list[str], dict[str, str]]:
        """argv and environment of the rollout's process; config files go under `scratch`."""

    @abc.abstractmethod
    def judge(self, result: ProcessResult, scratch: Path, calls: list[CapturedCall]) -> Verdict:
        """The rollout's outcome from the process's exit, its files and the captured calls."""

    async def run(
        self, task: HarnessTask, endpoints: dict[str, MCPEndpoint], on_turn: TurnCallback
    ) -> HarnessRun:
        if task.mode not in self.modes:
            raise HarnessConfigError(f"harness {self.name!r} supports agentic mode only")
        rollout = task.rollout_id or f"{self.name}-{os.getpid()}-{time.monotonic_ns()}"
        base_url = self.gateway.base_url(rollout)
        scratch = Path(tempfile.mkdtemp(prefix=f"weft-{self.name}-{rollout[:24]}-"))
        try:
            argv, env = self.prepare(scratch, task, endpoints, base_url)
            result = await run_process(
                argv, env=env, cwd=scratch, timeout_s=self.settings.timeout_s
            )
            await self.gateway.settle(rollout)
            calls = self.gateway.records(rollout)
            verdict = self.judge(result, scratch, calls)
        finally:
            if not self.settings.keep_scratch:
                shutil.rmtree(scratch, ignore_errors=True)
        if verdict.outcome is Outcome.CONFIG:
            raise HarnessConfigError(f"harness {self.name!r}: {verdict.reason}")
        if verdict.outcome is Outcome.INFRASTRUCTURE:
            raise HarnessInfrastructureError(f"harness {self.name!r}: {verdict.reason}")
        request = self.gateway.last_request(rollout)
        messages = transcript_of(request, calls)
        if not messages:
            raise HarnessInfrastructureError(
                f"harness {self.name!r} made no model call through the gateway "
                f"(exit {result.code}): {result.stderr.strip()[-300:]}"
            )
        await on_turn(list(messages))  # agentic: one turn, the runner ends the episode
        return HarnessRun(
            messages=messages,
            tools=offered_tools(request),
            model=self.model,
            turns=1,
            stopped=verdict.reason if verdict.outcome is Outcome.STOPPED else None,
        )


def tail(text: str, n: int = 300) -> str:
    return " ".join(text.strip()[-n:].split())
