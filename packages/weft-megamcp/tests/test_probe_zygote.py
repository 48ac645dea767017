"""Registration probes forked from one pre-imported sandboxed zygote.

The zygote must give the verdict a dedicated probe gives, and nothing a module does in its
child may change another module's verdict: a child that kills the zygote, crashes or leaves a
process behind costs a dedicated probe or a kill, never a wrong answer.
"""

from __future__ import annotations

import asyncio
import functools
import time
import uuid
from pathlib import Path

import psutil  # type: ignore[import-untyped]
import pytest

from weft_megamcp.exceptions import RegistrationError
from weft_megamcp.objectstore import ObjectStore
from weft_megamcp.registry import Registry
from weft_megamcp.sandbox import Sandbox, SandboxUnavailable, sandbox_for

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@functools.cache
def _no_bwrap() -> str | None:
    try:
        Sandbox(mode="bwrap").require()
    except SandboxUnavailable as exc:
        return str(exc)
    return None


MODES = [
    pytest.param("bwrap", id="bwrap"),
    pytest.param("off", id="off"),
]


def _registry(tmp_path: Path, mode: str, *, timeout_s: float = 30.0) -> Registry:
    if mode == "bwrap" and _no_bwrap():
        pytest.skip(str(_no_bwrap()))
    modules = tmp_path / "data" / "modules"
    store = ObjectStore(str(tmp_path / "data" / "objects"), tmp_path / "data" / "cache")
    return Registry(
        f"sqlite:///{tmp_path / 'data' / 'reg.sqlite'}",
        store,
        modules,
        sandbox=sandbox_for(mode, hidden=[modules.parent]),  # type: ignore[arg-type]
        register_timeout_s=timeout_s,
    )


def _module(tmp_path: Path, name: str, body: str = "", tool: str = "ping") -> Path:
    # A unique comment: the registry caches verdicts by content for the whole test process.
    path = tmp_path / f"{name}.py"
    path.write_text(
        f"# {uuid.uuid4().hex}\nfrom fastmcp import FastMCP\n{body}\nmcp = FastMCP({name!r})\n\n"
        f"@mcp.tool\ndef {tool}() -> str:\n    return 'pong'\n"
    )
    return path


def _running(marker: str) -> list[psutil.Process]:
    out = []
    for p in psutil.process_iter(["cmdline"]):
        if any(marker in part for part in p.info.get("cmdline") or []):
            out.append(p)
    return out


@pytest.mark.parametrize("mode", MODES)
async def test_modules_registered_together_fork_from_one_zygote(tmp_path: Path, mode: str):
    reg = _registry(tmp_path, mode)
    try:
        paths = [_module(tmp_path, f"m{i}", tool=f"tool_{i}") for i in range(3)]
        recs = await asyncio.gather(*(reg.register(p) for p in paths))
        assert [[t.name for t in r.tools] for r in recs] == [[f"tool_{i}"] for i in range(3)]
        assert reg.probes is not None
        assert reg.probes.forked == 3 and reg.probes.started == 1
        screen = recs[0].metadata["screen"]
        assert screen["tier"] == "shared_process", screen
    finally:
        await reg.aclose()


@pytest.mark.parametrize("mode", MODES)
async def test_a_module_that_kills_the_zygote_gets_a_dedicated_probe(tmp_path: Path, mode: str):
    reg = _registry(tmp_path, mode)
    try:
        # In the zygote this kills the zygote; in a dedicated probe its parent is the sandbox's
        # init (bwrap) or the probe's own Python start, so the verdict still comes back.
        killer = _module(
            tmp_path,
            "killer",
            "import os, signal, sys\n"
            "if 'weft_megamcp._probe_zygote' in open(\n"
            "        f'/proc/{os.getppid()}/cmdline').read():\n"
            "    os.kill(os.getppid(), signal.SIGKILL)\n",
        )
        rec = await reg.register(killer)
        assert [t.name for t in rec.tools] == ["ping"]
        assert reg.probes is not None and reg.probes.forked == 0
        good = await reg.register(_module(tmp_path, "after"))  # a new zygote answers
        assert [t.name for t in good.tools] == ["ping"]
        assert reg.probes.forked == 1 and reg.probes.started == 2
    finally:
        await reg.aclose()


@pytest.mark.parametrize("mode", MODES)
async def test_a_failing_module_gets_the_dedicated_probes_message(tmp_path: Path, mode: str):
    reg = _registry(tmp_path, mode)
    try:
        bad = _module(tmp_path, "bad", "raise ValueError('no config file')\n")
        with pytest.raises(RegistrationError) as err:
            await reg.register(bad)
        msg = str(err.value)
        assert "ValueError: no config file" in msg and "\n" not in msg, msg
        assert reg.probes is not None and reg.probes.forked == 0
    finally:
        await reg.aclose()


@pytest.mark.parametrize("mode", MODES)
async def test_a_hanging_module_times_out_without_holding_up_the_others(tmp_path: Path, mode: str):
    reg = _registry(tmp_path, mode, timeout_s=8.0)
    try:
        hangs = asyncio.create_task(
            reg.register(_module(tmp_path, "hangs", "import time\ntime.sleep(3600)\n"))
        )
        good = asyncio.create_task(reg.register(_module(tmp_path, "quick")))
        done, _ = await asyncio.wait({hangs, good}, return_when=asyncio.FIRST_COMPLETED)
        assert done == {good} and [t.name for t in good.result().tools] == ["ping"]
        with pytest.raises(RegistrationError, match="register_timeout_s"):
            await hangs
        assert reg.probes is not None and reg.probes.started == 1
    finally:
        await reg.aclose()


async def test_nothing_a_module_starts_outlives_its_probe(tmp_path: Path):
    reg = _registry(tmp_path, "bwrap")
    assert reg.probes is not None
    reg.probes.idle_s = 600  # the zygote stays up: only its sweep can end the daemon
    marker = f"weft-daemon-{uuid.uuid4().hex}"
    try:
        daemon = _module(
            tmp_path,
            "daemon",
            "import os, sys\n"
            "if os.fork() == 0:\n"
            "    os.setsid()\n"
            f"    os.execv(sys.executable, [sys.executable, '-c', 'import time; time.sleep(600)', "
            f"{marker!r}])\n",
        )
        await reg.register(daemon)
        assert reg.probes.forked == 1
        deadline = time.monotonic() + 20
        while _running(marker):
            assert time.monotonic() < deadline, "the module's daemon outlived its probe"
            await asyncio.sleep(0.2)
        assert reg.probes.started == 1  # the zygote itself is still up
        assert reg.probes._z is not None and reg.probes._z.proc.returncode is None
    finally:
        await reg.aclose()


async def test_a_warmed_zygote_serves_the_first_probe_and_exits_unused(tmp_path: Path):
    reg = _registry(tmp_path, "off")
    try:
        assert reg.probes is not None
        await reg.probes.warm()
        assert reg.probes.started == 1
        rec = await reg.register(_module(tmp_path, "warm"))
        assert [t.name for t in rec.tools] == ["ping"]
        assert reg.probes.forked == 1 and reg.probes.started == 1  # the warmed one served it

        reg.probes.close()
        await reg.probes.warm(within_s=0.2)  # nobody probes: it goes by itself
        z = reg.probes._z
        assert z is not None and reg.probes.started == 2
        await asyncio.wait_for(z.proc.wait(), 10)
        assert reg.probes._z is None
    finally:
        await reg.aclose()
