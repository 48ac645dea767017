"""The sandbox every hosted server process runs in (command tier, dedicated modules, probes).

A hosted process is third-party code; being a separate process is not isolation (it shares
the host's uid, files, `/proc` and network). Under bubblewrap (`bwrap`) it gets its own user,
PID, IPC, UTS and (unless allowed) network namespaces and a filesystem that holds only:

- `/session/workspace` (read-write, the working directory) and `/session/state.sqlite` (the
  session DB, read-write) — bound as single mount points, so the process can write them but
  cannot replace either with a link to a host file the host would later read or copy;
- read-only: the system runtime (`/usr`, the `/bin`-style links, a few `/etc` files), the Python
  runtime the host runs on (prefixes and `sys.path` folders), the files a registered command
  names on its command line, the module's own source (at `/srv/module`) and `sandbox_ro_paths`;
- a private `/tmp`, a minimal `/dev` and a `/proc` that shows only the sandbox's processes.

The data dir (other sessions, the registry DB, verifier code, checkpoints) and any other host
folder are never bound; a runtime folder that would contain one is left out. The environment is
cleared and rebuilt from a short allow-list, so no host credential reaches the process.
`sandbox = "off"` runs processes unsandboxed (still with the minimal environment); with
`"bwrap"` and no working bubblewrap every start fails with a one-line error naming that setting.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from weft_megamcp.exceptions import MegaMCPUserError

SANDBOX_SESSION = Path("/session")
SANDBOX_WORKSPACE = SANDBOX_SESSION / "workspace"
SANDBOX_DB = SANDBOX_SESSION / "state.sqlite"
SANDBOX_MODULE = Path("/srv/module")

# Passed through from the host (values only; nothing secret lives in these).
_PASS_ENV = ("LANG", "LC_ALL", "TZ")
_ETC_FILES = (
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "localtime",
    "passwd",
    "group",
    "nsswitch.conf",
    "hosts",
    "resolv.conf",
    "host.conf",
    "ssl",
    "ca-certificates",
    "ca-certificates.conf",
    "alternatives",
    "mime.types",
)
_SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")

SandboxMode = Literal["bwrap", "off"]


class SandboxUnavailable(MegaMCPUserError):
    """The configured sandbox cannot run on this machine (fail closed)."""


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


@functools.lru_cache(maxsize=4)
def _bwrap_check(bwrap: str) -> str | None:
    """None when `bwrap` can create the namespaces we use here, else the reason it cannot."""
    argv = [bwrap, "--unshare-user", "--unshare-pid", "--ro-bind", "/", "/", "--proc", "/proc"]
    try:
        proc = subprocess.run([*argv, "true"], capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{bwrap} could not run: {exc}"
    if proc.returncode != 0:
        lines = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        return f"{bwrap} failed: {lines[0] if lines else f'exit {proc.returncode}'}"
    return None


@dataclass(frozen=True)
class ProcessSpec:
    """What to exec: the argv, its environment and working directory, as the host passes them."""

    argv: list[str]
    env: dict[str, str]
    cwd: Path


@dataclass(frozen=True)
class Sandbox:
    """How hosted processes are confined; `wrap` turns a command into its confined form."""

    mode: SandboxMode = "bwrap"
    hidden: tuple[Path, ...] = ()  # never visible, nor any folder that contains one
    ro_paths: tuple[Path, ...] = ()  # extra read-only folders (the `sandbox_ro_paths` setting)
    network: bool = False
    bwrap: str = "bwrap"
    runtime: tuple[Path, ...] = field(default_factory=lambda: python_runtime_paths())

    def require(self) -> str:
        """The bwrap executable to use, or SandboxUnavailable with the opt-out setting named."""
        exe = shutil.which(self.bwrap)
        hint = (
            'install bubblewrap (apt-get install bubblewrap), or set sandbox = "off" '
            "(WEFT_MEGAMCP_SANDBOX=off) to run hosted servers unsandboxed"
        )
        if exe is None:
            raise SandboxUnavailable(
                f"hosted MCP servers run under bubblewrap, but {self.bwrap!r} is not on PATH; {hint}"
            )
        reason = _bwrap_check(exe)
        if reason is not None:
            raise SandboxUnavailable(
                f"hosted MCP servers run under bubblewrap, but {reason}; {hint}"
            )
        return exe

    def _visible(self, path: Path) -> bool:
        """A host folder may be bound unless it is, holds or lies inside a hidden root."""
        p = path.resolve()
        return not any(_inside(p, h) or _inside(h, p) for h in self.hidden)

    def wrap(
        self,
        argv: list[str],
        *,
        env: dict[str, str],
        workspace: Path,
        db: Path | None,
        module_src: Path | None = None,
    ) -> ProcessSpec:
        """The command to start: `argv` confined to `workspace` (+ `db`), or as is when off.

        `env` is the process's whole environment apart from WEFT_WORKSPACE / WEFT_DB_PATH,
        which name the sandbox's paths; `module_src` is bound read-only at /srv/module.
        """
        base = {k: os.environ[k] for k in _PASS_ENV if k in os.environ}
        if self.mode == "off":
            full = {"PATH": os.environ.get("PATH", os.defpath), "HOME": str(workspace)}
            full |= base | env | {"WEFT_WORKSPACE": str(workspace)}
            if db is not None:
                full["WEFT_DB_PATH"] = str(db)
            return ProcessSpec(argv=argv, env=full, cwd=workspace)
        exe = self.require()
        args = [
            exe,
            "--unshare-user",
            "--unshare-pid",
            "--unshare-ipc",
            "--unshare-uts",
            "--unshare-cgroup-try",
            "--die-with-parent",
            "--new-session",
            "--cap-drop",
            "ALL",
            "--clearenv",
        ]
        if not self.network:
            args.append("--unshare-net")
        for d in _SYSTEM_DIRS:
            p = Path(d)
            if p.is_symlink():
                args += ["--symlink", os.readlink(p), d]
            elif p.is_dir():
                args += ["--ro-bind", d, d]
        for name in _ETC_FILES:
            if os.path.lexists(f"/etc/{name}"):
                args += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
        # Private /dev, /proc and /tmp first: a command's script under /tmp is bound over them.
        args += ["--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
        binds: list[Path] = []
        for p in (*self.runtime, *self.ro_paths, *_command_files(argv)):
            if p.exists() and self._visible(p) and not any(_inside(p, b) for b in binds):
                binds = [b for b in binds if not _inside(b, p)] + [p]
        for p in sorted(binds, key=lambda b: len(b.parts)):
            args += ["--ro-bind", str(p), str(p)]
        args += ["--dir", str(SANDBOX_SESSION), "--bind", str(workspace), str(SANDBOX_WORKSPACE)]
        if db is not None:
            args += ["--bind", str(db), str(SANDBOX_DB)]
        if module_src is not None:
            args += ["--ro-bind", str(module_src), str(SANDBOX_MODULE)]
        inner = base | env
        inner |= {
            "PATH": os.environ.get("PATH", os.defpath),
            "HOME": "/tmp",
            "TMPDIR": "/tmp",
            "WEFT_WORKSPACE": str(SANDBOX_WORKSPACE),
        }
        if db is not None:
            inner["WEFT_DB_PATH"] = str(SANDBOX_DB)
        for k, v in inner.items():
            args += ["--setenv", k, v]
        args += ["--chdir", str(SANDBOX_WORKSPACE), "--", *argv]
        # bwrap itself gets no host environment either: --clearenv only clears the child's.
        return ProcessSpec(argv=args, env={"PATH": os.defpath}, cwd=workspace)


def python_runtime_paths() -> tuple[Path, ...]:
    """Folders the host's own Python needs: its prefixes and import path (not the cwd)."""
    out: list[Path] = []
    cwd = Path.cwd().resolve()
    candidates: Iterable[str] = (
        sys.prefix,
        sys.base_prefix,
        sys.exec_prefix,
        sys.base_exec_prefix,
        *sys.path,
        *os.environ.get("PYTHONPATH", "").split(os.pathsep),
    )
    for raw in candidates:
        if not raw:
            continue
        p = Path(raw).resolve()
        if p == cwd or not p.exists():
            continue
        if p.is_file():  # a zip on sys.path
            p = p.parent
        if p not in out:
            out.append(p)
    # The venv's interpreter is a link into the base installation: keep its target visible.
    exe = Path(sys.executable)
    if exe.is_symlink():
        out.append(exe.resolve().parent.parent)
    return tuple(out)


def _command_files(argv: list[str]) -> list[Path]:
    """Absolute paths a registered command names (its executable, a script): bound read-only."""
    out: list[Path] = []
    first = shutil.which(argv[0]) if argv else None
    for i, a in enumerate(argv):
        cand = Path(first) if i == 0 and first else Path(a)
        if cand.is_absolute() and cand.exists():
            out.append(cand.resolve() if cand.is_file() else cand)
    return out


def sandbox_for(
    mode: SandboxMode,
    *,
    hidden: Iterable[Path],
    ro_paths: Iterable[Path] = (),
    network: bool = False,
) -> Sandbox:
    return Sandbox(
        mode=mode,
        hidden=tuple(Path(h).resolve() for h in hidden),
        ro_paths=tuple(Path(p).resolve() for p in ro_paths),
        network=network,
    )
