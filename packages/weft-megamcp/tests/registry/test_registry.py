"""Registry: content-addressed versions, sources in the object store, snapshots, hostile input."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from weft_megamcp.exceptions import NotFoundError, RegistrationError
from weft_megamcp.objectstore import ObjectStore
from weft_megamcp.registry import MCPKind, Registry


# The PostgreSQL runs start a server (initdb + postgres): `slow` (600 s) on a loaded machine.
@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.slow)])
def registry(request: pytest.FixtureRequest, tmp_path: Path) -> Registry:
    """Every registry test runs on SQLite and on a real PostgreSQL server (see conftest)."""
    store = ObjectStore(str(tmp_path / "objects"), tmp_path / "cache")
    url = (
        f"sqlite:///{tmp_path / 'reg.sqlite'}"
        if request.param == "sqlite"
        else request.getfixturevalue("postgres_url")
    )
    reg = Registry(url, store, tmp_path / "modules")
    yield reg
    reg.close()


async def test_versions_follow_content(registry: Registry, bundle_dir: Path):
    v1 = await registry.register(bundle_dir)
    assert (v1.mcp_id, v1.version, v1.kind) == ("notes_crm", 1, MCPKind.BUNDLE)
    assert (await registry.register(bundle_dir)).version == 1  # same content, same version
    server = bundle_dir / "server.py"
    server.write_text(
        server.read_text().replace("Create a contact and return it.", "Create a contact.")
    )
    v2 = await registry.register(bundle_dir)
    assert v2.version == 2 and v2.source_hash != v1.source_hash
    assert next(t for t in v2.tools if t.name == "add_contact").description == "Create a contact."
    assert [r.version for r in registry.versions("notes_crm")] == [1, 2]
    assert registry.get("notes_crm").version == 2 and registry.get("notes_crm", 1).version == 1
    assert v1.metadata["screen"]["tier"] == "shared_process"
    assert "purge_all" not in v1.metadata["certified_tools"]


async def test_sources_are_materialized_from_the_store(
    registry: Registry, bundle_dir: Path, tmp_path: Path
):
    rec = await registry.register(bundle_dir)
    folder = registry.source_folder(rec)
    assert (folder / "server.py").read_text() == (bundle_dir / "server.py").read_text()
    # Lose the local module cache: it comes back from the object store.
    import shutil

    shutil.rmtree(tmp_path / "modules")
    again = registry.source_folder(rec)
    assert (again / "models.py").read_bytes() == (bundle_dir / "models.py").read_bytes()


async def test_module_file_and_seed_snapshot(registry: Registry, tmp_path: Path):
    mod = tmp_path / "echo_server.py"
    mod.write_text(
        "from fastmcp import FastMCP\nmcp = FastMCP('echo')\n\n@mcp.tool\ndef echo(text: str) -> str:\n    return text\n"
    )
    rec = await registry.register(mod)
    assert (
        rec.kind == MCPKind.MODULE
        and rec.mcp_id == "echo_server"
        and [t.name for t in rec.tools] == ["echo"]
    )
    assert rec.seed_snapshot_uri is None


async def test_snapshots_are_content_addressed(
    registry: Registry, bundle_dir: Path, tmp_path: Path
):
    rec = await registry.register(bundle_dir)
    seed_path, sha = registry.snapshot_file(rec.seed_snapshot_uri)
    again = registry.put_snapshot(rec.mcp_id, bundle_dir / "seed.sqlite")
    assert again.uri == rec.seed_snapshot_uri and again.sha256 == sha
    db = tmp_path / "other.sqlite"
    con = sqlite3.connect(db)
    con.execute("create table t (x)")
    con.commit()
    con.close()
    other = registry.put_snapshot(rec.mcp_id, db)
    assert other.uri != again.uri
    assert seed_path.stat().st_mode & 0o222 == 0  # blobs are stored read-only


async def test_hostile_input(registry: Registry, tmp_path: Path):
    with pytest.raises(RegistrationError, match="no such file"):
        await registry.register(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(RegistrationError, match="not an EnvBundle"):
        await registry.register(tmp_path / "empty")
    bad = tmp_path / "broken.py"
    bad.write_text("import nonexistent_module_xyz\n")
    with pytest.raises(RegistrationError, match="importing 'broken' failed"):
        await registry.register(bad)
    noserver = tmp_path / "noserver.py"
    noserver.write_text("x = 1\n")
    with pytest.raises(RegistrationError, match="neither create_server"):
        await registry.register(noserver)
    txt = tmp_path / "notes.txt"
    txt.write_text("hi")
    with pytest.raises(RegistrationError, match=r"\.py"):
        await registry.register(txt)
    with pytest.raises(RegistrationError, match="not a SQLite"):
        registry.put_snapshot("x", txt)
    with pytest.raises(NotFoundError):
        registry.get("never_registered")
    with pytest.raises(RegistrationError, match="not on PATH"):
        await registry.register_command(["definitely-not-a-command-xyz"], name="x")
    assert registry.list_latest() == []  # nothing half-registered


async def test_snapshot_refs_are_content_addresses_that_survive_a_move(
    bundle_dir: Path, tmp_path: Path
):
    """A snapshot reference names content, not where the store lies: a registry reopened on a
    moved data dir resolves the same references (and the absolute blob paths older versions
    wrote, by their digest)."""
    import shutil

    data = tmp_path / "t1"
    store = ObjectStore(str(data / "objects"), data / "cache")
    reg = Registry(f"sqlite:///{data / 'reg.sqlite'}", store, data / "modules")
    rec = await reg.register(bundle_dir)
    ref = rec.seed_snapshot_uri
    assert ref is not None and ref.startswith("sha256:") and str(data) not in ref
    legacy = store.blob_url(ref.removeprefix("sha256:"))
    reg.close()

    moved = tmp_path / "elsewhere" / "t2"
    shutil.copytree(data, moved)
    shutil.rmtree(data)
    store2 = ObjectStore(str(moved / "objects"), moved / "cache")
    reg2 = Registry(f"sqlite:///{moved / 'reg.sqlite'}", store2, moved / "modules")
    try:
        path, sha = reg2.snapshot_file(ref)
        assert path.is_relative_to(moved) and sha == ref.removeprefix("sha256:")
        assert reg2.snapshot_file(legacy)[1] == sha
        assert reg2.put_snapshot(rec.mcp_id, bundle_dir / "seed.sqlite").uri == ref
        with pytest.raises(NotFoundError):
            reg2.snapshot_file("sha256:" + "0" * 64)
    finally:
        reg2.close()


async def test_a_bundle_version_is_keyed_by_content_not_manifest_bytes(
    registry: Registry, bundle_dir: Path
):
    """Re-synthesizing the same environment writes a manifest with a new `created_at` (and a
    spec loaded from another path records the same file name): the same version."""
    from datetime import UTC, datetime

    from weft_core.models import EnvBundleManifest

    path = bundle_dir / "manifest.json"
    manifest = EnvBundleManifest.model_validate_json(path.read_text()).sealed()
    manifest.save(path)
    v1 = await registry.register(bundle_dir)
    manifest.model_copy(update={"created_at": datetime(2030, 1, 1, tzinfo=UTC)}).save(path)
    assert (await registry.register(bundle_dir)).version == v1.version == 1
    manifest.model_copy(update={"description": "other"}).save(path)
    assert (await registry.register(bundle_dir)).version == 2


async def test_out_of_range_versions_are_not_found(registry: Registry, bundle_dir: Path):
    await registry.register(bundle_dir)
    for version in (0, -1, 2**31, 10**30):  # PostgreSQL's integer column overflows past 2**31-1
        with pytest.raises(NotFoundError, match="not registered"):
            registry.get("notes_crm", version)


async def test_one_content_registered_at_once_is_probed_once(
    registry: Registry, bundle_dir: Path, monkeypatch: pytest.MonkeyPatch
):
    """Callers registering the same bundle at once (a composer's first wave of replays) share
    one sandboxed probe and get one version."""
    import asyncio

    from weft_megamcp.registry import _registry

    probes: list[str] = []
    real = _registry.run_probe

    async def counting(*args: Any, **kwargs: Any) -> dict[str, Any]:
        probes.append(str(args[2]))
        return await real(*args, **kwargs)

    # Every probe, forked from the zygote or run alone, passes one of these two.
    monkeypatch.setattr(_registry, "run_probe", counting)
    assert registry.probes is not None
    forked = registry.probes.probe

    async def counting_forked(*args: Any, **kwargs: Any) -> dict[str, Any] | None:
        probes.append(str(args[2]))
        return await forked(*args, **kwargs)

    monkeypatch.setattr(registry.probes, "probe", counting_forked)
    monkeypatch.setattr(_registry, "_PROBED", {})  # this process may have probed it already
    recs = await asyncio.gather(*(registry.register(bundle_dir) for _ in range(4)))
    assert probes == ["notes_crm"]
    assert {(r.mcp_id, r.version) for r in recs} == {("notes_crm", 1)}
    assert [r.version for r in registry.versions("notes_crm")] == [1]
    assert not registry._registering  # nothing left behind once the callers are done


@pytest.mark.slow
async def test_two_hosts_registering_at_once_agree(
    postgres_url: str, bundle_dir: Path, tmp_path: Path
):
    """Two registries (two hosts) on one PostgreSQL database register the same content and a
    changed copy concurrently: one version per content, numbered without gaps or clashes."""
    import asyncio
    import shutil

    store = ObjectStore(str(tmp_path / "objects"), tmp_path / "cache")
    a = Registry(postgres_url, store, tmp_path / "modules-a")
    b = Registry(postgres_url, store, tmp_path / "modules-b")
    changed = tmp_path / "changed"
    shutil.copytree(bundle_dir, changed)
    server = changed / "server.py"
    server.write_text(server.read_text() + "\n# changed\n")
    try:
        recs = await asyncio.gather(
            a.register(bundle_dir), b.register(bundle_dir), a.register(changed)
        )
        by_hash = {r.source_hash: r.version for r in recs}
        assert len(by_hash) == 2 and sorted(by_hash.values()) == [1, 2]
        assert [r.version for r in b.versions("notes_crm")] == [1, 2]
    finally:
        a.close()
        b.close()
