"""Legacy-handshake interop: langchain-mcp-adapters 0.3 on mcp 1.x, from its own venv, against
the current stack (a plain fastmcp 4 / mcp 2 server, and a MegaMCP session)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from weft_megamcp.client import MegaMCPClient
from weft_megamcp.models import GroupHandle
from weft_megamcp.registry import MCPRecord

HERE = Path(__file__).parent
REQUIREMENTS = ["langchain-mcp-adapters==0.3.*", "mcp<2"]
VENV_KEY = f"weft-interop-lcmcp0.3-mcp1-py{sys.version_info[0]}{sys.version_info[1]}"
TOKEN = "legacy-interop-token"

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture(scope="session")
def legacy_python() -> Path:
    """A venv with the legacy client stack, built once and cached under the temp dir."""
    venv = Path(tempfile.gettempdir()) / VENV_KEY
    python = venv / "bin" / "python"
    ready = venv / ".ready"
    if not ready.exists():
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
        pip = subprocess.run(
            [str(python), "-m", "pip", "install", "-q", *REQUIREMENTS],
            capture_output=True,
            text=True,
            timeout=900,
        )
        if pip.returncode != 0:
            pytest.skip(f"cannot install {REQUIREMENTS} (no package index?): {pip.stderr[-400:]}")
        ready.write_text(" ".join(REQUIREMENTS))
    return python


async def run_legacy(python: Path, url: str, token: str, calls: list[Any]) -> dict[str, Any]:
    proc = await asyncio.create_subprocess_exec(
        str(python),
        str(HERE / "legacy_client.py"),
        url,
        token,
        json.dumps(calls),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), timeout=300)
    if proc.returncode != 0:
        return {"returncode": proc.returncode, "stderr": err.decode()[-2000:]}
    return json.loads(out.decode().strip().splitlines()[-1])


@pytest.fixture(scope="module")
def token_server() -> Iterator[str]:
    proc = subprocess.Popen(
        [sys.executable, str(HERE / "token_server.py"), TOKEN], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("PORT "), line
        yield f"http://127.0.0.1:{int(line.split()[1])}/mcp"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


async def test_legacy_client_against_plain_fastmcp4(legacy_python: Path, token_server: str) -> None:
    out = await run_legacy(
        legacy_python,
        token_server,
        TOKEN,
        [["add", {"a": 20, "b": 22}], ["remember", {"text": "hi"}], ["fail", {"reason": "nope"}]],
    )
    assert out.get("returncode") is None, out
    assert out["mcp_version"].startswith("1.")
    # mcp 2.x servers accept the legacy initialize handshake (a pre-2026 protocol version)
    assert out["raw"]["protocol_version"] < "2026"
    assert out["raw"]["tools"] == ["add", "fail", "remember"]
    results = {r["tool"]: r for r in out["results"]}
    assert "42" in results["add"]["text"]
    assert "'count': 1" in results["remember"]["text"] or '"count":1' in results["remember"]["text"]
    assert "nope" in results["fail"]["text"]

    denied = await run_legacy(legacy_python, token_server, "bad-token", [])
    assert denied.get("returncode"), "a wrong token must be refused"
    assert "401" in denied["stderr"]


async def test_legacy_client_against_megamcp(
    legacy_python: Path, client: MegaMCPClient, notes: MCPRecord, group: GroupHandle
) -> None:
    info = group.session(notes.mcp_id)
    out = await run_legacy(
        legacy_python,
        info.url,
        info.token,
        [
            ["add_contact", {"name": "Legacy", "email": "legacy.client@example.net"}],
            ["list_contacts", {}],
            ["add_contact", {"name": "Bad", "email": "no-at-sign"}],
        ],
    )
    assert out.get("returncode") is None, out
    assert out["raw"]["protocol_version"] < "2026"
    assert {"add_contact", "list_contacts"} <= set(out["tools"])
    results = out["results"]
    assert "legacy.client@example.net" in results[1]["text"]
    assert "invalid email" in results[2]["text"]
    # the write is in this session, seen through the current-protocol SDK
    seen = await client.call_tool(group, notes.mcp_id, "list_contacts", {})
    assert "legacy.client@example.net" in str(seen.structured or seen.content)

    denied = await run_legacy(legacy_python, info.url, "not-a-session-token", [])
    assert denied.get("returncode"), "a wrong token must be refused"
