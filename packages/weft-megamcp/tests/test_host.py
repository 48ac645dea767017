"""Listening sockets of every way of serving set TCP_NODELAY (no delayed-ACK stall per call)."""

from __future__ import annotations

import socket
from pathlib import Path

import httpx
import pytest

from weft_megamcp.host import MegaMCPHost, bind_socket
from weft_megamcp.settings import MegaMCPSettings


def _nodelay(sock: socket.socket) -> bool:
    return bool(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))


def test_bind_socket_is_tcp_with_nodelay() -> None:
    sock = bind_socket("127.0.0.1", 0)
    try:
        # asyncio sets TCP_NODELAY on accepted connections only when `proto` names TCP.
        assert sock.proto == socket.IPPROTO_TCP
        assert _nodelay(sock)
    finally:
        sock.close()


async def test_embedded_host_connections_have_nodelay(host: MegaMCPHost) -> None:
    assert host._server is not None and host._sock is not None
    assert _nodelay(host._sock)
    async with httpx.AsyncClient() as http:
        assert (await http.get(f"{host.url}/health")).status_code == 200
        accepted = [
            conn.transport.get_extra_info("socket")
            for conn in host._server.server_state.connections
        ]
        assert accepted, "the host holds the client's keep-alive connection"
        assert all(_nodelay(s) for s in accepted)


def test_settings_as_environ_reproduce_the_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    """What a subprocess host is given: every setting, lists and paths included, read back
    through the WEFT_MEGAMCP_* parser to the same values."""
    from weft_megamcp.settings import load_settings

    settings = MegaMCPSettings(
        data_dir=Path("/tmp/weft-env-roundtrip"),
        admin_token="tok",
        allowed_hosts=["example.org", "a.test"],
        sandbox="off",
        sandbox_ro_paths=[Path("/opt/x")],
        call_timeout_s=12.5,
        screen_limited_cap=7,
        log_level="debug",
    )
    for key, value in settings.as_environ().items():
        monkeypatch.setenv(key, value)
    assert load_settings(None) == settings


@pytest.mark.integration
async def test_while_starting_runs_during_a_subprocess_boot(tmp_path: Path) -> None:
    import psutil

    def serving() -> list[psutil.Process]:
        return [
            p
            for p in psutil.Process().children(recursive=True)
            if str(tmp_path) in " ".join(p.cmdline())
        ]

    def fail() -> None:
        assert serving(), "the host's process is started before the hook runs"
        raise ValueError("bad input")

    settings = MegaMCPSettings(data_dir=tmp_path / "a")
    with pytest.raises(ValueError, match="bad input"):
        await MegaMCPHost.start(settings, subprocess=True, while_starting=fail)
    assert not [p for p in serving() if p.status() != psutil.STATUS_ZOMBIE]

    calls: list[int] = []
    settings = MegaMCPSettings(data_dir=tmp_path / "b")
    async with (
        MegaMCPHost.running(
            settings, subprocess=True, while_starting=lambda: calls.append(len(serving()))
        ) as host,
        httpx.AsyncClient() as http,
    ):
        assert (await http.get(f"{host.url}/health")).status_code == 200
    assert calls and calls[0] >= 1 and len(calls) == 1
