"""Hosted server processes run sandboxed: a hostile file server reaches only its own session.

The issue's attack: a 30-line stdio MCP with `ls`/`read` tools, hosted by a real `weft-megamcp
serve`, read another session's DB, the stored verifier code, the registry DB and the admin token
(from the host's /proc/<pid>/environ; base64 slipped past the result scrubber).
"""

from __future__ import annotations

import base64
import contextlib
import functools
import secrets
import shutil
import sys
from pathlib import Path

import pytest

from weft_megamcp.app import HostCore
from weft_megamcp.client import MegaMCPClient
from weft_megamcp.host import MegaMCPHost
from weft_megamcp.models import CallResult, GroupHandle
from weft_megamcp.sandbox import Sandbox, SandboxUnavailable
from weft_megamcp.settings import MegaMCPSettings


@functools.cache
def _sandbox_unavailable() -> str | None:
    """Why bwrap cannot run here (a container without user namespaces), or None."""
    try:
        Sandbox(mode="bwrap").require()
    except SandboxUnavailable as exc:
        return str(exc)
    return None


DATA = Path(__file__).parent / "data"


def _seen(res: CallResult) -> bytes:
    """Everything a call showed the agent, with base64 payloads decoded."""
    out = res.text.encode()
    if not res.is_error and isinstance(res.structured, dict):
        value = res.structured.get("result")
        if isinstance(value, str):
            with contextlib.suppress(ValueError):
                out += base64.b64decode(value, validate=True)
    return out


def test_missing_bwrap_fails_closed_naming_the_setting(tmp_path: Path):
    box = Sandbox(mode="bwrap", bwrap="weft-no-such-bwrap")
    with pytest.raises(SandboxUnavailable) as err:
        box.wrap(["true"], env={}, workspace=tmp_path, db=None)
    msg = str(err.value)
    assert "\n" not in msg and "WEFT_MEGAMCP_SANDBOX=off" in msg and "bubblewrap" in msg


def test_wrap_binds_no_hidden_root(tmp_path: Path):
    data = tmp_path / "data"
    (data / "groups").mkdir(parents=True)
    box = Sandbox(mode="bwrap", hidden=(data.resolve(),), runtime=(tmp_path.resolve(),))
    if (reason := _sandbox_unavailable()) is not None:
        pytest.skip(f"no usable sandbox on this machine: {reason}")
    spec = box.wrap([sys.executable, "-V"], env={"X": "1"}, workspace=data / "groups", db=None)
    sources = [spec.argv[i + 1] for i, a in enumerate(spec.argv) if a in ("--ro-bind", "--bind")]
    # tmp_path holds the data dir: it is not bound; the workspace is, at /session/workspace.
    assert str(tmp_path.resolve()) not in sources
    assert spec.argv[spec.argv.index(str(data / "groups")) + 1] == "/session/workspace"
    assert "--clearenv" in spec.argv and "--unshare-pid" in spec.argv
    assert all("MEGAMCP" not in a for a in spec.argv)


