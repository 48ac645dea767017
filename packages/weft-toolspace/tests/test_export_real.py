"""Export with stored s_0 on the real sqlite, filesystem and git servers: the accepted task names
its initial DBs and workspaces by content, the files lie under snapshots/ with exactly those
bytes, and the acceptance replay runs from the stored state (a stored s_0 that is not the
servers' start state is caught: git's log then shows another commit)."""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path
from typing import Any

import pytest

from weft_core.models import TaskGraph
from weft_core.refs import address_digest, content_address
from weft_toolspace import servers
from weft_toolspace.export import WORKSPACE_SUFFIX, initial_workspace, store_initial_state
from weft_toolspace.settings import ToolSpaceSettings
from weft_toolspace.synthesize import candidates, replay, synthesize
from weft_toolspace.walk import chain_of_route

pytestmark = [pytest.mark.integration, pytest.mark.slow]

NAMES = ["sqlite", "filesystem", "git"]
ROUTE: list[tuple[str, str, dict[str, Any]]] = [
    ("sqlite", "create_table", {"query": "CREATE TABLE staff (id INTEGER PRIMARY KEY, name TEXT)"}),
    ("sqlite", "write_query", {"query": "INSERT INTO staff (name) VALUES ('Ada Lovelace')"}),
    ("sqlite", "read_query", {"query": "SELECT * FROM staff"}),
    ("filesystem", "write_file", {"path": "ada.md", "content": "Ada Lovelace"}),
    ("git", "git_log", {"repo_path": "."}),
    ("git", "git_create_branch", {"repo_path": ".", "branch_name": "notes"}),
]


@pytest.fixture(scope="module")
def homes() -> Path:
    home = ToolSpaceSettings().server_home
    _ok, failed = servers.install_all(NAMES, home)
    if failed:
        pytest.skip("real MCP servers not installable: " + "; ".join(failed.values())[:300])
    return home


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


async def test_exported_task_names_its_stored_s0_and_replays_from_it(
    megamcp: Any, homes: Path, tmp_path: Path
) -> None:
    await servers.register(megamcp, NAMES, homes)
    chain = await chain_of_route(megamcp, "route0", ROUTE)
    out = tmp_path / "export"
    tasks, stats = await synthesize(megamcp, [chain], export_to=out)
    assert stats.accepted == 1, stats.rejected
    saved = TaskGraph.load(out / "tasks" / "route0.json")
    saved.verify_hash()
    assert saved == tasks[0]
    assert set(saved.initial_dbs()) == set(NAMES) and all(saved.initial_dbs().values())
    # Workspaces for the servers that keep files; sqlite keeps its state in the DB only.
    assert set(saved.initial_workspaces()) == {"filesystem", "git"}
    for ref in saved.initial_snapshots.values():
        db = out / "snapshots" / f"{ref.sha256}.sqlite"
        assert _sha(db) == ref.sha256 == address_digest(ref.uri)
        if ref.workspace_uri:
            ws = out / "snapshots" / f"{address_digest(ref.workspace_uri)}{WORKSPACE_SUFFIX}"
            assert _sha(ws) == address_digest(ref.workspace_uri)
    assert any(c.kind == "row_exists" for c in saved.final_checks)


async def test_a_stored_s0_other_than_the_start_state_fails_the_replay(
    megamcp: Any, homes: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    await servers.register(megamcp, NAMES, homes)
    chain = await chain_of_route(megamcp, "route1", ROUTE)
    refs = await store_initial_state(megamcp, NAMES, tmp_path / "good")
    ok, _ = await replay(megamcp, candidates(chain), refs)
    assert ok.passed, ok
    # git's repository with another first commit message (hashes are masked when returns are
    # compared; the message is not): git_log returns something else than during the walk.
    spec = servers.SERVERS["git"]
    init = (spec.init or "").replace("initial commit", "first commit")
    monkeypatch.setitem(servers.SERVERS, "git", dataclasses.replace(spec, init=init))
    ws = initial_workspace("git", tmp_path / "bad")
    assert ws is not None
    await megamcp.put_workspace("git", ws)
    sha = ws.name.removesuffix(WORKSPACE_SUFFIX)
    bad = {**refs, "git": refs["git"].model_copy(update={"workspace_uri": content_address(sha)})}
    outcome, _ = await replay(megamcp, candidates(chain), bad)
    assert not outcome.passed and outcome.diverged_at == 4  # the git_log call
