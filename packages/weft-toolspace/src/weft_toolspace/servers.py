"""The five real offline MCP servers of the trace corpus, installed into a cache folder and hosted
in MegaMCP's command tier (one private process per session, state in the session workspace).

    filesystem  @modelcontextprotocol/server-filesystem (npm)  root: the session workspace
    memory      @modelcontextprotocol/server-memory (npm)      MEMORY_FILE_PATH in the workspace
    git         mcp-server-git (PyPI)                          a repository in the workspace (one
                                                               commit of a README, fixed dates)
    sqlite      mcp-server-sqlite (PyPI)                       the session DB (WEFT_DB_PATH)
    time        mcp-server-time (PyPI)                         stateless

and one suite (MegaMCP `register_suite`: the members run side by side in each session, over one
workspace):

    repo        filesystem + git                               a git repository the filesystem
                                                               server writes in (write, add,
                                                               commit, log, show, edit, diff)

Each PyPI server gets its own venv: mcp-server-sqlite 2025.4.25 only answers with mcp 1.x.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections import ChainMap
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from weft_toolspace.exceptions import ToolSpaceRuntimeError, ToolSpaceUserError

if TYPE_CHECKING:
    from weft_megamcp import MegaMCPClient

WS = "${WEFT_WORKSPACE}"
DB = "${WEFT_DB_PATH}"
_GIT_ENV = {
    "GIT_AUTHOR_NAME": "weft",
    "GIT_AUTHOR_EMAIL": "weft@example.org",
    "GIT_COMMITTER_NAME": "weft",
    "GIT_COMMITTER_EMAIL": "weft@example.org",
    # Fixed dates make commit hashes a function of content and parents: a chain that logs a hash
    # and shows it replays from s_0 (as SOURCE_DATE_EPOCH does for reproducible builds). Git's
    # raw form (2026-01-01T00:00:00Z): GitPython, which git_commit uses, refuses an ISO date
    # with an offset ("Unsupported date format").
    "GIT_AUTHOR_DATE": "1767225600 +0000",
    "GIT_COMMITTER_DATE": "1767225600 +0000",
}
# s_0 of the repository: one commit of a README, so log, show, branch and checkout have history.
_GIT_INIT = (
    "test -d .git || { git init -q . && printf '# notes\\n' > README.md"
    " && git add README.md && git commit -qm 'initial commit'; }"
)


@dataclass(frozen=True)
class RealServer:
    name: str
    registry: str  # "npm" or "pypi"
    requirements: tuple[str, ...]
    executable: str
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    init: str | None = None  # shell run in the workspace before the server starts
    members: tuple[str, ...] = ()  # a suite's servers (registry "suite"): one workspace

    def folder(self, home: Path) -> Path:
        return home / self.name

    def binary(self, home: Path) -> Path:
        sub = "node_modules/.bin" if self.registry == "npm" else "venv/bin"
        return self.folder(home) / sub / self.executable

    def argv(self, home: Path) -> list[str]:
        argv = [str(self.binary(home)), *self.args]
        if self.init is None:
            return argv
        # `exec` keeps the server the session's own process (stopped on release like any other).
        return ["/bin/sh", "-c", f"{self.init} && exec " + " ".join(_quote(a) for a in argv)]


def _quote(arg: str) -> str:
    return "'" + arg.replace("'", "'\\''") + "'"


SERVERS: dict[str, RealServer] = {
    s.name: s
    for s in (
        RealServer(
            "filesystem",
            "npm",
            ("@modelcontextprotocol/server-filesystem@2026.8.31",),
            "mcp-server-filesystem",
            (WS,),
        ),
        RealServer(
            "memory",
            "npm",
            ("@modelcontextprotocol/server-memory@2026.8.31",),
            "mcp-server-memory",
            env={"MEMORY_FILE_PATH": f"{WS}/memory.jsonl"},
        ),
        RealServer(
            "git",
            "pypi",
            ("mcp-server-git==2026.10.19",),
            "mcp-server-git",
            ("--repository", WS),
            env=_GIT_ENV,
            init=_GIT_INIT,
        ),
        RealServer(
            "sqlite",
            "pypi",
            ("mcp-server-sqlite==2025.4.25", "mcp<2"),
            "mcp-server-sqlite",
            ("--db-path", DB),
        ),
        RealServer(
            "time",
            "pypi",
            ("mcp-server-time==2026.10.19",),
            "mcp-server-time",
            ("--local-timezone", "UTC"),
        ),
    )
}


def _suite(name: str, members: tuple[str, ...]) -> RealServer:
    """A suite's spec from its members': their placeholders (so what uses the workspace or DB is
    known), their environment and their inits (s_0 of the shared workspace is every member's)."""
    specs = [SERVERS[m] for m in members]
    inits = [s.init for s in specs if s.init]
    return RealServer(
        name,
        "suite",
        tuple(r for s in specs for r in s.requirements),
        "",
        tuple(a for s in specs for a in s.args),
        {k: v for s in specs for k, v in s.env.items()},
        " && ".join(inits) if inits else None,
        members,
    )


SUITES: dict[str, RealServer] = {s.name: s for s in (_suite("repo", ("filesystem", "git")),)}
# Everything hostable by name: the real servers and the suites of them (a view of both).
SPECS: ChainMap[str, RealServer] = ChainMap(SUITES, SERVERS)


def server(name: str) -> RealServer:
    if name not in SPECS:
        raise ToolSpaceUserError(f"unknown server {name!r} (known: {', '.join(SPECS)})")
    return SPECS[name]


def installed(name: str, home: Path) -> Path | None:
    spec = server(name)
    if spec.members:
        paths = [installed(m, home) for m in spec.members]
        return None if any(p is None for p in paths) else paths[-1]
    path = spec.binary(home)
    return path if path.exists() else None


def _run(argv: list[str], timeout: float) -> None:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise ToolSpaceRuntimeError(
            f"`{' '.join(argv)}` did not finish in {timeout:.0f} s"
        ) from None
    if done.returncode != 0:
        tail = " ".join((done.stderr or done.stdout).strip()[-400:].split())
        raise ToolSpaceRuntimeError(f"`{' '.join(argv)}` failed (exit {done.returncode}): {tail}")


def install(name: str, home: Path, *, timeout: float = 300) -> Path:
    """Install server `name` under `home` (already there: a no-op); returns its executable."""
    spec = server(name)
    existing = installed(name, home)
    if existing is not None:
        return existing
    if spec.members:
        return [install(m, home, timeout=timeout) for m in spec.members][-1]
    folder = spec.folder(home)
    folder.mkdir(parents=True, exist_ok=True)
    if spec.registry == "npm":
        npm = shutil.which("npm")
        if npm is None:
            raise ToolSpaceRuntimeError(f"installing {name} needs npm on PATH")
        flags = ["--no-audit", "--no-fund", "--silent", "--prefix", str(folder)]
        _run([npm, "install", *flags, *spec.requirements], timeout)
    else:
        venv = folder / "venv"
        uv = shutil.which("uv")
        if uv:
            _run([uv, "venv", "-q", "-p", sys.executable, "--allow-existing", str(venv)], timeout)
            _run(
                [uv, "pip", "install", "-q", "-p", str(venv / "bin/python"), *spec.requirements],
                timeout,
            )
        else:
            _run([sys.executable, "-m", "venv", str(venv)], timeout)
            _run([str(venv / "bin/pip"), "install", "-q", *spec.requirements], timeout)
    path = installed(name, home)
    if path is None:
        raise ToolSpaceRuntimeError(
            f"{name} installed, but {spec.executable} is missing in {folder}"
        )
    return path


def install_all(names: list[str], home: Path) -> tuple[list[str], dict[str, str]]:
    """Install what can be; returns (installed names, {name: why not}) so callers can skip."""
    ok: list[str] = []
    failed: dict[str, str] = {}
    for n in names:
        try:
            install(n, home)
            ok.append(n)
        except (ToolSpaceRuntimeError, OSError) as exc:
            failed[n] = str(exc)
    return ok, failed


async def register(client: MegaMCPClient, names: list[str], home: Path) -> dict[str, str]:
    """Register installed servers as MegaMCP command MCPs; returns {server name: mcp id}."""
    out: dict[str, str] = {}
    for n in names:
        spec = server(n)
        if installed(n, home) is None:
            raise ToolSpaceUserError(f"server {n!r} is not installed under {home}")
        if spec.members:
            members = {m: server(m).argv(home) for m in spec.members}
            rec = await client.register_suite(members, name=n, env=dict(spec.env))
        else:
            rec = await client.register_command(spec.argv(home), name=n, env=dict(spec.env))
        out[n] = rec.mcp_id
    return out
