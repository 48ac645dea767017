"""s_0 of exported tasks, stored as Weft initial snapshots (§4.2.2: a sample is kept only if it
replays from s_0), so `weft run` rollouts and `weft verify` take ToolSpace TaskGraphs unchanged.

Every real server's s_0 is a function of its definition in `servers`: the session DB is empty
(sqlite keeps its tables there; the others never open it) and the workspace is what the server's
`init` leaves in an empty folder (git: a repository with one commit of a README, fixed dates;
filesystem and memory: nothing). Both are built here, content-addressed, under
`<folder>/snapshots/` (`<sha256>.sqlite`, `<sha256>.tar.gz`: the names `weft verify` and the
rollout stage look for), stored in the host's object store, and named in
`TaskGraph.initial_snapshots`. Whether the stored s_0 is the one the walk started from is not
assumed: `synthesize` runs the acceptance replay from it.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import subprocess
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from weft_core.models import SnapshotRef
from weft_core.refs import content_address
from weft_toolspace import servers
from weft_toolspace.exceptions import ToolSpaceRuntimeError, ToolSpaceUserError

if TYPE_CHECKING:
    from weft_megamcp import MegaMCPClient

SNAPSHOTS = "snapshots"
DB_SUFFIX, WORKSPACE_SUFFIX = ".sqlite", ".tar.gz"


def _uses(spec: servers.RealServer, placeholder: str) -> bool:
    return any(placeholder in a for a in (*spec.args, *spec.env.values()))


def _publish(folder: Path, data: bytes, suffix: str) -> Path:
    """Write `data` as `<sha256><suffix>` (write, then publish the name: a reader never sees half)."""
    sha = hashlib.sha256(data).hexdigest()
    final = folder / f"{sha}{suffix}"
    if not final.exists():
        part = folder / f".{sha}.part-{os.getpid()}"
        part.write_bytes(data)
        part.replace(final)
    return final


def empty_db(folder: Path) -> Path:
    """An empty SQLite database (one page, no table). A zero-byte file is what an unopened
    session DB is, but an initial snapshot must be a database a host accepts."""
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder, prefix=".db-") as tmp:
        path = Path(tmp) / "s0.sqlite"
        conn = sqlite3.connect(path)
        try:
            conn.execute("CREATE TABLE s0 (x)")
            conn.execute("DROP TABLE s0")
            conn.commit()
            conn.execute("VACUUM")
        finally:
            conn.close()
        return _publish(folder, path.read_bytes(), DB_SUFFIX)


def initial_workspace(name: str, folder: Path, files: dict[str, str] | None = None) -> Path | None:
    """The tarball of server `name`'s s_0 workspace (None: it keeps no files), built by running
    its `init` in an empty folder with its environment, as MegaMCP does before it starts it;
    `files` ({path: text}, a state-query environment's s_0 seeded from recorded outputs) are
    written there first."""
    from weft_megamcp.checkpoints.workspace import tar_workspace
    from weft_toolspace.environments import write_tree

    spec = servers.server(name)
    if not _uses(spec, servers.WS):
        return None
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder, prefix=".ws-") as tmp:
        tree = Path(tmp) / "workspace"
        tree.mkdir()
        write_tree(files or {}, tree)
        if spec.init is not None:
            # HOME is the empty folder so no user git config (default branch, hooks) leaks in.
            env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": tmp, **spec.env}
            done = subprocess.run(
                ["/bin/sh", "-c", spec.init],
                cwd=tree,
                env=env,
                capture_output=True,
                text=True,
                check=False,
                timeout=60,
            )
            if done.returncode != 0:
                why = " ".join((done.stderr or done.stdout).split())[-300:]
                raise ToolSpaceRuntimeError(f"s0 workspace of {name}: init failed: {why}")
        return _publish(folder, tar_workspace(tree), WORKSPACE_SUFFIX)


async def store_initial_state(
    client: MegaMCPClient,
    mcps: list[str],
    folder: Path,
    *,
    seeds: dict[str, dict[str, str]] | None = None,
    bundles: dict[str, Path] | None = None,
) -> dict[str, SnapshotRef]:
    """s_0 of each MCP (a real server's name, or a bundle's in `bundles`, as registered) under
    `folder`, stored in the host's object store; returns the refs for
    `TaskGraph.initial_snapshots`. A server in `seeds` starts from those workspace files (its
    state-query environment's s_0 from recorded outputs); a bundle from its seed database."""
    bundles = bundles or {}
    unknown = sorted(m for m in mcps if m not in servers.SPECS and m not in bundles)
    if unknown:
        raise ToolSpaceUserError(
            f"no s0 for {', '.join(unknown)}: not one of {', '.join(servers.SPECS)}"
            " nor a materialised bundle"
        )
    empty = empty_db(folder)
    refs: dict[str, SnapshotRef] = {}
    for m in sorted(mcps):
        db = empty
        if m in bundles:
            seed = bundles[m] / "seed.sqlite"
            if not seed.exists():
                raise ToolSpaceUserError(f"bundle {bundles[m]} of {m!r} has no seed.sqlite")
            db = _publish(folder, seed.read_bytes(), DB_SUFFIX)
        await client.put_snapshot(m, db)
        ws = None if m in bundles else initial_workspace(m, folder, (seeds or {}).get(m))
        if ws is not None:
            await client.put_workspace(m, ws)
        refs[m] = SnapshotRef(
            mcp=m,
            uri=content_address(db.name.removesuffix(DB_SUFFIX)),
            sha256=db.name.removesuffix(DB_SUFFIX),
            workspace_uri=None
            if ws is None
            else content_address(ws.name.removesuffix(WORKSPACE_SUFFIX)),
        )
    return refs
