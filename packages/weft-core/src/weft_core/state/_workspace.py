"""Capture a workspace directory as `{relpath: FileState}` and diff two captures."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from pydantic import Field

from weft_core._model import WeftModel
from weft_core.state._db import StateCaptureError, StateError

# Files up to this size that decode as UTF-8 keep their text, so checks can read them.
TEXT_LIMIT = 256 * 1024


class FileState(WeftModel):
    sha256: str
    size: int
    text: str | None = Field(default=None, description="Content, when small and valid UTF-8.")
    symlink: str | None = Field(
        default=None, description="Link target, for a symlink (never followed; no content read)."
    )


class WorkspaceState(WeftModel):
    """Regular files and symlinks under a root, keyed by POSIX path relative to it."""

    files: dict[str, FileState] = Field(default_factory=dict)
    source: str | None = None

    def __contains__(self, path: object) -> bool:
        return path in self.files

    def get(self, path: str) -> FileState | None:
        return self.files.get(normalize_relpath(path))

    def summary(self) -> dict[str, int]:
        return {"files": len(self.files), "bytes": sum(f.size for f in self.files.values())}


class FileChange(WeftModel):
    old: FileState
    new: FileState


class WorkspaceDiff(WeftModel):
    added: dict[str, FileState] = Field(default_factory=dict)
    modified: dict[str, FileChange] = Field(default_factory=dict)
    removed: dict[str, FileState] = Field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return not (self.added or self.modified or self.removed)

    def summary(self) -> dict[str, int]:
        return {
            "added": len(self.added),
            "modified": len(self.modified),
            "removed": len(self.removed),
        }


def normalize_relpath(path: str) -> str:
    """`/notes.txt`, `./notes.txt` and `notes.txt` all name the same workspace file."""
    parts = [p for p in path.replace("\\", "/").split("/") if p not in ("", ".")]
    return "/".join(parts)


def _file_state(path: Path, text_limit: int) -> FileState:
    if path.is_symlink():
        target = os.readlink(path)
        return FileState(
            sha256=hashlib.sha256(target.encode("utf-8", "surrogateescape")).hexdigest(),
            size=0,
            symlink=target,
        )
    digest = hashlib.sha256()
    size = 0
    head = bytearray()
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 20):
            digest.update(chunk)
            size += len(chunk)
            if len(head) <= text_limit:
                head.extend(chunk[: text_limit + 1 - len(head)])
    text: str | None = None
    if size <= text_limit:
        try:
            text = bytes(head).decode("utf-8")
        except UnicodeDecodeError:
            text = None
    return FileState(sha256=digest.hexdigest(), size=size, text=text)


def capture_workspace(
    root: str | os.PathLike[str], *, text_limit: int = TEXT_LIMIT
) -> WorkspaceState:
    """Hash every file under `root` (keeping the text of small UTF-8 files).

    A missing root is an empty workspace (sessions create theirs lazily). Symlinks are recorded,
    never followed, so a link planted in a workspace cannot make a capture read outside it.
    """
    base = Path(root)
    state = WorkspaceState(source=str(base))
    if not base.exists():
        return state
    if not base.is_dir():
        raise StateError(f"{base}: workspace root is not a directory")
    try:
        for dirpath, dirnames, filenames in os.walk(base, followlinks=False):
            current = Path(dirpath)
            dirnames.sort()
            linked_dirs = [d for d in dirnames if (current / d).is_symlink()]
            for name in sorted([*filenames, *linked_dirs]):
                full = current / name
                if not (full.is_symlink() or full.is_file()):
                    continue  # sockets, FIFOs: not content
                rel = full.relative_to(base).as_posix()
                state.files[rel] = _file_state(full, text_limit)
    except OSError as exc:
        raise StateCaptureError(f"{base}: cannot read workspace: {exc}") from None
    state.files = dict(sorted(state.files.items()))
    return state


def diff_workspace(before: WorkspaceState, after: WorkspaceState) -> WorkspaceDiff:
    diff = WorkspaceDiff()
    for path in sorted(set(before.files) | set(after.files)):
        old, new = before.files.get(path), after.files.get(path)
        if old is None and new is not None:
            diff.added[path] = new
        elif new is None and old is not None:
            diff.removed[path] = old
        elif (
            old is not None
            and new is not None
            and (old.sha256, old.symlink)
            != (
                new.sha256,
                new.symlink,
            )
        ):
            diff.modified[path] = FileChange(old=old, new=new)
    return diff
