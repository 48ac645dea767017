"""The registry: content-addressed MCP versions, snapshots and verifiers in SQL + object store."""

from __future__ import annotations

import asyncio
import json
import shutil
import tempfile
import threading
from collections import OrderedDict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from sqlalchemy import Engine, event, func
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, create_engine, select

from weft_core._hashing import canonical_json, sha256_text
from weft_core.models import Verifier, slugify
from weft_megamcp._probe import run_probe, tool_specs
from weft_megamcp._probe_zygote import ProbeZygote
from weft_megamcp.checkpoints._errors import WorkspaceArchiveError
from weft_megamcp.checkpoints.workspace import check_workspace_tarball, tar_workspace
from weft_megamcp.exceptions import (
    MegaMCPUserError,
    NotFoundError,
    RegistrationError,
)
from weft_megamcp.objectstore import ObjectStore, file_sha256
from weft_megamcp.registry._data_version import DataVersion
from weft_megamcp.registry._records import (
    METADATA,
    MCPKind,
    MCPRecord,
    MCPVersionRow,
    SnapshotRecord,
    SnapshotRow,
    VerifierRecord,
    VerifierRow,
)
from weft_megamcp.registry._sources import SourceInfo, inspect_source
from weft_megamcp.sandbox import Sandbox, sandbox_for
from weft_megamcp.stdio_transport import list_command_tools

_PROBED: dict[str, dict[str, Any]] = {}


def _screen_command(argv: list[str]) -> dict[str, Any]:
    from weft_megamcp.screening import screen_command

    report = screen_command(argv)
    return {
        "tier": str(report.tier),
        "load_class": str(report.load_class),
        "cap": report.cap,
        "reasons": report.reasons,
    }


def _check_argv(argv: list[str], where: str = "") -> None:
    if not argv or not all(isinstance(a, str) and a for a in argv):
        raise RegistrationError(f"{where}command must be a non-empty list of non-empty strings")
    if shutil.which(argv[0]) is None and not Path(argv[0]).exists():
        raise RegistrationError(f"{where}command {argv[0]!r} is not on PATH")


def make_engine(url: str) -> Engine:
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})

        @event.listens_for(engine, "connect")
        def _wal(dbapi_conn: Any, _: Any) -> None:
            # Several worker processes share the registry file: WAL lets readers run during a write.
            dbapi_conn.execute("PRAGMA journal_mode=WAL")
            dbapi_conn.execute("PRAGMA busy_timeout=30000")

        return engine
    return create_engine(url, pool_pre_ping=True)


_MAX_VERSION = 2**31 - 1
# Cached records per Registry: far more than a host serves versions / initial DBs at once, and
# small (an MCPRecord is its tool list; a SnapshotRecord five fields).
_RECORD_CACHE_MAX = 1024
_SNAPSHOT_CACHE_MAX = 65536


def check_verifier_content(content: bytes) -> Verifier:
    """A 'checks' verifier as stored: a weft-core Verifier with at least one check (one with
    none would pass every run). RegistrationError, one line, otherwise."""
    try:
        verifier = Verifier.model_validate_json(content)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(x) for x in first["loc"]) or "content"
        raise RegistrationError(
            f"checks verifier is malformed ({exc.error_count()} error(s)); {loc}: {first['msg']}"
        ) from None
    if not verifier.has_checks:
        raise RegistrationError("checks verifier has no checks: it would pass every run")
    return verifier


