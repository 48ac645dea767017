"""The checkpoint journal: a local store's checkpoints of one session generation in one file.

A local store used to publish each checkpoint as new files: the page patch (or workspace
tarball) under a content-addressed name and a fresh `MANIFEST.json` renamed over the old one,
each through a temp file, an fsync and a folder fsync. At 1,000 live sessions that is a file
created and one freed per checkpoint, and file creation is where the host's kernel time went
(ext4 allocates inodes around the ones freed just before). The journal appends the same
content to one file per generation instead: one `pwrite` and one `fsync`, no name created
after the first.

Record format (little-endian)::

    b"WJR1"  blob bytes (u32)  manifest bytes (u32)  sha256(blobs + manifest) (32 bytes)
    blobs (page patch, workspace tarball; addressed from the manifest by offset)  manifest JSON

A record counts only when all of it is on disk and its digest matches, so a record torn by a
crash (any part of it missing or stale) is as if never written, and the record before it is
the generation's latest checkpoint. Only the generation's owner appends, and it first cuts the
file back to the end of the last whole record, so nothing ever follows a torn one.

Blobs are addressed as ``<journal path>#<offset>+<length>`` (`blob_key`), so a checkpoint's
manifest names its objects the way it names a standalone file, and a restore reads exactly
those bytes and checks their own sha256 as before.
"""

from __future__ import annotations

import hashlib
import os
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass

__all__ = [
    "JOURNAL_NAME",
    "JournalRecord",
    "JournalTail",
    "append_record",
    "blob_key",
    "encode_record",
    "parse_blob_key",
    "read_blob",
    "records",
    "scan",
]

JOURNAL_NAME = "JOURNAL"
_MAGIC = b"WJR1"
_HEAD = struct.Struct("<4sII32s")  # magic, blob bytes, manifest bytes, sha256 of the body


@dataclass(frozen=True)
class JournalTail:
    """Where a journal stands: the offset just past its last whole record (where the next one
    goes) and that record's manifest (None when it holds none)."""

    end: int
    manifest: bytes | None


@dataclass(frozen=True)
class JournalRecord:
    """One whole record: its byte range in the journal and its manifest."""

    start: int
    end: int
    manifest: bytes


def records(path: str) -> list[JournalRecord]:
    """Every whole record of a journal, oldest first (for inspection and accounting: a reader
    of the latest checkpoint needs only `scan`). Stops at the first damaged one: nothing after
    it was ever acknowledged."""
    out: list[JournalRecord] = []
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return out
    try:
        length, offset = os.fstat(fd).st_size, 0
        while offset + _HEAD.size <= length:
            magic, blobs, manifest, digest = _HEAD.unpack(os.pread(fd, _HEAD.size, offset))
            end = offset + _HEAD.size + blobs + manifest
            if magic != _MAGIC or end > length:
                break
            body = os.pread(fd, blobs + manifest, offset + _HEAD.size)
            if hashlib.sha256(body).digest() != digest:
                break
            out.append(JournalRecord(offset, end, body[blobs:]))
            offset = end
    finally:
        os.close(fd)
    return out


def blob_key(journal: str, offset: int, length: int) -> str:
    return f"{journal}#{offset}+{length}"


def parse_blob_key(key: str) -> tuple[str, int, int] | None:
    """(journal path, offset, length) of a blob key; None for any other object key."""
    path, sep, where = key.rpartition("#")
    if not sep or not path.endswith("/" + JOURNAL_NAME):
        return None
    offset, plus, length = where.partition("+")
    if not plus or not offset.isdigit() or not length.isdigit():
        return None
    return path, int(offset), int(length)


def encode_record(
    end: int, blobs: Sequence[bytes], manifest: Callable[[list[str]], bytes], journal: str
) -> bytes:
    """The record to append at offset `end`: `manifest` gets the keys the blobs will have
    (they precede it in the record, so their offsets are known before it is written)."""
    keys, offset = [], end + _HEAD.size
    for blob in blobs:
        keys.append(blob_key(journal, offset, len(blob)))
        offset += len(blob)
    body = b"".join([*blobs, manifest(keys)])
    size = sum(len(b) for b in blobs)
    head = _HEAD.pack(_MAGIC, size, len(body) - size, hashlib.sha256(body).digest())
    return head + body


def scan(path: str) -> JournalTail:
    """Read a journal's record boundaries and return its last whole record; a missing file is
    an empty journal."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return JournalTail(0, None)
    try:
        length = os.fstat(fd).st_size
        records: list[tuple[int, int, int, bytes]] = []  # start, blob bytes, manifest bytes, sha
        offset = 0
        while offset + _HEAD.size <= length:
            magic, blobs, manifest, digest = _HEAD.unpack(os.pread(fd, _HEAD.size, offset))
            end = offset + _HEAD.size + blobs + manifest
            if magic != _MAGIC or end > length:
                break
            records.append((offset, blobs, manifest, digest))
            offset = end
        # A crash can leave the last record's header on disk without all of its body: walk
        # back to the newest record whose body matches its digest.
        for start, blobs, manifest, digest in reversed(records):
            body = os.pread(fd, blobs + manifest, start + _HEAD.size)
            if hashlib.sha256(body).digest() == digest:
                return JournalTail(start + _HEAD.size + blobs + manifest, body[blobs:])
        return JournalTail(0, None)
    finally:
        os.close(fd)


def append_record(path: str, end: int, record: bytes) -> tuple[int, bool]:
    """Write `record` at `end` (cutting off anything after it: a torn record of this owner's)
    and fsync it. Returns the new end and whether the file was created by this call (its name
    then still needs its folder synced)."""
    try:
        fd = os.open(path, os.O_WRONLY)
        created = False
    except FileNotFoundError:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
        created = True
    try:
        if os.fstat(fd).st_size != end:
            os.ftruncate(fd, end)
        view, at = memoryview(record), end
        while view:
            written = os.pwrite(fd, view, at)
            view, at = view[written:], at + written
        os.fsync(fd)
    finally:
        os.close(fd)
    return end + len(record), created


def read_blob(path: str, offset: int, length: int) -> bytes:
    """The `length` bytes at `offset` of a journal; FileNotFoundError when the journal is
    missing or shorter (the object is gone either way)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        data = os.pread(fd, length, offset)
    finally:
        os.close(fd)
    if len(data) != length:
        raise FileNotFoundError(f"{path} has no {length} bytes at offset {offset}")
    return data
