"""CheckpointStore: immutable, generation-fenced session checkpoints on any fsspec filesystem.

Layout under the store root (a local folder by default, `memory://`, `s3://bucket/prefix`, ...)::

    <session>/leases/g<generation>.json          one per ownership change, created exclusively
    <session>/g<generation>/<seq>-<sha256>.sqlite   immutable DB snapshot
    <session>/g<generation>/<seq>-<sha256>.pages    immutable page patch over an earlier snapshot
    <session>/g<generation>/<seq>-<sha256>.tar.gz   immutable workspace tarball (optional)
    <session>/g<generation>/MANIFEST.json         pointer to the latest checkpoint of that generation
    <session>/STATUS.json                         shutdown journal (open / closing / closed)

A local store keeps a generation's manifests, page patches and workspace tarballs in one
append-only file instead, `<session>/g<generation>/JOURNAL` (`journal.py`): the latest
checkpoint is its last whole record, and a blob is addressed by its offset in it. Whole DB
snapshots stay files (they are renamed into place, not copied). A generation with no journal
is read from its `MANIFEST.json`, as object stores are.

Contract:
- Data objects are written under content-addressed keys and never overwritten; the manifest is
  published only after the data objects exist (write, then publish the pointer), so a reader
  never sees a pointer to a missing or partial object.
- Ownership is a generation number. `acquire` claims generation g+1 by creating its lease file
  exclusively and immediately seals it by publishing a g+1 manifest that points at the previous
  latest checkpoint. `latest` reads only the highest generation's manifest, so anything a stale
  owner writes afterwards under its old generation can never become visible, and its `put`
  raises FencingError as soon as it notices.
- Readers verify the sha256 of everything they fetch.
- A checkpoint's DB is either one whole snapshot or an earlier checkpoint's whole snapshot with
  the page patches of the checkpoints since then written over it in order (`pages.py`); the
  manifest lists every object the DB is rebuilt from, so a restore needs nothing else. Objects
  are never deleted while their session lives, so an earlier generation's snapshot stays valid
  as a base.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import tempfile
import threading
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import fsspec
from fsspec.implementations.local import LocalFileSystem
from pydantic import BaseModel, Field

from weft_megamcp.checkpoints._errors import (
    CheckpointError,
    CheckpointNotFoundError,
    FencingError,
    LeaseHeldError,
    WorkspaceArchiveError,
)
from weft_megamcp.checkpoints.journal import (
    JOURNAL_NAME,
    append_record,
    encode_record,
    parse_blob_key,
    read_blob,
    scan,
)
from weft_megamcp.checkpoints.pages import apply_patch, patch_header
from weft_megamcp.checkpoints.workspace import (
    check_workspace_tarball,
    install_workspace,
    tar_workspace,
)

__all__ = [
    "CheckpointRef",
    "CheckpointStore",
    "Lease",
    "PagePatchRef",
    "SessionStatus",
    "check_workspace_tarball",
    "install_workspace",
    "tar_workspace",
]

_SESSION_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
_GEN_RE = re.compile(r"^g(\d{8})$")
_LEASE_RE = re.compile(r"^g(\d{8})\.json$")
# Exclusive create is emulated for filesystems without a native one; this lock makes it exact
# within one process (memory://), the read-back check below covers the rest.
_create_lock = threading.Lock()
_CACHE_LIMIT = 8192  # per-session entries a store remembers (leases it checked, journal tails)


class Lease(BaseModel):
    session_id: str
    owner: str = Field(description="Worker identity that holds the session.")
    generation: int = Field(ge=1, description="Fencing token; every acquire/steal increments it.")
    acquired_at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    token: str = Field(
        default_factory=lambda: uuid.uuid4().hex,
        description="Random nonce that tells two claims of the same generation apart.",
    )


class PagePatchRef(BaseModel):
    key: str
    sha256: str
    size: int = Field(ge=0, description="Bytes of the patch object.")
    pages: int = Field(ge=0, description="Pages the patch rewrites.")


class CheckpointRef(BaseModel):
    session_id: str
    generation: int
    seq: int = Field(description="Monotonic checkpoint number of the session across generations.")
    state_version: int = Field(description="Session state version the snapshot covers.")
    db_key: str | None = Field(
        default=None, description="Whole DB snapshot (the base when `db_patches` is not empty)."
    )
    db_sha256: str | None = None
    db_bytes: int = Field(default=0, description="Size of the DB this checkpoint restores.")
    db_patches: list[PagePatchRef] = Field(
        default_factory=list,
        description="Page patches written over `db_key`'s snapshot, in order, to rebuild the DB.",
    )
    workspace_key: str | None = None
    workspace_sha256: str | None = None
    created_at: datetime = Field(default_factory=lambda: datetime.now(UTC))


class SessionStatus(BaseModel):
    session_id: str
    state: Literal["open", "closing", "closed"] = "open"
    generation: int = 0
    pending_steps: list[str] = Field(default_factory=list)
    done_steps: list[str] = Field(default_factory=list)
    updated_at: datetime = Field(default_factory=lambda: datetime.now(UTC))


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(path: str | Path) -> None:
    """Make the folder's entries (a rename into it, a new child folder) survive a machine crash:
    fsync of a file does not cover the name that points at it."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:  # a platform without directory fds: nothing more to do
        return
    try:
        os.fsync(fd)
    except OSError:  # some file systems refuse fsync on directories
        pass
    finally:
        os.close(fd)


