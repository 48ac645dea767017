"""Shared fixtures: the hand-written bundle and a real in-process host on 127.0.0.1."""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from weft_megamcp.client import MegaMCPClient
from weft_megamcp.host import MegaMCPHost
from weft_megamcp.models import GroupHandle
from weft_megamcp.registry import MCPRecord
from weft_megamcp.settings import MegaMCPSettings

DATA = Path(__file__).parent / "data"


@pytest.fixture
def bundle_dir(tmp_path: Path) -> Path:
    """A private copy of the notes bundle (tests may edit it to make new versions)."""
    dst = tmp_path / "notes_bundle"
    shutil.copytree(DATA / "notes_bundle", dst, ignore=shutil.ignore_patterns("__pycache__"))
    return dst


@pytest.fixture
def settings(tmp_path: Path) -> MegaMCPSettings:
    return MegaMCPSettings(
        data_dir=tmp_path / "megamcp", admin_token="admin-secret-token", offload_after_s=3600
    )


@pytest.fixture
async def host(settings: MegaMCPSettings) -> AsyncIterator[MegaMCPHost]:
    async with MegaMCPHost.running(settings) as h:
        yield h


@pytest.fixture
async def client(host: MegaMCPHost) -> AsyncIterator[MegaMCPClient]:
    async with MegaMCPClient(host.url, host.admin_token) as c:
        yield c


@pytest.fixture
async def notes(client: MegaMCPClient, bundle_dir: Path) -> MCPRecord:
    return await client.register(bundle_dir)


@pytest.fixture
async def group(client: MegaMCPClient, notes: MCPRecord) -> GroupHandle:
    return await client.create_group({notes.mcp_id: None})


# ---- real backing services: PostgreSQL (Debian's server binaries) and an S3 server ----------


def _postgres_bin() -> Path | None:
    found = shutil.which("initdb")
    if found:
        return Path(found).parent
    versions = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), reverse=True)
    return versions[0].parent if versions else None


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """A throwaway PostgreSQL server (Debian's `postgresql` package: initdb + postgres) on a
    Unix socket in a temp folder; yields a psycopg URL prefix `postgresql+psycopg://...` without
    the database name. Skips when the binaries or psycopg are missing. As root (CI
    containers), the server runs as the `postgres` user, since PostgreSQL refuses root."""
    pytest.importorskip("psycopg")
    bindir = _postgres_bin()
    if bindir is None:
        pytest.skip("PostgreSQL server binaries not installed (apt-get install postgresql)")
    import pwd
    import subprocess
    import tempfile
    import time

    user = None
    if os.geteuid() == 0:
        try:
            user = pwd.getpwnam("postgres")
        except KeyError:
            pytest.skip("running as root and there is no 'postgres' user to run the server")
    root = Path(tempfile.mkdtemp(prefix="weft-pg-"))  # not under pytest's root-only tmp
    data, sock = root / "data", root / "sock"
    sock.mkdir()
    if user is not None:
        for p in (root, sock):
            os.chown(p, user.pw_uid, user.pw_gid)

    def as_user() -> None:
        if user is not None:
            os.setgid(user.pw_gid)
            os.setuid(user.pw_uid)

    proc: subprocess.Popen[bytes] | None = None
    try:
        subprocess.run(
            [str(bindir / "initdb"), "-D", str(data), "-U", "weft", "-A", "trust", "--no-sync"],
            check=True,
            capture_output=True,
            preexec_fn=as_user,
            timeout=120,
        )
        port = "5433"
        proc = subprocess.Popen(
            [
                *(str(bindir / "postgres"), "-D", str(data), "-k", str(sock), "-p", port),
                *("-c", "listen_addresses=", "-c", "fsync=off", "-c", "max_connections=200"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=as_user,
        )
        url = f"postgresql+psycopg://weft@/{{db}}?host={sock}&port={port}"
        import psycopg

        deadline = time.monotonic() + 120  # generous: a loaded 2-core CI machine
        while True:
            try:
                psycopg.connect(f"host={sock} port={port} user=weft dbname=postgres").close()
                break
            except psycopg.OperationalError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.skip("the PostgreSQL server did not start")
                time.sleep(0.2)
        yield url
    finally:
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def postgres_url(postgres_server: str) -> str:
    """A fresh, empty database on the session's PostgreSQL server."""
    import secrets

    import psycopg

    name = f"t_{secrets.token_hex(6)}"
    params = postgres_server.split("?", 1)[1]
    kv = dict(p.split("=", 1) for p in params.split("&"))
    with psycopg.connect(
        f"host={kv['host']} port={kv['port']} user=weft dbname=postgres", autocommit=True
    ) as con:
        con.execute(f"CREATE DATABASE {name}")
    return postgres_server.format(db=name)


@pytest.fixture(scope="session")
def s3_server() -> Iterator[str]:
    """moto's S3 server (`moto.server`, the real HTTP S3 REST API over a socket, in a
    subprocess) on 127.0.0.1; yields its endpoint URL. Skips when moto[server] is missing."""
    pytest.importorskip("moto.server")
    pytest.importorskip("s3fs")
    import subprocess
    import sys
    import time

    import httpx

    from weft_megamcp.host import bind_socket

    probe = bind_socket("127.0.0.1", 0)
    port = probe.getsockname()[1]
    probe.close()
    proc = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    endpoint = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                httpx.get(f"{endpoint}/moto-api/", timeout=2)
                break
            except httpx.HTTPError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.skip("moto's S3 server did not start")
                time.sleep(0.2)
        yield endpoint
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except Exception:
            proc.kill()
            proc.wait()


@pytest.fixture
def s3_bucket(s3_server: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """A fresh bucket on the S3 server; the AWS_* variables point s3fs (botocore) at it."""
    import secrets

    import s3fs

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", s3_server)
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_server)
    bucket = f"weft-{secrets.token_hex(4)}"
    s3fs.S3FileSystem(anon=False, skip_instance_cache=True).mkdir(bucket)
    return bucket
