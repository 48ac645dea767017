"""Page patches: a checkpoint that stores only the SQLite pages changed since the previous one.

A SQLite database file is an array of fixed-size pages (the size is in the file header) and a
committed transaction rewrites whole pages, so two consistent copies of one database taken a
few writes apart differ in exactly the pages those writes touched: a row insert or update
touches a leaf page, sometimes its parent and the header page. A checkpoint can therefore
store the changed pages (a *patch*) instead of the whole file, and a restore rebuilds the file
as the last full copy with each later patch written over it in order.

The checkpointer keeps a private *base* file equal to the DB of its last checkpoint, and
`sync_pages` compares the DB now against it a block at a time (a memory compare: no digest of
every page, which costs more CPU than copying the file), writes the changed pages into the base
(so it equals the DB now) and returns them as the patch. Which checkpoint gets a patch and
which a full copy is the checkpointer's policy; where patches live is the store's.

Patch format (little-endian)::

    b"WEFTPAGES1\\n"  page size (u32)  pages in the database after the patch (u32)
    then for each changed page: its 0-based index (u32) and its page-size bytes

A patch also carries the page count, so a database that shrank (VACUUM, a dropped table with
auto-vacuum) is truncated to it.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path

from weft_megamcp.checkpoints._errors import CheckpointError

__all__ = ["PAGE_PATCH_MAGIC", "PagePatch", "apply_patch", "patch_header", "sync_pages"]

PAGE_PATCH_MAGIC = b"WEFTPAGES1\n"
_HEADER = struct.Struct("<II")  # page size, pages after the patch
_INDEX = struct.Struct("<I")
_SQLITE_MAGIC = b"SQLite format 3\x00"
_READ_BLOCK = 1 << 18  # compared a block at a time; only differing blocks are split into pages


@dataclass(frozen=True)
class PagePatch:
    """The pages one database copy changed against its base, encoded (`data`)."""

    data: bytes
    changed_pages: int
    db_bytes: int  # size of the database after the patch


def _page_size(header: bytes) -> int | None:
    if len(header) < 100 or not header.startswith(_SQLITE_MAGIC):
        return None
    size = int.from_bytes(header[16:18], "big")
    size = 65536 if size == 1 else size
    if size < 512 or size & (size - 1):
        return None
    return size


def sync_pages(src: str | Path, base: str | Path) -> PagePatch | None:
    """Make `base` (an earlier copy of the database) equal to `src` (a consistent database file:
    a copy, or the live file under a SQLite read lock) and return the patch that does the same
    to any file equal to the old `base`. None, with `base` untouched, when the two are not
    comparable page by page (either is not a SQLite file, or their page sizes differ)."""
    src, base = Path(src), Path(base)
    with src.open("rb") as fs, base.open("r+b") as fb:
        size = _page_size(fs.read(100))
        if size is None or size != _page_size(fb.read(100)):
            return None
        length = os.fstat(fs.fileno()).st_size
        if length % size:
            return None
        fs.seek(0)
        fb.seek(0)
        step = _READ_BLOCK - _READ_BLOCK % size
        changed: list[tuple[int, bytes]] = []
        offset = 0
        while block := fs.read(step):
            old = fb.read(len(block))
            if block != old:
                for start in range(0, len(block), size):
                    page = block[start : start + size]
                    if old[start : start + size] != page:
                        changed.append(((offset + start) // size, page))
            offset += len(block)
        for index, page in changed:
            fb.seek(index * size)
            fb.write(page)
        fb.truncate(length)
    parts = [PAGE_PATCH_MAGIC, _HEADER.pack(size, length // size)]
    for index, page in changed:
        parts.append(_INDEX.pack(index))
        parts.append(page)
    return PagePatch(b"".join(parts), len(changed), length)


def patch_header(patch: bytes, *, where: str = "page patch") -> tuple[int, int, int]:
    """(page size, pages in the database after the patch, pages the patch rewrites);
    CheckpointError if malformed."""
    offset = len(PAGE_PATCH_MAGIC)
    if not patch.startswith(PAGE_PATCH_MAGIC) or len(patch) < offset + _HEADER.size:
        raise CheckpointError(f"{where}: not a page patch")
    size, count = _HEADER.unpack_from(patch, offset)
    body = len(patch) - offset - _HEADER.size
    if size < 512 or size & (size - 1) or body % (_INDEX.size + size):
        raise CheckpointError(f"{where}: page size {size} does not match its body")
    return size, count, body // (_INDEX.size + size)


def apply_patch(path: str | Path, patch: bytes, *, where: str = "page patch") -> None:
    """Write `patch`'s pages over the database file at `path` and cut it to the patch's page
    count. Raises CheckpointError (naming `where`) on a malformed patch, before writing."""
    size, count, _ = patch_header(patch, where=where)
    offset = len(PAGE_PATCH_MAGIC) + _HEADER.size
    record = _INDEX.size + size
    writes: list[tuple[int, memoryview]] = []
    view = memoryview(patch)
    for start in range(offset, len(patch), record):
        (index,) = _INDEX.unpack_from(patch, start)
        if index >= count:
            raise CheckpointError(f"{where}: page {index} beyond the database's {count} pages")
        writes.append((index, view[start + _INDEX.size : start + record]))
    with Path(path).open("r+b") as fh:
        fh.truncate(count * size)
        for index, page in writes:
            fh.seek(index * size)
            fh.write(page)
