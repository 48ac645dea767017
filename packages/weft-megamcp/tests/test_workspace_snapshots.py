"""Workspaces in snapshots: a group's files are captured with its DBs, come back on restore and
in a group created from the exported snapshot (on this host or another sharing the stores), and
a hostile workspace tarball is refused before anything reaches the disk."""

from __future__ import annotations

import io
import sqlite3
import tarfile
from pathlib import Path

import pytest

from weft_megamcp.client import MegaMCPClient
from weft_megamcp.exceptions import MegaMCPUserError
from weft_megamcp.host import MegaMCPHost
from weft_megamcp.models import GroupHandle
from weft_megamcp.registry import MCPRecord
from weft_megamcp.settings import MegaMCPSettings

pytestmark = pytest.mark.integration


def _names(host: MegaMCPHost, group: GroupHandle, mcp: str) -> list[tuple[str, str]]:
    assert host.core is not None
    s = host.core.manager.get(group.group_id).sessions[mcp]
    con = sqlite3.connect(f"file:{s.db_path}?mode=ro", uri=True)
    try:
        return con.execute("select name, email from contact order by id").fetchall()
    finally:
        con.close()


async def _note(client: MegaMCPClient, group: GroupHandle, mcp: str, path: str) -> str | None:
    res = await client.call_tool(group, mcp, "read_note", {"path": path})
    return None if res.is_error else res.text


async def test_restore_brings_the_workspace_back(
    client: MegaMCPClient, group: GroupHandle, notes: MCPRecord, host: MegaMCPHost
) -> None:
    m = notes.mcp_id
    await client.call_tool(group, m, "write_note", {"path": "plan/q3.md", "text": "original"})
    snap = await client.snapshot(group)
    await client.call_tool(group, m, "write_note", {"path": "plan/q3.md", "text": "mutated"})
    await client.call_tool(group, m, "write_note", {"path": "later.txt", "text": "after"})
    assert await _note(client, group, m, "plan/q3.md") == "mutated"
    await client.restore(group, snap)
    assert await _note(client, group, m, "plan/q3.md") == "original"
    assert await _note(client, group, m, "later.txt") is None


async def test_group_created_from_an_exported_snapshot_has_its_files_and_rows(
    client: MegaMCPClient, group: GroupHandle, notes: MCPRecord, host: MegaMCPHost
) -> None:
    m = notes.mcp_id
    await client.call_tool(group, m, "add_contact", {"name": "Ada", "email": "ada@x.y"})
    await client.call_tool(group, m, "write_note", {"path": "brief.md", "text": "v1"})
    snap = await client.snapshot(group)
    rows = _names(host, group, m)
    await client.call_tool(group, m, "write_note", {"path": "brief.md", "text": "v2"})
    await client.call_tool(group, m, "add_contact", {"name": "Late", "email": "late@x.y"})

    exported = await client.export(group, snap)  # the snapshot, not the mutated live state
    ref = exported[m]
    assert ref.uri and ref.workspace_uri and ref.uri.startswith("sha256:")
    child = await client.create_group({m: ref.uri}, workspaces={m: ref.workspace_uri})
    assert await _note(client, child, m, "brief.md") == "v1"
    assert _names(host, child, m) == rows
    # The live export is another state: its workspace holds v2.
    live = (await client.export(group))[m]
    assert live.workspace_uri != ref.workspace_uri
    other = await client.create_group({m: live.uri}, workspaces={m: live.workspace_uri or ""})
    assert await _note(client, other, m, "brief.md") == "v2"
    # A child's change stays in the child.
    await client.call_tool(child, m, "write_note", {"path": "brief.md", "text": "child"})
    again = await client.create_group({m: ref.uri}, workspaces={m: ref.workspace_uri})
    assert await _note(client, again, m, "brief.md") == "v1"


async def test_exported_snapshot_starts_a_group_on_another_host(
    client: MegaMCPClient, group: GroupHandle, notes: MCPRecord, host: MegaMCPHost, tmp_path: Path
) -> None:
    """Content-addressed refs resolve on any host that shares the registry and object store."""
    m = notes.mcp_id
    await client.call_tool(group, m, "write_note", {"path": "shared.txt", "text": "from host 1"})
    ref = (await client.export(group))[m]
    first = host.settings
    second = MegaMCPSettings(
        data_dir=tmp_path / "second",
        admin_token="admin-secret-token",
        registry_url=first.resolved_registry_url,
        object_store_url=first.resolved_object_store_url,
    )
    async with (
        MegaMCPHost.running(second) as h2,
        MegaMCPClient(h2.url, h2.admin_token) as c2,
    ):
        g2 = await c2.create_group({m: ref.uri}, workspaces={m: ref.workspace_uri or ""})
        assert await _note(c2, g2, m, "shared.txt") == "from host 1"


