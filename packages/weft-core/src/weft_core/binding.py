"""The session binding: which private DB and workspace the current tool call works on.

A host (MegaMCP) sets the binding around every call it serves; a server module (e.g. an EnvBundle's
`server.py`) reads it with `current_binding()` instead of opening fixed paths, so one imported
module serves many sessions. With no host, the binding comes from WEFT_DB_PATH / WEFT_WORKSPACE or
defaults to `./state.sqlite` and `./workspace`. Server modules that cache per-session resources
(engines) register a release hook so the host can drop them before a restore or an offload.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path

from weft_core.exceptions import UserError


@dataclass(frozen=True)
class SessionBinding:
    session_id: str
    db_path: Path
    workspace: Path


_binding: ContextVar[SessionBinding | None] = ContextVar("weft_session_binding", default=None)
_release_hooks: list[Callable[[str], None]] = []


def default_binding() -> SessionBinding:
    return SessionBinding(
        session_id="local",
        db_path=Path(os.environ.get("WEFT_DB_PATH", "state.sqlite")).resolve(),
        workspace=Path(os.environ.get("WEFT_WORKSPACE", "workspace")).resolve(),
    )


def current_binding() -> SessionBinding:
    """The binding of the call being served, or the local default."""
    return _binding.get() or default_binding()


@contextmanager
def bind_session(binding: SessionBinding) -> Iterator[SessionBinding]:
    token = _binding.set(binding)
    try:
        yield binding
    finally:
        _binding.reset(token)


def register_release_hook(hook: Callable[[str], None]) -> None:
    """Register `hook(session_id)` to drop resources a module caches for a session."""
    if hook not in _release_hooks:
        _release_hooks.append(hook)


def release_session(session_id: str) -> None:
    """Run every release hook for `session_id` (e.g. dispose its SQLAlchemy engine)."""
    for hook in list(_release_hooks):
        hook(session_id)


class WorkspaceEscapeError(UserError):
    """A path resolves outside its session's workspace."""


def resolve_in_workspace(root: Path, relative: str) -> Path:
    """Resolve `relative` inside `root`. A leading `/` means the workspace root (agents write
    `/notes.txt`); `..` escapes and symlinks that point outside are refused."""
    if not isinstance(relative, str) or "\x00" in relative:
        raise WorkspaceEscapeError("path must be a string without NUL bytes")
    root = root.resolve()
    candidate = (root / relative.lstrip("/")).resolve()
    if candidate != root and root not in candidate.parents:
        raise WorkspaceEscapeError(f"path {relative!r} is outside the workspace")
    return candidate