class Registry:
    """MCP records with monotonically increasing versions per MCP, keyed by source content.

    Registering identical content again returns the existing version; changed content gets the
    next version. Sources, seeds, snapshots and verifiers are blobs in the object store.

    Rows are never updated or deleted, which is what the in-process caches rely on: a
    version's record (`get(mcp_id, version)`), the set of registered MCP ids
    (`require_registered`) and the records of snapshots stored through this instance
    (`put_snapshot`). Cached records are shared objects: frozen, and read-only by contract.
    Anything that may have changed in another process sharing the DB (the latest version, an
    id not seen yet) is still asked of the DB; on SQLite the latest version only after a
    commit changed the file (`DataVersion`).
    """

    def __init__(
        self,
        url: str,
        store: ObjectStore,
        modules_dir: Path,
        *,
        sandbox: Sandbox | None = None,
        register_timeout_s: float = 60.0,
        fork_probes: bool = True,
    ) -> None:
        self.url = url
        self.store = store
        self.modules_dir = modules_dir
        # Registration probes and hosted server processes run in this sandbox (fail closed:
        # bubblewrap unless the caller configured otherwise).
        self.sandbox = sandbox or sandbox_for(
            "bwrap",
            hidden=[modules_dir.parent, *([Path(store.root)] if store.is_local else [])],
        )
        self.register_timeout_s = register_timeout_s
        # Probes fork from one pre-imported sandboxed process; any outcome but a clean result
        # or a timeout is re-run as a dedicated probe (see _probe_zygote).
        self.probes: ProbeZygote | None = ProbeZygote(self.sandbox) if fork_probes else None
        self.engine = make_engine(url)
        METADATA.create_all(self.engine)
        # Creation runs on worker threads (asyncio.to_thread): the caches take a lock.
        self._cache_lock = threading.Lock()
        self._records: OrderedDict[tuple[str, int], MCPRecord] = OrderedDict()
        self._known_ids: set[str] = set()
        self._snapshots: OrderedDict[str, SnapshotRecord] = OrderedDict()
        # mcp_id -> (latest version, the DB's data version it was read under)
        self._data_version = DataVersion(url)
        self._latest: dict[str, tuple[int, int]] = {}
        self._registering: dict[str, tuple[asyncio.Lock, list[int]]] = {}  # lock, its users

    def _remember(self, record: MCPRecord) -> MCPRecord:
        with self._cache_lock:
            self._known_ids.add(record.mcp_id)
            self._records[(record.mcp_id, record.version)] = record
            self._records.move_to_end((record.mcp_id, record.version))
            if len(self._records) > _RECORD_CACHE_MAX:
                self._records.popitem(last=False)
        return record

    async def aclose(self) -> None:
        """`close()`, after the probe zygote (if one runs) has exited."""
        if self.probes is not None:
            await self.probes.aclose()
        self.close()

    def close(self) -> None:
        if self.probes is not None:
            self.probes.close()
        self._data_version.close()
        self.engine.dispose()

    # ---- MCPs -------------------------------------------------------------------------------

    async def register(self, path: str | Path, *, name: str | None = None) -> MCPRecord:
        """Register an EnvBundle folder, a module package folder or a module .py file."""
        info = inspect_source(Path(path), name=name)
        tree = info.tree()
        source_hash = sha256_text(
            canonical_json({"kind": info.kind, "entry": info.entry, "tree": info.identity(tree)})
        )
        # Callers registering the same content at once (a composer's first wave) wait for one
        # probe rather than each paying its sandboxed import; the lock goes with its last user
        # (not when it is merely released: a woken waiter has not taken it yet).
        entry = self._registering.setdefault(source_hash, (asyncio.Lock(), [0]))
        lock, users = entry
        users[0] += 1
        try:
            async with lock:
                return await self._register_new(info, tree, source_hash)
        finally:
            users[0] -= 1
            if users[0] == 0 and self._registering.get(source_hash) is entry:
                del self._registering[source_hash]

    async def _register_new(
        self, info: SourceInfo, tree: dict[str, str], source_hash: str
    ) -> MCPRecord:
        existing = self._by_hash(info.mcp_id, source_hash)
        if existing is not None:
            return existing
        for rel, p in info.files.items():
            self.store.put_file(p, tree[rel])
        tree_blob = self.store.put_bytes(canonical_json(tree).encode())
        seed_uri = self.put_snapshot(info.mcp_id, info.seed).uri if info.seed else None
        version = self._next_version(info.mcp_id)
        folder = self.materialize_tree(info.mcp_id, version, tree_blob)
        # Screening and the import that lists tools run in a throwaway sandboxed process; the
        # verdict is a function of the content, so identical content is probed once per process.
        probe = _PROBED.get(source_hash)
        if probe is None and self.probes is not None:
            probe = await self.probes.probe(
                folder,
                info.entry,
                info.mcp_id,
                version,
                source_hash[:10],
                timeout_s=self.register_timeout_s,
            )
        if probe is None:
            probe = await run_probe(
                folder,
                info.entry,
                info.mcp_id,
                version,
                source_hash[:10],
                sandbox=self.sandbox,
                timeout_s=self.register_timeout_s,
            )
        _PROBED[source_hash] = probe
        info.metadata["screen"] = probe["screen"]
        tools = probe["tools"]
        row = MCPVersionRow(
            mcp_id=info.mcp_id,
            version=version,
            kind=info.kind,
            name=info.name,
            description=info.description,
            domain=info.domain,
            source_hash=source_hash,
            source_tree=tree_blob,
            entry=info.entry,
            tools=tools,
            seed_snapshot_uri=seed_uri,
            meta=info.metadata,
        )
        return self._insert(row)

    async def register_command(
        self,
        argv: list[str],
        *,
        name: str,
        env: dict[str, str] | None = None,
        description: str = "",
    ) -> MCPRecord:
        """Register a command that starts a stdio MCP server (served one process per session)."""
        _check_argv(argv)
        meta = {"argv": argv, "env": env or {}, "screen": _screen_command(argv)}
        return await self._register_commands(
            {"": argv}, json.dumps(argv), meta, name=name, env=env, description=description
        )

    async def register_suite(
        self,
        members: dict[str, list[str]],
        *,
        name: str,
        env: dict[str, str] | None = None,
        description: str = "",
    ) -> MCPRecord:
        """Register a suite: several stdio MCP servers that one session runs side by side, one
        process per member, all in the session's workspace and DB (a filesystem server and a git
        server over one repository). Its tools are the members' tools; a name two members
        share is refused, since a call could not say which member it is for."""
        if not members:
            raise RegistrationError("a suite needs at least one member")
        for member, argv in members.items():
            if not member or not member.replace("-", "").replace("_", "").isalnum():
                raise RegistrationError(
                    f"suite member name {member!r} must be letters, digits, '-' or '_'"
                )
            _check_argv(argv, where=f"suite member {member!r}: ")
        members = {k: list(v) for k, v in sorted(members.items())}
        meta: dict[str, Any] = {
            "members": members,
            "env": env or {},
            "screen": _screen_command([a for argv in members.values() for a in argv]),
        }
        return await self._register_commands(
            members,
            json.dumps({"members": members}),
            meta,
            name=name,
            env=env,
            description=description,
        )

    async def _register_commands(
        self,
        members: dict[str, list[str]],
        entry: str,
        meta: dict[str, Any],
        *,
        name: str,
        env: dict[str, str] | None,
        description: str,
    ) -> MCPRecord:
        mcp_id = slugify(name)
        source_hash = sha256_text(
            canonical_json({"kind": "command", "entry": entry, "env": env or {}})
        )
        existing = self._by_hash(mcp_id, source_hash)
        if existing is not None:
            return existing
        tools: list[Any] = []
        owner: dict[str, str] = {}
        with tempfile.TemporaryDirectory(prefix="megamcp-register-") as tmp:
            for member, argv in members.items():
                try:
                    listed = await list_command_tools(
                        argv,
                        env or {},
                        Path(tmp),
                        sandbox=self.sandbox,
                        timeout_s=self.register_timeout_s,
                    )
                except MegaMCPUserError:  # a timeout, or no sandbox: already one clear line
                    raise
                except Exception as exc:
                    raise RegistrationError(
                        f"command {' '.join(argv)!r} did not answer tools/list: "
                        f"{type(exc).__name__}: {exc}"
                    ) from None
                for tool in listed:
                    if tool.name in owner:
                        raise RegistrationError(
                            f"suite {name!r}: tool {tool.name!r} is offered by both "
                            f"{owner[tool.name]!r} and {member!r}"
                        )
                    owner[tool.name] = member
                tools += listed
        if len(members) > 1 or "" not in members:
            meta["tool_members"] = owner
        row = MCPVersionRow(
            mcp_id=mcp_id,
            version=self._next_version(mcp_id),
            kind=MCPKind.COMMAND,
            name=name,
            description=description,
            source_hash=source_hash,
            entry=entry,
            tools=tool_specs(tools),
            meta=meta,
        )
        return self._insert(row)

    def _insert(self, row: MCPVersionRow) -> MCPRecord:
        for attempt in range(5):
            with Session(self.engine) as s:
                s.add(row)
                try:
                    s.commit()
                except IntegrityError:
                    s.rollback()
                    again = self._by_hash(row.mcp_id, row.source_hash)
                    if again is not None:
                        return again
                    if attempt == 4:
                        raise
                    row = MCPVersionRow.model_validate(
                        row.model_dump(exclude={"id"}) | {"version": self._next_version(row.mcp_id)}
                    )
                    continue
                s.refresh(row)
                return self._remember(row.record())
        raise RegistrationError(
            f"could not allocate a version for {row.mcp_id!r}"
        )  # pragma: no cover

    def _by_hash(self, mcp_id: str, source_hash: str) -> MCPRecord | None:
        with Session(self.engine) as s:
            row = s.exec(
                select(MCPVersionRow).where(
                    MCPVersionRow.mcp_id == mcp_id, MCPVersionRow.source_hash == source_hash
                )
            ).first()
            return self._remember(row.record()) if row else None

    def _next_version(self, mcp_id: str) -> int:
        with Session(self.engine) as s:
            current = s.exec(
                select(func.max(MCPVersionRow.version)).where(MCPVersionRow.mcp_id == mcp_id)
            ).one()
            return int(current or 0) + 1

    def _latest_version(self, mcp_id: str) -> int:
        """The latest registered version: asked of the DB unless nothing was committed to it
        since the last answer (another process may have registered one)."""
        stamp = self._data_version()
        if stamp is not None:
            with self._cache_lock:
                seen = self._latest.get(mcp_id)
            if seen is not None and seen[1] == stamp:
                return seen[0]
        # Read after the stamp: a commit in between makes this newer than the stamp says, and
        # changes the stamp, so the next call asks again (never an answer older than a stamp).
        latest = self._next_version(mcp_id) - 1
        if latest < 1:
            raise NotFoundError(f"MCP {mcp_id!r} is not registered")
        if stamp is not None:
            with self._cache_lock:
                self._latest[mcp_id] = (latest, stamp)
        return latest

    def get(self, mcp_id: str, version: int | None = None) -> MCPRecord:
        """A version of an MCP (the latest without `version`). The returned record may be shared
        with other callers: do not mutate it (it is frozen; its containers are read-only)."""
        if version is not None and not 1 <= version <= _MAX_VERSION:
            # Outside what the DB column holds: no such version (not an overflow in the driver).
            raise NotFoundError(f"MCP {mcp_id!r} version {str(version)[:20]} is not registered")
        if version is None:
            # The record itself then usually comes from the cache, which saves fetching the
            # row and building its record (tool specs) on every group.
            version = self._latest_version(mcp_id)
        with self._cache_lock:
            cached = self._records.get((mcp_id, version))
            if cached is not None:
                self._records.move_to_end((mcp_id, version))
                return cached
        with Session(self.engine) as s:
            row = s.exec(
                select(MCPVersionRow).where(
                    MCPVersionRow.mcp_id == mcp_id, MCPVersionRow.version == version
                )
            ).first()
            if row is None:
                raise NotFoundError(f"MCP {mcp_id!r} version {version} is not registered")
            return self._remember(row.record())

    def require_registered(self, mcp_id: str) -> None:
        """NotFoundError unless some version of `mcp_id` is registered. An id once registered
        stays so; one not seen here is asked of the DB (another process may have registered it)."""
        with self._cache_lock:
            if mcp_id in self._known_ids:
                return
        self.get(mcp_id)

    def list_latest(self) -> list[MCPRecord]:
        """The latest version of every MCP."""
        with Session(self.engine) as s:
            rows = s.exec(
                select(MCPVersionRow).order_by(
                    col(MCPVersionRow.mcp_id), col(MCPVersionRow.version)
                )
            ).all()
            latest: dict[str, MCPVersionRow] = {r.mcp_id: r for r in rows}
            return [r.record() for r in latest.values()]

    def versions(self, mcp_id: str) -> list[MCPRecord]:
        with Session(self.engine) as s:
            rows = s.exec(
                select(MCPVersionRow)
                .where(MCPVersionRow.mcp_id == mcp_id)
                .order_by(col(MCPVersionRow.version))
            ).all()
            return [r.record() for r in rows]

    def source_folder(self, record: MCPRecord) -> Path:
        """The materialized source of a module/bundle version (fetched from the store if needed)."""
        with Session(self.engine) as s:
            row = s.exec(
                select(MCPVersionRow).where(
                    MCPVersionRow.mcp_id == record.mcp_id, MCPVersionRow.version == record.version
                )
            ).one()
        if row.source_tree is None:
            raise NotFoundError(f"MCP {record.mcp_id!r} v{record.version} has no source files")
        return self.materialize_tree(record.mcp_id, record.version, row.source_tree)

    def materialize_tree(self, mcp_id: str, version: int, tree_blob: str) -> Path:
        folder = self.modules_dir / mcp_id / f"v{version}"
        marker = folder / ".complete"
        if marker.exists() and marker.read_text() == tree_blob:
            return folder
        tree: dict[str, str] = json.loads(self.store.get_bytes(tree_blob))
        self.modules_dir.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=self.modules_dir, prefix=f".{mcp_id}-v{version}-"))
        try:
            for rel, sha in tree.items():
                target = (tmp / rel).resolve()
                if tmp.resolve() not in target.parents:
                    raise RegistrationError(f"source tree entry {rel!r} escapes its folder")
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(self.store.local_path(sha), target)
            (tmp / ".complete").write_text(tree_blob)
            folder.parent.mkdir(parents=True, exist_ok=True)
            if folder.exists():
                shutil.rmtree(folder)
            tmp.rename(folder)
        except FileExistsError:
            shutil.rmtree(tmp, ignore_errors=True)  # another process materialized it first
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        return folder

    # ---- snapshots ----------------------------------------------------------------------------

    def put_snapshot(self, mcp_id: str, path: str | Path) -> SnapshotRecord:
        """Store an immutable initial DB for `mcp_id`; returns its record (idempotent by content)."""
        p = Path(path)
        if not p.is_file():
            raise RegistrationError(f"snapshot {p}: no such file")
        with open(p, "rb") as fh:
            if fh.read(16) != b"SQLite format 3\x00":
                raise RegistrationError(f"snapshot {p}: not a SQLite database")
        sha = file_sha256(p)
        uri = self.store.uri(sha)
        with self._cache_lock:
            known = self._snapshots.get(uri)
        if known is not None:
            # Content-addressed and never deleted: this instance already stored the blob and
            # its row, and the row (first mcp_id, size, time) is what the DB would answer.
            return known
        self.store.put_file(p, sha)
        with Session(self.engine) as s:
            row = s.get(SnapshotRow, uri)
            if row is None:
                row = SnapshotRow(uri=uri, mcp_id=mcp_id, sha256=sha, size=p.stat().st_size)
                s.add(row)
                try:
                    s.commit()
                except IntegrityError:
                    s.rollback()
                    row = s.get(SnapshotRow, uri)
                    assert row is not None
                s.refresh(row)
            record = SnapshotRecord(
                uri=row.uri,
                mcp_id=row.mcp_id,
                sha256=row.sha256,
                size=row.size,
                created_at=row.created_at,
            )
        with self._cache_lock:
            self._snapshots[uri] = record
            if len(self._snapshots) > _SNAPSHOT_CACHE_MAX:
                self._snapshots.popitem(last=False)
        return record

    def snapshot_file(self, uri: str) -> tuple[Path, str]:
        """(local read-only path, sha256) of a snapshot URI."""
        sha = self.store.sha_of_uri(uri)
        return self.store.local_path(sha), sha

    def put_workspace(self, mcp_id: str, path: str | Path) -> SnapshotRecord:
        """Store an immutable initial workspace for `mcp_id`: a folder (tarred as checkpoints
        tar it) or a gzip tarball of one. Returns its record (idempotent by content). A tarball
        with a member that is a link or lands outside its folder is refused."""
        p = Path(path)
        if p.is_dir():
            data = tar_workspace(p)
        elif p.is_file():
            data = p.read_bytes()
        else:
            raise RegistrationError(f"workspace {p}: no such folder or file")
        try:
            check_workspace_tarball(data, where=f"workspace {p}")
        except WorkspaceArchiveError as exc:
            raise RegistrationError(str(exc)) from None
        sha = self.store.put_bytes(data)
        return SnapshotRecord(
            uri=self.store.uri(sha),
            mcp_id=mcp_id,
            sha256=sha,
            size=len(data),
            created_at=datetime.now(UTC),
        )

    def workspace_tarball(self, uri: str) -> bytes:
        """The tarball a workspace URI names, its sha256 verified."""
        return self.store.get_bytes(self.store.sha_of_uri(uri))

    # ---- verifiers ----------------------------------------------------------------------------

    def put_verifier(self, kind: str, content: bytes) -> VerifierRecord:
        if kind not in ("checks", "python"):
            raise RegistrationError(f"verifier kind must be 'checks' or 'python', not {kind!r}")
        if kind == "checks":
            check_verifier_content(content)
        sha = self.store.put_bytes(content)
        with Session(self.engine) as s:
            row = s.get(VerifierRow, sha)
            if row is None:
                row = VerifierRow(
                    verifier_id=sha, kind=kind, blob=sha, created_at=datetime.now(UTC)
                )
                s.add(row)
                try:
                    s.commit()
                except IntegrityError:
                    s.rollback()
                    row = s.get(VerifierRow, sha)
                    assert row is not None
                s.refresh(row)
            return VerifierRecord(
                verifier_id=row.verifier_id, kind=row.kind, created_at=row.created_at
            )

    def get_verifier(self, verifier_id: str) -> tuple[str, bytes]:
        with Session(self.engine) as s:
            row = s.get(VerifierRow, verifier_id)
            if row is None:
                raise NotFoundError(f"verifier {verifier_id[:12]} is not registered")
            return row.kind, self.store.get_bytes(row.blob)