class CheckpointStore:
    """Session checkpoints under one fsspec URL. Thread-safe for distinct sessions; one writer per
    session at a time is what leases enforce."""

    def __init__(self, url: str | Path, **storage_options: Any) -> None:
        self.url = str(url)
        self.fs, root = fsspec.core.url_to_fs(self.url, **storage_options)
        self.root = root.rstrip("/")
        self._local = isinstance(self.fs, LocalFileSystem)
        if self._local:
            Path(self.root).mkdir(parents=True, exist_ok=True)
        # Local store only. A lease file is never rewritten, so one whose bytes equal the
        # lease confirmed before, with no next generation's beside it, is still current.
        self._leases_raw: dict[str, bytes] = {}
        # Journal path -> (end of its last record, that record's checkpoint), kept by the
        # generation's owner: only it appends there.
        self._tails: dict[str, tuple[int, CheckpointRef]] = {}

    @property
    def local(self) -> bool:
        """True for a local folder: every operation is a few syscalls, cheap enough to run on
        an event loop's thread."""
        return self._local

    def _remember(self, cache: dict[str, Any], key: str, value: Any) -> None:
        # Insertion order is recency: an entry moves to the end when updated and the oldest
        # makes room, so a host with more live sessions than the limit keeps its busy ones'
        # (clearing all at once sent every session's next put to a cold journal scan).
        cache.pop(key, None)
        while len(cache) >= _CACHE_LIMIT:
            try:
                cache.pop(next(iter(cache)), None)
            except (RuntimeError, StopIteration):  # another thread's put changed it meanwhile
                break
        cache[key] = value

    def _forget(self, session_id: str) -> None:
        prefix = self._session_dir(session_id) + "/"
        for cache in (self._leases_raw, self._tails):
            # list() copies the keys in one step: other threads' puts insert meanwhile, and a
            # comprehension over the live dict would fail with "changed size during iteration".
            for key in [k for k in list(cache) if k.startswith(prefix)]:
                cache.pop(key, None)

    # --- paths -------------------------------------------------------------------------------

    def _session_dir(self, session_id: str) -> str:
        if not isinstance(session_id, str) or not _SESSION_RE.match(session_id):
            raise CheckpointError(f"invalid session id {session_id!r} for a checkpoint key")
        return f"{self.root}/{session_id}"

    def _gen_dir(self, session_id: str, generation: int) -> str:
        return f"{self._session_dir(session_id)}/g{generation:08d}"

    # --- low-level I/O -----------------------------------------------------------------------
    # A local store goes straight to the OS: fsspec's LocalFileSystem normalises and stats every
    # path it is given, and under load (a checkpoint per write at 1,000 sessions) that was a
    # third of a checkpoint's Python time. Same files, same names, same atomicity.

    def _makedirs(self, path: str) -> None:
        if self._local:
            if os.path.isdir(path):
                return
            # Each new folder's name is made durable in its parent, top down.
            missing = []
            p = Path(path)
            while not p.exists() and p != p.parent:
                missing.append(p)
                p = p.parent
            os.makedirs(path, exist_ok=True)
            for made in reversed(missing):
                _fsync_dir(made.parent)
        else:
            self.fs.makedirs(path, exist_ok=True)

    def _exists(self, path: str) -> bool:
        return os.path.exists(path) if self._local else bool(self.fs.exists(path))

    def _cat(self, path: str) -> bytes:
        if self._local:
            if (blob := parse_blob_key(path)) is not None:
                return read_blob(*blob)
            with open(path, "rb") as fh:
                return fh.read()
        return bytes(self.fs.cat_file(path))

    def _write_atomic(self, path: str, data: bytes) -> None:
        parent = path.rsplit("/", 1)[0]
        self._makedirs(parent)
        if self._local:
            fd, tmp = tempfile.mkstemp(dir=parent, prefix=".tmp-")
            try:
                with os.fdopen(fd, "wb") as fh:
                    fh.write(data)
                    fh.flush()
                    os.fsync(fh.fileno())
                os.replace(tmp, path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        else:
            # Object stores publish a PUT atomically; write directly.
            self.fs.pipe_file(path, data)

    def _create_exclusive(self, path: str, data: bytes) -> bool:
        """Create `path` only if absent; False if it already exists."""
        parent = path.rsplit("/", 1)[0]
        self._makedirs(parent)
        if self._local:
            # Write a temp file, then hard-link it into place: link() is atomic and fails if the
            # name exists, so readers never see a half-written lease.
            fd, tmp = tempfile.mkstemp(dir=parent, prefix=".tmp-")
            try:
                with os.fdopen(fd, "wb") as fh:
                    fh.write(data)
                    fh.flush()
                    os.fsync(fh.fileno())
                os.link(tmp, path)
            except FileExistsError:
                return False
            finally:
                Path(tmp).unlink(missing_ok=True)
            return True
        with _create_lock:
            try:
                self.fs.pipe_file(path, data, mode="create")
            except FileExistsError:
                return False
        # Stores whose "create" is only check-then-write: the read-back says who won. s3fs
        # answers a read from a parent listing it cached before this object existed (another
        # thread listed the leases meanwhile): "not found" for what was just written.
        # Another thread can list the parent again between the invalidation and the read, so a
        # "not found" for the object just written is asked again with a fresh listing.
        for attempt in range(5):
            self.fs.invalidate_cache(path)
            try:
                return bool(self.fs.cat_file(path) == data)
            except FileNotFoundError:
                if attempt == 4:
                    raise
        raise AssertionError("unreachable")

    def _read_json(self, path: str) -> dict[str, Any] | None:
        try:
            raw = self._cat(path)
        except FileNotFoundError:
            return None
        try:
            value = json.loads(raw)
        except ValueError as exc:
            raise CheckpointError(f"corrupt checkpoint metadata at {path}: {exc}") from exc
        if not isinstance(value, dict):
            raise CheckpointError(f"corrupt checkpoint metadata at {path}: not an object")
        return value

    def _list_names(self, path: str) -> list[str]:
        if self._local:
            try:
                return os.listdir(path)
            except (FileNotFoundError, NotADirectoryError):
                return []
        # Object-store filesystems (s3fs) cache listings; a stale one would hide a newer lease.
        self.fs.invalidate_cache(path)
        try:
            entries = self.fs.ls(path, detail=False)
        except FileNotFoundError:
            return []
        return [str(e).rstrip("/").rsplit("/", 1)[-1] for e in entries]

    # --- leases ------------------------------------------------------------------------------

    def current_generation(self, session_id: str) -> int:
        gens = [
            int(m.group(1))
            for name in self._list_names(f"{self._session_dir(session_id)}/leases")
            if (m := _LEASE_RE.match(name))
        ]
        return max(gens, default=0)

    def current_lease(self, session_id: str) -> Lease | None:
        gen = self.current_generation(session_id)
        if gen == 0:
            return None
        data = self._read_json(f"{self._session_dir(session_id)}/leases/g{gen:08d}.json")
        return Lease.model_validate(data) if data else None

    def acquire(self, session_id: str, owner: str, *, steal: bool = False) -> Lease:
        """Take ownership of a session under a new generation.

        Raises LeaseHeldError when another owner holds it and `steal` is False. Re-acquiring by
        the same owner also bumps the generation (a restarted worker must not reuse its old one).
        """
        for _ in range(16):
            current = self.current_lease(session_id)
            if current is not None and current.owner != owner and not steal:
                raise LeaseHeldError(
                    f"session {session_id!r} is owned by {current.owner!r} "
                    f"(generation {current.generation}); pass steal=True to take it over"
                )
            gen = (current.generation if current else 0) + 1
            lease = Lease(session_id=session_id, owner=owner, generation=gen)
            path = f"{self._session_dir(session_id)}/leases/g{gen:08d}.json"
            raw = lease.model_dump_json().encode()
            if self._create_exclusive(path, raw):
                if self._local:
                    self._remember(self._leases_raw, path, raw)
                self._seal(lease, current)
                return lease
        raise CheckpointError(f"could not acquire session {session_id!r}: too much contention")

    def _seal(self, lease: Lease, previous: Lease | None) -> None:
        """Publish this generation's manifest pointing at the previous latest checkpoint, so a
        stale owner's later writes under an older generation are never what `latest` returns."""
        prior = self._latest_upto(lease.session_id, lease.generation - 1)
        if prior is None:
            # An empty pointer still fences: `latest` must not fall back to an older generation.
            prior = CheckpointRef(
                session_id=lease.session_id, generation=lease.generation, seq=0, state_version=0
            )
        gdir = self._gen_dir(lease.session_id, lease.generation)
        if not self._local:
            self._write_atomic(f"{gdir}/MANIFEST.json", prior.model_dump_json().encode())
            return
        self._makedirs(gdir)
        journal = f"{gdir}/{JOURNAL_NAME}"
        record = encode_record(0, [], lambda _keys: prior.model_dump_json().encode(), journal)
        end, _created = append_record(journal, 0, record)
        _fsync_dir(gdir)
        self._remember(self._tails, journal, (end, prior))

    def check_fence(self, lease: Lease) -> None:
        """Raise FencingError unless `lease` is still the current one."""
        if self._local and self._still_current(lease):
            return
        current = self.current_lease(lease.session_id)
        if (
            current is None
            or current.generation != lease.generation
            or current.token != lease.token
        ):
            now = current.generation if current else 0
            raise FencingError(
                f"session {lease.session_id!r}: lease generation {lease.generation} held by "
                f"{lease.owner!r} is stale (current generation {now}); this worker no longer "
                "owns the session"
            )
        if self._local:
            own = f"{self._session_dir(lease.session_id)}/leases/g{lease.generation:08d}.json"
            with contextlib.suppress(FileNotFoundError):
                self._remember(self._leases_raw, own, self._cat(own))

    def _still_current(self, lease: Lease) -> bool:
        """The local fast path of `check_fence`: generations are claimed one after another
        (each acquire creates the highest plus one, exclusively), so a lease is stale exactly
        when the next generation's file exists or its own file is no longer the one confirmed
        before (the session was deleted and claimed again). False means "ask the slow way"."""
        leases = f"{self._session_dir(lease.session_id)}/leases"
        own = f"{leases}/g{lease.generation:08d}.json"
        raw = self._leases_raw.get(own)
        if raw is None or os.path.exists(f"{leases}/g{lease.generation + 1:08d}.json"):
            return False
        try:
            return self._cat(own) == raw
        except FileNotFoundError:
            return False

    # --- checkpoints -------------------------------------------------------------------------

    def _latest_upto(self, session_id: str, max_generation: int | None) -> CheckpointRef | None:
        gens = sorted(
            (
                int(m.group(1))
                for name in self._list_names(self._session_dir(session_id))
                if (m := _GEN_RE.match(name))
            ),
            reverse=True,
        )
        for gen in gens:
            if max_generation is not None and gen > max_generation:
                continue
            ref = self._generation_latest(session_id, gen)
            if ref is not None:
                return ref
        return None

    def _generation_latest(self, session_id: str, generation: int) -> CheckpointRef | None:
        gdir = self._gen_dir(session_id, generation)
        if self._local:
            tail = scan(f"{gdir}/{JOURNAL_NAME}")
            if tail.manifest is not None:
                return self._parse_ref(tail.manifest, f"{gdir}/{JOURNAL_NAME}")
        data = self._read_json(f"{gdir}/MANIFEST.json")
        return CheckpointRef.model_validate(data) if data is not None else None

    @staticmethod
    def _parse_ref(raw: bytes, where: str) -> CheckpointRef:
        try:
            return CheckpointRef.model_validate_json(raw)
        except ValueError as exc:  # its digest matched, so it was written this way
            raise CheckpointError(f"corrupt checkpoint metadata at {where}: {exc}") from exc

    def latest(self, session_id: str) -> CheckpointRef | None:
        """The latest persisted checkpoint of the session (None if it never checkpointed)."""
        ref = self._latest_upto(session_id, self.current_generation(session_id) or None)
        return ref if ref is not None and ref.seq > 0 else None

    def put(
        self,
        lease: Lease,
        db_file: str | Path | None,
        *,
        workspace: str | Path | None = None,
        state_version: int = 0,
        consume: bool = False,
        unchanged_workspace_of: CheckpointRef | None = None,
        workspace_blob: bytes | None = None,
        db_patch: bytes | None = None,
        patch_of: CheckpointRef | None = None,
    ) -> CheckpointRef:
        """Upload a consistent snapshot (a closed SQLite file, e.g. from the backup API) and an
        optional workspace folder, then publish them as the session's latest checkpoint.

        `consume=True` lets a local store move `db_file` into place instead of copying it (the
        caller's temp snapshot, from `scratch_path`). `unchanged_workspace_of`: the caller knows
        the workspace equals that earlier checkpoint's, so its tarball is reused, not rebuilt.
        `workspace_blob`: the workspace's tarball (`tar_workspace`) taken by the caller at the
        same instant as `db_file`, used instead of tarring `workspace` now.
        `db_patch` (with `patch_of`, and no `db_file`): the DB is `patch_of`'s with this page
        patch (`pages.sync_pages`) written over it; only the patch is uploaded.
        Raises FencingError when `lease` is stale, before and after the upload.
        """
        if db_patch is not None and (db_file is not None or patch_of is None):
            raise CheckpointError("a page patch needs patch_of and no db_file")
        if patch_of is not None and patch_of.db_key is None:
            raise CheckpointError(f"checkpoint {patch_of.seq} has no DB to patch")
        self.check_fence(lease)
        sid = lease.session_id
        gdir = self._gen_dir(sid, lease.generation)
        journal = f"{gdir}/{JOURNAL_NAME}"
        end, prev = self._tail(lease, journal) if self._local else (0, self.latest(sid))
        seq = (prev.seq + 1) if prev else 1
        ref = CheckpointRef(
            session_id=sid, generation=lease.generation, seq=seq, state_version=state_version
        )
        # Local: the blobs go into the journal record with the manifest, their keys assigned
        # once their offsets are known.
        blobs: list[tuple[bytes, Callable[[str], None]]] = []
        placed = False  # a DB file was renamed into the generation's folder
        if db_file is not None:
            db_path = Path(db_file)
            digest = _sha256_file(db_path)
            ref.db_key = f"{gdir}/{seq:010d}-{digest}.sqlite"
            ref.db_sha256 = digest
            ref.db_bytes = db_path.stat().st_size
            if not self._exists(ref.db_key):
                self._makedirs(gdir)
                placed = self._local
                # A local object is on disk before the manifest naming it is published: a
                # machine crash must not leave a manifest pointing at a file the OS never wrote.
                if consume and self._local:
                    _fsync_file(db_path)
                    os.replace(db_path, ref.db_key)  # same filesystem: see scratch_path
                elif self._local:
                    tmp = f"{gdir}/.tmp-{uuid.uuid4().hex}"
                    try:
                        self.fs.put_file(str(db_path), tmp)
                        _fsync_file(Path(tmp))
                        self.fs.mv(tmp, ref.db_key)
                    finally:
                        Path(tmp).unlink(missing_ok=True)
                else:
                    # An object store publishes a PUT (multipart included) only when it
                    # completes, so a killed upload leaves no object behind: no temp key
                    # (which a kill between upload and rename would strand) is needed.
                    self.fs.put_file(str(db_path), ref.db_key)
        elif db_patch is not None and patch_of is not None:
            size, count, pages = patch_header(db_patch)
            digest = hashlib.sha256(db_patch).hexdigest()
            patch = PagePatchRef(key="", sha256=digest, size=len(db_patch), pages=pages)
            self._stage(
                blobs,
                db_patch,
                lambda key: setattr(patch, "key", key),
                f"{gdir}/{seq:010d}-{digest}.pages",
            )
            ref.db_key, ref.db_sha256 = patch_of.db_key, patch_of.db_sha256
            ref.db_patches = [*patch_of.db_patches, patch]
            ref.db_bytes = size * count
        reuse = unchanged_workspace_of
        if (
            workspace_blob is None
            and workspace is not None
            and reuse is not None
            and reuse.workspace_key is not None
        ):
            ref.workspace_key, ref.workspace_sha256 = reuse.workspace_key, reuse.workspace_sha256
        elif workspace_blob is not None or workspace is not None:
            blob = workspace_blob
            if blob is None:
                assert workspace is not None
                blob = tar_workspace(Path(workspace))
            ref.workspace_sha256 = hashlib.sha256(blob).hexdigest()
            self._stage(
                blobs,
                blob,
                lambda key: setattr(ref, "workspace_key", key),
                f"{gdir}/{seq:010d}-{ref.workspace_sha256}.tar.gz",
            )
        if self._local:
            return self._publish_local(lease, journal, end, ref, blobs, placed=placed)
        # The pointer goes last and only if we still own the session.
        self.check_fence(lease)
        self._write_atomic(f"{gdir}/MANIFEST.json", ref.model_dump_json().encode())
        return ref

    def _stage(
        self,
        blobs: list[tuple[bytes, Callable[[str], None]]],
        blob: bytes,
        assign: Callable[[str], None],
        key: str,
    ) -> None:
        """Place one of a checkpoint's blobs. Local: into the journal record (`assign` gets
        its key once the record's offsets are known). Elsewhere: a content-addressed object
        under `key`, written once."""
        if self._local:
            blobs.append((blob, assign))
            return
        assign(key)
        if not self._exists(key):
            self._write_atomic(key, blob)

    def _tail(self, lease: Lease, journal: str) -> tuple[int, CheckpointRef | None]:
        """Where the next record of the lease's journal goes, and the session's latest
        checkpoint (what that record follows)."""
        cached = self._tails.get(journal)
        if cached is not None:
            return cached
        tail = scan(journal)
        if tail.manifest is not None:
            return tail.end, self._parse_ref(tail.manifest, journal)
        return tail.end, self.latest(lease.session_id)  # sealed before journals existed

    def _publish_local(
        self,
        lease: Lease,
        journal: str,
        end: int,
        ref: CheckpointRef,
        blobs: list[tuple[bytes, Callable[[str], None]]],
        *,
        placed: bool,
    ) -> CheckpointRef:
        """Append the checkpoint's record to its generation's journal. A DB file renamed into
        the folder has its name made durable before the record naming it; the record is
        fsynced before put() returns (the checkpoint then counts as published)."""
        gdir = journal.rsplit("/", 1)[0]

        def manifest(keys: list[str]) -> bytes:
            for (_blob, assign), key in zip(blobs, keys, strict=True):
                assign(key)
            return ref.model_dump_json().encode()

        record = encode_record(end, [blob for blob, _ in blobs], manifest, journal)
        if placed:
            _fsync_dir(gdir)
        try:
            new_end, created = append_record(journal, end, record)
            if created:
                _fsync_dir(gdir)
        except BaseException:
            self._tails.pop(journal, None)  # the file's end is unknown now: scan it next time
            raise
        self._remember(self._tails, journal, (new_end, ref))
        # Checked again after the append: an owner that took the session before the record
        # was whole sealed its generation without it, and this write must not count as
        # published. One that takes it later finds the record.
        self.check_fence(lease)
        return ref

    def scratch_path(self, session_id: str) -> Path:
        """A fresh temp file name for a snapshot about to be `put(consume=True)`: inside the
        store for a local store (so the put is a rename), in the system temp dir otherwise."""
        name = f".snap-{uuid.uuid4().hex}.sqlite"
        if self._local:
            folder = Path(self._session_dir(session_id)) / "scratch"
            folder.mkdir(parents=True, exist_ok=True)
            return folder / name
        return Path(tempfile.gettempdir()) / name

    def fetch(
        self,
        ref: CheckpointRef,
        db_dest: str | Path | None,
        workspace_dest: str | Path | None = None,
    ) -> None:
        """Materialize a checkpoint: the DB to `db_dest` (temp + rename), the workspace tarball
        extracted into `workspace_dest` (replacing its contents). Verifies sha256."""
        if db_dest is not None and ref.db_key is not None:
            dest = Path(db_dest)
            dest.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=".fetch-")
            os.close(fd)
            try:
                self.fs.get_file(ref.db_key, tmp)
                if _sha256_file(Path(tmp)) != ref.db_sha256:
                    raise CheckpointError(f"checkpoint {ref.db_key} fails its sha256")
                for patch in ref.db_patches:
                    blob = self._cat_verified(patch.key, patch.sha256)
                    apply_patch(tmp, blob, where=f"checkpoint {patch.key}")
                if ref.db_patches and os.path.getsize(tmp) != ref.db_bytes:
                    raise CheckpointError(
                        f"checkpoint {ref.seq} of {ref.session_id}: rebuilt DB has "
                        f"{os.path.getsize(tmp)} bytes, its manifest says {ref.db_bytes}"
                    )
                os.replace(tmp, dest)
            except FileNotFoundError as exc:
                raise CheckpointError(f"checkpoint object {ref.db_key} is missing") from exc
            finally:
                Path(tmp).unlink(missing_ok=True)
        if workspace_dest is not None and ref.workspace_key is not None:
            blob = self._cat_verified(ref.workspace_key, ref.workspace_sha256)
            try:
                install_workspace(blob, Path(workspace_dest))
            except WorkspaceArchiveError as exc:  # hash-checked, so written that way: corrupt
                raise CheckpointError(f"checkpoint {ref.workspace_key}: {exc}") from None

    def _cat_verified(self, key: str, sha256: str | None) -> bytes:
        try:
            blob = self._cat(key)
        except FileNotFoundError as exc:
            raise CheckpointError(f"checkpoint object {key} is missing") from exc
        if hashlib.sha256(blob).hexdigest() != sha256:
            raise CheckpointError(f"checkpoint {key} fails its sha256")
        return blob

    def restore_latest(
        self, session_id: str, db_dest: str | Path, workspace_dest: str | Path | None = None
    ) -> CheckpointRef:
        """Resume: fetch the latest persisted checkpoint. Raises CheckpointNotFoundError."""
        ref = self.latest(session_id)
        if ref is None:
            raise CheckpointNotFoundError(f"session {session_id!r} has no checkpoint to resume")
        self.fetch(ref, db_dest, workspace_dest)
        return ref

    # --- shutdown journal --------------------------------------------------------------------

    def status(self, session_id: str) -> SessionStatus:
        data = self._read_json(f"{self._session_dir(session_id)}/STATUS.json")
        return SessionStatus.model_validate(data) if data else SessionStatus(session_id=session_id)

    def write_status(self, lease: Lease, status: SessionStatus) -> None:
        self.check_fence(lease)
        status.generation = lease.generation
        status.updated_at = datetime.now(UTC)
        self._write_atomic(
            f"{self._session_dir(lease.session_id)}/STATUS.json", status.model_dump_json().encode()
        )

    def sweep_temporaries(self, older_than_s: float = 3600.0) -> int:
        """Remove the temp files a killed process left in a local store (`.tmp-*` uploads,
        `scratch/.snap-*` snapshots) older than `older_than_s`; returns how many. Object
        stores never hold any (see `put`). Young files may belong to a live writer."""
        if not self._local:
            return 0
        import time

        cutoff = time.time() - older_than_s
        removed = 0
        for pattern in ("*/g*/.tmp-*", "*/leases/.tmp-*", "*/.tmp-*", "*/scratch/.snap-*"):
            for path in Path(self.root).glob(pattern):
                try:
                    if path.is_file() and path.stat().st_mtime < cutoff:
                        path.unlink()
                        removed += 1
                except OSError:
                    continue
        return removed

    def sessions(self) -> list[str]:
        return sorted(n for n in self._list_names(self.root) if _SESSION_RE.match(n))

    def delete_session(self, session_id: str) -> None:
        path = self._session_dir(session_id)
        self._forget(session_id)
        if self._local:
            import shutil

            # Errors propagate (the caller retries): a half-deleted session is still garbage.
            if os.path.isdir(path):
                shutil.rmtree(path)
        elif self._exists(path):
            self.fs.rm(path, recursive=True)
