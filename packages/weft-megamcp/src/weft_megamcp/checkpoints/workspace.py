"""Workspace tarballs of checkpoints: deterministic to write, checked before they touch disk."""

from __future__ import annotations

import gzip
import io
import shutil
import tarfile
import tempfile
import uuid
from pathlib import Path

from weft_megamcp.checkpoints._errors import WorkspaceArchiveError

__all__ = ["check_workspace_tarball", "install_workspace", "tar_workspace"]


def tar_workspace(root: Path) -> bytes:
    """A deterministic gzip tarball of `root` (sorted names, zeroed mtimes) so equal trees hash
    equal; symlinks are skipped so a checkpoint never captures anything outside the root. The
    gzip header's timestamp is zeroed too: `tarfile`'s "w:gz" stamps the current time there, so
    the same tree tarred a second later had another hash."""
    buf = io.BytesIO()
    with (
        gzip.GzipFile(fileobj=buf, mode="wb", compresslevel=6, mtime=0) as gz,
        tarfile.open(fileobj=gz, mode="w") as tar,
    ):
        for path in sorted(root.rglob("*")):
            if path.is_symlink():
                continue
            info = tar.gettarinfo(str(path), arcname=path.relative_to(root).as_posix())
            info.mtime = 0
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            if path.is_file():
                with path.open("rb") as fh:
                    tar.addfile(info, fh)
            elif path.is_dir():
                tar.addfile(info)
    return buf.getvalue()


def check_workspace_tarball(data: bytes, *, where: str = "workspace tarball") -> None:
    """Refuse a tarball `tar_workspace` could not have written: not a gzip tar, or a member
    that is not a plain file or folder (a link, a device) or whose name is absolute or climbs
    out with `..`. One line naming the member; a hostile blob never reaches the disk."""
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
            members = tar.getmembers()
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise WorkspaceArchiveError(f"{where}: not a gzip tarball ({exc})") from None
    for m in members:
        parts = m.name.replace("\\", "/").split("/")
        if m.name.startswith("/") or ".." in parts or (parts and parts[0].endswith(":")):
            raise WorkspaceArchiveError(f"{where}: member {m.name!r} escapes the workspace")
        if not (m.isfile() or m.isdir()):
            raise WorkspaceArchiveError(
                f"{where}: member {m.name!r} is not a plain file or folder (links are refused)"
            )


def _untar_workspace(data: bytes, dest: Path) -> None:
    check_workspace_tarball(data)
    dest.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        tar.extractall(dest, filter="data")  # "data" refuses absolute paths, .. and links out


def install_workspace(data: bytes, dest: Path) -> None:
    """Replace folder `dest` by the tarball's tree, atomically: extracted into a staging folder
    beside it (checked first, see `check_workspace_tarball`), then swapped in by renames, so a
    failure leaves `dest` as it was."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=dest.parent, prefix=".ws-"))
    try:
        _untar_workspace(data, staging)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    if dest.exists():
        old = dest.with_name(f".old-{uuid.uuid4().hex}")
        dest.rename(old)
        staging.rename(dest)
        shutil.rmtree(old, ignore_errors=True)
    else:
        staging.rename(dest)
