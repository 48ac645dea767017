"""The `repo` suite on the real servers: filesystem (npm) and git (PyPI) run side by side in one
MegaMCP session over one workspace, so what the filesystem server writes, git stages, commits,
logs and shows; the workflow teacher records that commit work."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from weft_toolspace import servers
from weft_toolspace.export import initial_workspace
from weft_toolspace.teacher import teach

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture(scope="module")
def repo_home() -> Path:
    from weft_toolspace.settings import ToolSpaceSettings

    home = ToolSpaceSettings().server_home
    _ok, failed = servers.install_all(["repo", "memory"], home)
    if failed:
        pytest.skip("real MCP servers not installable: " + "; ".join(failed.values())[:300])
    return home


def test_the_suite_spec_is_its_members() -> None:
    repo = servers.server("repo")
    assert repo.members == ("filesystem", "git")
    assert repo.args.count(servers.WS) == 2  # the filesystem root and git's repository
    assert repo.env == servers.SERVERS["git"].env and repo.init == servers.SERVERS["git"].init
    assert "repo" in servers.SPECS and "repo" not in servers.SERVERS


def test_a_suite_is_installed_only_when_every_member_is(tmp_path: Path) -> None:
    assert servers.installed("repo", tmp_path) is None
    (tmp_path / "git" / "venv" / "bin").mkdir(parents=True)
    (tmp_path / "git" / "venv" / "bin" / "mcp-server-git").touch()
    assert servers.installed("repo", tmp_path) is None  # filesystem still missing


async def test_git_commits_what_the_filesystem_server_wrote(
    megamcp: Any, repo_home: Path, tmp_path: Path
) -> None:
    ids = await servers.register(megamcp, ["repo"], repo_home)
    g = await megamcp.create_group([ids["repo"]])

    async def call(tool: str, **args: Any) -> str:
        if tool.startswith("git_"):
            args = {"repo_path": ".", **args}
        res = await megamcp.call_tool(g, "repo", tool, args)
        assert not res.is_error, (tool, res.text)
        return str(res.text)

    await call("write_file", path="parser.md", content="parser: draft")
    assert "parser.md" in await call("git_status")
    assert "staged successfully" in await call("git_add", files=["parser.md"])
    assert "+parser: draft" in await call("git_diff_staged")
    committed = await call("git_commit", message="parser: draft notes")
    sha = committed.rsplit(" ", 1)[-1]
    assert sha in await call("git_log") and "parser: draft notes" in await call("git_log")
    assert "+parser: draft" in await call("git_show", revision=sha)
    await call("edit_file", path="parser.md", edits=[{"oldText": "draft", "newText": "shipped"}])
    assert "+parser: shipped" in await call("git_diff_unstaged")
    # Fixed dates: the same content and parents give the same hash in another session.
    g2 = await megamcp.create_group([ids["repo"]])
    for tool, args in [
        ("write_file", {"path": "parser.md", "content": "parser: draft"}),
        ("git_add", {"repo_path": ".", "files": ["parser.md"]}),
        ("git_commit", {"repo_path": ".", "message": "parser: draft notes"}),
    ]:
        last = await megamcp.call_tool(g2, "repo", tool, args)
    assert last.text.endswith(sha)
    # s_0 of the suite's workspace is git's: a repository with one commit of a README.
    ws = initial_workspace("repo", tmp_path / "s0")
    assert ws is not None and ws.exists()


async def test_the_teacher_commits_its_notes_on_the_suite(megamcp: Any, repo_home: Path) -> None:
    ids = await servers.register(megamcp, ["repo", "memory"], repo_home)
    records = [await megamcp.mcp(i) for i in ids.values()]
    traces = await teach(megamcp, records, episodes=2, steps=24, seed=3, servers_per_episode=2)
    calls = [c for t in traces for c in t.calls]
    done = {c.tool for c in calls if c.ok}
    assert {"write_file", "git_add", "git_commit"} <= done, sorted(done)
    assert sum(not c.ok for c in calls) <= 4, [(c.tool, c.error) for c in calls if not c.ok]