def _tarball(members: list[tuple[tarfile.TarInfo, bytes | None]]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for info, data in members:
            if data is not None:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
            else:
                tar.addfile(info)
    return buf.getvalue()


def _file(name: str) -> tuple[tarfile.TarInfo, bytes]:
    return tarfile.TarInfo(name), b"pwned"


def _link(name: str, target: str) -> tuple[tarfile.TarInfo, None]:
    info = tarfile.TarInfo(name)
    info.type = tarfile.SYMTYPE
    info.linkname = target
    return info, None


@pytest.mark.parametrize(
    ("members", "why"),
    [
        ([_file("ok.txt"), _file("../escape.txt")], "escapes the workspace"),
        ([_file("/tmp/abs.txt")], "escapes the workspace"),
        ([_file("a/../../escape.txt")], "escapes the workspace"),
        ([_link("ln", "/etc"), _file("ln/passwd")], "not a plain file or folder"),
    ],
)
async def test_hostile_workspace_tarball_is_refused(
    client: MegaMCPClient,
    notes: MCPRecord,
    host: MegaMCPHost,
    tmp_path: Path,
    members: list[tuple[tarfile.TarInfo, bytes | None]],
    why: str,
) -> None:
    m = notes.mcp_id
    bad = tmp_path / "inbox" / "bad.tar.gz"
    bad.parent.mkdir()
    bad.write_bytes(_tarball(members))
    with pytest.raises(MegaMCPUserError, match=why):
        await client.put_workspace(m, bad)
    # A blob that reached the store another way is refused when a group would start from it.
    assert host.core is not None
    sha = host.core.registry.store.put_bytes(bad.read_bytes())
    with pytest.raises(MegaMCPUserError, match=why):
        await client.create_group({m: None}, workspaces={m: f"sha256:{sha}"})
    assert not (tmp_path / "inbox" / "escape.txt").exists()
    assert not list(tmp_path.rglob("escape.txt")) and not list(tmp_path.rglob("abs.txt"))
    # No half-made group is left behind.
    assert [g for g in host.core.manager.groups.values() if g.status != "closed"] == []


async def test_put_workspace_from_a_folder_and_a_missing_path(
    client: MegaMCPClient, notes: MCPRecord, tmp_path: Path
) -> None:
    m = notes.mcp_id
    folder = tmp_path / "ws"
    (folder / "docs").mkdir(parents=True)
    (folder / "docs" / "a.txt").write_text("alpha")
    uri = await client.put_workspace(m, folder)
    assert uri == await client.put_workspace(m, folder)  # content-addressed: idempotent
    g = await client.create_group({m: None}, workspaces={m: uri})
    assert await _note(client, g, m, "docs/a.txt") == "alpha"
    with pytest.raises(MegaMCPUserError, match="no such folder or file"):
        await client.put_workspace(m, tmp_path / "missing")
    with pytest.raises(MegaMCPUserError, match="does not name"):
        await client.create_group({m: None}, workspaces={"other": uri})


def test_equal_trees_tar_to_equal_bytes_whenever_tarred(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Workspaces are content-addressed: the gzip header must not stamp the time of tarring."""
    import gzip

    from weft_megamcp.checkpoints import tar_workspace

    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.txt").write_text("alpha")
    monkeypatch.setattr(gzip.time, "time", lambda: 1_000_000_000.0)
    first = tar_workspace(tmp_path)
    monkeypatch.setattr(gzip.time, "time", lambda: 2_000_000_000.0)
    assert tar_workspace(tmp_path) == first


async def test_a_session_with_no_checkpoint_recovers_to_its_initial_workspace(
    client: MegaMCPClient, notes: MCPRecord, host: MegaMCPHost, tmp_path: Path
) -> None:
    """Recovery with no checkpoint starts a session over from its initial state: the stored
    workspace it was created from, not the bundle's seed."""
    m = notes.mcp_id
    folder = tmp_path / "ws"
    folder.mkdir()
    (folder / "brief.md").write_text("initial")
    uri = await client.put_workspace(m, folder)
    g = await client.create_group({m: None}, workspaces={m: uri})
    await client.call_tool(g, m, "write_note", {"path": "brief.md", "text": "changed"})
    assert host.core is not None
    group = host.core.manager.get(g.group_id)
    assert group.sessions[m].initial_workspace_uri == uri  # persisted with the group
    async with host.core.manager.quiesced(group):
        host.core.recovery._restore_checkpoint(group.sessions[m], None)
    assert await _note(client, g, m, "brief.md") == "initial"


async def test_a_call_is_ledgered_as_mutating_exactly_when_it_changed_state_across_a_restore(
    client: MegaMCPClient, group: GroupHandle, notes: MCPRecord
) -> None:
    """The fingerprint a call leaves stands in for the next call's "before" (one workspace walk
    per call instead of two) only until the files are put back: a stale one would ledger the
    read after the restore as a write."""
    m = notes.mcp_id
    await client.call_tool(group, m, "write_note", {"path": "a.md", "text": "one"})
    assert await _note(client, group, m, "a.md") == "one"
    snap = await client.snapshot(group)
    await client.call_tool(group, m, "write_note", {"path": "a.md", "text": "two"})
    await client.call_tool(group, m, "write_note", {"path": "b.md", "text": "x"})
    await client.restore(group, snap)
    assert await _note(client, group, m, "a.md") == "one"
    await client.call_tool(group, m, "write_note", {"path": "a.md", "text": "two"})
    assert await _note(client, group, m, "a.md") == "two"
    ledger = (await client.ledger(group))[m]
    # The snapshot's two calls, then the three after the restore.
    assert [e.tool for e in ledger] == [
        "write_note",
        "read_note",
        "read_note",
        "write_note",
        "read_note",
    ]
    assert [e.mutated for e in ledger] == [True, False, False, True, False]