@pytest.mark.integration
@pytest.mark.slow
async def test_hosted_file_server_reaches_nothing_outside_its_workspace(
    tmp_path: Path, bundle_dir: Path
):
    if (reason := _sandbox_unavailable()) is not None:
        pytest.skip(f"no usable sandbox on this machine: {reason}")
    admin = "adm-" + secrets.token_urlsafe(24)
    secret_email = f"secret-{secrets.token_hex(6)}@x.y"
    verifier_marker = f"VERIFIER-SECRET-{secrets.token_hex(6)}"
    neighbour_note = f"NEIGHBOUR-{secrets.token_hex(6)}"
    server = tmp_path / "srv" / "file_server.py"
    server.parent.mkdir()
    shutil.copyfile(DATA / "file_server.py", server)
    settings = MegaMCPSettings(data_dir=tmp_path / "megamcp", admin_token=admin)
    data = settings.data_dir.resolve()
    async with (
        MegaMCPHost.running(settings, subprocess=True) as host,
        MegaMCPClient(host.url, admin) as client,
    ):
        notes = await client.register(bundle_dir)
        files = await client.register_command([sys.executable, str(server)], name="files")
        verifier_id = await client.put_verifier(
            "python",
            f"# {verifier_marker}\ndef verify(evidence, checkpoint, bindings):\n    return []\n",
        )
        other: GroupHandle = await client.create_group([notes.mcp_id, files.mcp_id])
        await client.call_tool(
            other, notes.mcp_id, "add_contact", {"name": "S", "email": secret_email}
        )
        await client.call_tool(
            other, files.mcp_id, "write", {"path": "n.txt", "text": neighbour_note}
        )
        mine = await client.create_group([files.mcp_id], verifier=verifier_id)
        m = files.mcp_id

        async def call(tool: str, **args: str) -> CallResult:
            return await client.call_tool(mine, m, tool, args)

        # The server works inside its own workspace (the control: a broken server proves nothing).
        assert not (await call("write", path="mine.txt", text="hello")).is_error
        assert (
            base64.b64decode((await call("read", path="mine.txt")).structured["result"]) == b"hello"
        )
        assert "mine.txt" in (await call("ls", path=".")).structured["result"]

        groups = data / "groups"
        other_root = groups / other.group_id
        targets = {
            "other session's DB": other_root / notes.mcp_id / "state.sqlite",
            "other session's workspace": other_root / m / "workspace" / "n.txt",
            "registry DB": data / "registry.sqlite",
            "host log": data / "host.log",
            "host environ": Path(f"/proc/{host.pid}/environ"),
            "host cmdline": Path(f"/proc/{host.pid}/cmdline"),
        }
        blobs = sorted((data / "objects").rglob("*"))
        targets |= {f"object {p.name[:8]}": p for p in blobs if p.is_file()}
        seen = b""
        for what, path in targets.items():
            res = await call("read", path=str(path))
            seen += _seen(res)
            assert res.is_error, f"the sandboxed server read the {what} ({path})"
        for folder in (data, groups, other_root, data / "objects"):
            res = await call("ls", path=str(folder))
            seen += _seen(res)
            assert res.is_error, f"listed {folder}"
        # The folder holding the data dir shows only the path to the server's own script.
        assert (await call("ls", path=str(tmp_path))).structured["result"] == ["srv"]
        assert (await call("ls", path=str(server.parent))).structured["result"] == [server.name]
        # Its own session view: the workspace and its DB, nothing else of the host's session dir.
        assert sorted((await call("ls", path="/session")).structured["result"]) == [
            "state.sqlite",
            "workspace",
        ]
        # /proc shows only the sandbox's own processes; none of them carries a host secret.
        pids = [p for p in (await call("ls", path="/proc")).structured["result"] if p.isdigit()]
        assert 1 <= len(pids) <= 3, pids
        for pid in pids:
            seen += _seen(await call("read", path=f"/proc/{pid}/environ"))
        env = (await call("env")).structured
        assert not any(k.startswith("WEFT_MEGAMCP") for k in env), env
        seen += str(env).encode()
        for secret in (admin, secret_email, verifier_marker, neighbour_note, str(data)):
            assert secret.encode() not in seen, f"{secret[:16]}... reached the sandboxed server"
            assert base64.b64encode(secret.encode()) not in seen
        # The host read its token from WEFT_MEGAMCP_ADMIN_TOKEN and scrubbed it: not even a
        # process of the same user outside any sandbox finds it in the host's environment.
        assert admin.encode() not in Path(f"/proc/{host.pid}/environ").read_bytes()
        # The neighbour's file is intact and its own server still reads it.
        res = await client.call_tool(other, m, "read", {"path": "n.txt"})
        assert base64.b64decode(res.structured["result"]).decode() == neighbour_note


def test_host_without_bwrap_fails_closed_at_startup(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no bwrap anywhere on PATH
    settings = MegaMCPSettings(data_dir=tmp_path / "megamcp", admin_token="adm")
    with pytest.raises(SandboxUnavailable, match="WEFT_MEGAMCP_SANDBOX=off"):
        HostCore(settings)
    # The opt-out serves (unsandboxed) and says so only through its setting.
    HostCore(settings.model_copy(update={"sandbox": "off"})).registry.close()


def test_serve_without_bwrap_prints_one_line_and_exits_2(tmp_path: Path):
    import subprocess

    env = {"PATH": str(tmp_path), "HOME": str(tmp_path)}
    proc = subprocess.run(
        [sys.executable, "-m", "weft_megamcp.cli", "serve", "--data-dir", str(tmp_path / "d")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "WEFT_MEGAMCP_SANDBOX=off" in lines[0], proc.stderr
