"""`weft-megamcp register` and `weft-megamcp serve` as real subprocesses on 127.0.0.1."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import httpx
import pytest

from weft_megamcp.client import MegaMCPClient
from weft_megamcp.host import bind_socket

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "weft_megamcp.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
    )


async def test_register_then_serve(tmp_path, bundle_dir):
    data = tmp_path / "data"
    out = _cli("register", str(bundle_dir), "--data-dir", str(data), "--json")
    assert out.returncode == 0, out.stderr
    rec = json.loads(out.stdout)
    assert rec["mcp_id"] == "notes_crm" and rec["version"] == 1
    again = _cli("register", str(bundle_dir), "--data-dir", str(data))
    assert again.returncode == 0 and "notes_crm v1" in again.stdout
    bad = _cli("register", str(tmp_path / "nope"), "--data-dir", str(data))
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "no such file" in bad.stderr

    config = tmp_path / "megamcp.toml"
    config.write_text(f'[megamcp]\ndata_dir = "{data}"\ncall_timeout_s = 30\n')
    probe = bind_socket("127.0.0.1", 0)
    port = probe.getsockname()[1]
    probe.close()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "weft_megamcp.cli",
            "serve",
            "--port",
            str(port),
            "--config",
            str(config),
        ],
        env={**os.environ, "WEFT_MEGAMCP_ADMIN_TOKEN": "cli-admin-token"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.2)
        async with MegaMCPClient(url, "cli-admin-token") as client:
            assert [r.mcp_id for r in await client.mcps()] == ["notes_crm"]  # registered by the CLI
            g = await client.create_group(["notes_crm"])
            res = await client.call_tool(g, "notes_crm", "list_contacts")
            assert not res.is_error and len(res.structured["result"]) == 2
            await client.close(g)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert proc.returncode in (0, -15)


def test_bad_config_is_one_line(tmp_path):
    config = tmp_path / "bad.toml"
    config.write_text("[megamcp]\nno_such_setting = 1\n")
    out = _cli("serve", "--config", str(config))
    assert out.returncode == 2 and "unknown setting" in out.stderr and out.stderr.count("\n") == 1


def test_register_a_suite_of_commands(tmp_path):
    from pathlib import Path

    data_dir = Path(__file__).parent / "data"
    data = tmp_path / "data"
    notes = f"notes={sys.executable} {data_dir / 'stdio_notes.py'}"
    shelf = f"shelf={sys.executable} {data_dir / 'stdio_shelf.py'}"
    out = _cli(
        "register", "--member", notes, "--member", shelf, "--name", "desk",
        "--data-dir", str(data), "--json",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    rec = json.loads(out.stdout)
    assert rec["mcp_id"] == "desk" and rec["kind"] == "command"
    assert rec["metadata"]["tool_members"] == {
        "note": "notes", "read": "notes", "shelf": "shelf", "words": "shelf", "shelf_calls": "shelf"
    }  # fmt: skip
    for bad, needle in [
        (["--member", "nocommand", "--name", "x"], "write NAME=COMMAND"),
        (["--member", notes], "needs --name"),
        (["--member", notes, "--member", notes, "--name", "x"], "given twice"),
        (["--member", notes, "--command", "true", "--name", "x"], "give one of"),
    ]:
        out = _cli("register", *bad, "--data-dir", str(data))
        assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr
        assert needle in out.stderr, out.stderr
