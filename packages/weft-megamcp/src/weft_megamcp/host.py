"""Run a real MegaMCP host for tests and pipelines: in this process, or as a subprocess."""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

import httpx
import uvicorn

from weft_megamcp.exceptions import MegaMCPRuntimeError
from weft_megamcp.settings import MegaMCPSettings

if TYPE_CHECKING:
    from weft_megamcp.app import HostCore

STARTUP_TIMEOUT_S = 180.0


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening TCP socket for uvicorn.

    The protocol must be given as IPPROTO_TCP: asyncio sets TCP_NODELAY on accepted connections
    only for sockets whose `proto` says TCP, and without it every small response waits for the
    client's delayed ACK (~40 ms per call). TCP_NODELAY is also set on the listener, which Linux
    copies to accepted sockets.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind((host, port))
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def uvicorn_options(settings: MegaMCPSettings) -> dict[str, Any]:
    """Server options shared by every way of serving: long keep-alive, because thousands of
    session clients reuse their connections and a server-side close racing a reused
    connection surfaces as a client ReadError."""
    return {
        "log_level": settings.log_level,
        "backlog": 4096,
        "timeout_keep_alive": settings.keep_alive_s,
        "timeout_graceful_shutdown": 5,
        "ws": "none",  # MCP is plain HTTP; importing websockets costs ~2.8 MiB per process
    }


def url_of(host: str, port: int) -> str:
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


class MegaMCPHost:
    """A running host: `url`, `admin_token`, and `stop()`.

    `await MegaMCPHost.start(settings)` serves in this process's event loop (uvicorn on
    127.0.0.1, a free port unless set); `subprocess=True` runs `weft-megamcp serve` instead
    (needed for --workers > 1 or to kill the host in a test).
    """

    def __init__(self, url: str, admin_token: str, settings: MegaMCPSettings) -> None:
        self.url = url
        self.admin_token = admin_token
        self.settings = settings
        self.core: HostCore | None = None
        self._server: uvicorn.Server | None = None
        self._task: asyncio.Task[Any] | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._sock: socket.socket | None = None

    @classmethod
    async def start(
        cls,
        settings: MegaMCPSettings | None = None,
        *,
        subprocess: bool = False,
        while_starting: Callable[[], object] | None = None,
    ) -> MegaMCPHost:
        """`while_starting` runs in this thread once a subprocess host's process is started and
        before its health is awaited, so a caller's own slow work (imports, loading its inputs)
        overlaps the host's boot; an exception from it stops the host and propagates. For a
        host in this process it runs first."""
        settings = settings or MegaMCPSettings()
        if settings.admin_token is None:
            settings = settings.model_copy(update={"admin_token": secrets.token_urlsafe(32)})
        if subprocess or settings.workers > 1:
            return await cls._start_subprocess(settings, while_starting)
        if while_starting is not None:
            while_starting()
        # Imported here: a caller that only starts a subprocess host (the weft-tasks CLI, while
        # its own imports run) does not pay for the host's.
        from weft_megamcp.app import HostASGI, HostCore

        core = HostCore(settings)
        sock = bind_socket(settings.host, settings.port)
        port = sock.getsockname()[1]
        host = cls(url_of(settings.host, port), core.admin_token, settings)
        core.base_url = host.url
        server = uvicorn.Server(
            uvicorn.Config(HostASGI(core), lifespan="on", **uvicorn_options(settings))
        )
        host.core, host._server = core, server
        host._task = asyncio.create_task(server.serve(sockets=[sock]), name="megamcp-uvicorn")
        while not server.started:
            if host._task.done():
                host._task.result()
                raise MegaMCPRuntimeError("MegaMCP host stopped during startup")
            await asyncio.sleep(0.01)
        host._sock = sock
        return host

    @classmethod
    async def _start_subprocess(
        cls, settings: MegaMCPSettings, while_starting: Callable[[], object] | None
    ) -> MegaMCPHost:
        port = settings.port
        if port == 0:
            probe = bind_socket(settings.host, 0)
            port = probe.getsockname()[1]
            probe.close()
        assert settings.admin_token is not None
        # The child reads every setting from its environment (flags only for those the CLI
        # names): a WEFT_MEGAMCP_* variable of this process that the settings do not carry
        # would otherwise override them there.
        env = {k: v for k, v in os.environ.items() if not k.upper().startswith("WEFT_MEGAMCP_")}
        env.update(settings.as_environ())
        argv = [
            sys.executable,
            "-m",
            "weft_megamcp.cli",
            "serve",
            "--host",
            settings.host,
            "--port",
            str(port),
            "--workers",
            str(settings.workers),
            "--data-dir",
            str(settings.data_dir),
        ]
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        with open(settings.data_dir.resolve() / "host.log", "ab") as log:
            proc = subprocess.Popen(argv, env=env, stdout=log, stderr=log)
        host = cls(url_of(settings.host, port), settings.admin_token, settings)
        host._proc = proc
        if while_starting is not None:
            try:
                while_starting()
            except BaseException:
                proc.kill()
                proc.wait()
                raise
        # Generous: a prefork start (fork server preload, first worker) on a loaded 2-core
        # machine has been measured at over a minute.
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        async with httpx.AsyncClient() as http:
            while True:
                if proc.poll() is not None:
                    raise MegaMCPRuntimeError(
                        f"weft-megamcp serve exited with {proc.returncode} during startup"
                    )
                with contextlib.suppress(httpx.HTTPError):
                    if (await http.get(f"{host.url}/health", timeout=2)).status_code == 200:
                        return host
                if time.monotonic() > deadline:
                    proc.kill()
                    raise MegaMCPRuntimeError(
                        f"weft-megamcp serve did not become healthy within {STARTUP_TIMEOUT_S:g} s"
                    )
                await asyncio.sleep(0.1)

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else os.getpid()

    async def stop(self) -> None:
        if self._server is not None and self._task is not None:
            self._server.should_exit = True
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._server = None
            if self._sock is not None:
                self._sock.close()
                self._sock = None
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                await asyncio.to_thread(self._proc.wait, 15)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                await asyncio.to_thread(self._proc.wait)

    @classmethod
    @contextlib.asynccontextmanager
    async def running(
        cls,
        settings: MegaMCPSettings | None = None,
        *,
        subprocess: bool = False,
        while_starting: Callable[[], object] | None = None,
    ) -> AsyncIterator[MegaMCPHost]:
        host = await cls.start(settings, subprocess=subprocess, while_starting=while_starting)
        try:
            yield host
        finally:
            await host.stop()
