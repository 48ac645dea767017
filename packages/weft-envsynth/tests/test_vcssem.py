"""Version-control tool sets (vcssem): verbs read from whole definitions, and a synthesized bundle
whose working tree, index, commits and branches behave like a repository's."""

from __future__ import annotations

import asyncio
import hashlib
import shutil
import sqlite3
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from weft_core.models import MCPSpec, ToolSpec
from weft_envsynth.analyze import analyze_programmatic
from weft_envsynth.vcssem import vcs_semantics, vcs_tool_set

S = {"type": "string"}
REPO = {"repo_path": {"title": "Repo Path", "type": "string"}}
RO = {"readOnlyHint": True}
RW = {"readOnlyHint": False}


def _tool(
    name: str, desc: str, props: dict[str, Any], required: list[str], ann: Any = None
) -> ToolSpec:
    return ToolSpec(
        name=name,
        description=desc,
        input_schema={"type": "object", "properties": {**REPO, **props}, "required": required},
        annotations=ann,
    )


# The shape of a version-control MCP's tools/list (as mcp-server-git answers it).
VCS = MCPSpec(
    name="vcs",
    tools=[
        _tool("repo_status", "Shows the working tree status", {}, ["repo_path"], RO),
        _tool(
            "diff_unstaged",
            "Shows changes in the working directory that are not yet staged",
            {"context_lines": {"type": "integer", "default": 3}},
            ["repo_path"],
            RO,
        ),
        _tool("diff_staged", "Shows changes that are staged for commit", {}, ["repo_path"], RO),
        _tool(
            "diff",
            "Shows differences between branches or commits",
            {"target": S},
            ["repo_path", "target"],
            RO,
        ),
        _tool(
            "commit",
            "Records changes to the repository",
            {"message": S},
            ["repo_path", "message"],
            RW,
        ),
        _tool(
            "add",
            "Adds file contents to the staging area",
            {"files": {"type": "array", "items": S, "minItems": 1}},
            ["repo_path", "files"],
            RW,
        ),
        _tool("reset", "Unstages all staged changes", {}, ["repo_path"], RW),
        _tool(
            "log",
            "Shows the commit logs",
            {"max_count": {"type": "integer", "default": 10}, "start_timestamp": S},
            ["repo_path"],
            RO,
        ),
        _tool(
            "create_branch",
            "Creates a new branch from an optional base branch",
            {"branch_name": S, "base_branch": S},
            ["repo_path", "branch_name"],
            RW,
        ),
        _tool(
            "checkout", "Switches branches", {"branch_name": S}, ["repo_path", "branch_name"], RW
        ),
        _tool(
            "show",
            "Shows the contents of a commit, or of a file given as <revision>:<path>",
            {"revision": S},
            ["repo_path", "revision"],
            RO,
        ),
        _tool(
            "branch",
            "List branches",
            {
                "branch_type": {
                    "type": "string",
                    "description": "Whether to list local branches ('local'), remote branches "
                    "('remote') or all branches ('all').",
                },
                "contains": {"type": "string", "description": "The commit sha to contain"},
            },
            ["repo_path", "branch_type"],
            RO,
        ),
    ],
)


def test_verbs_and_roles_come_from_whole_definitions() -> None:
    got = {n: s.verb for n, s in vcs_tool_set(VCS).items()}
    assert got == {
        "repo_status": "status", "diff_unstaged": "diff_unstaged", "diff_staged": "diff_staged",
        "diff": "diff", "commit": "commit", "add": "add", "reset": "reset", "log": "log",
        "create_branch": "create_branch", "checkout": "checkout", "show": "show",
        "branch": "branches",
    }  # fmt: skip
    sems = vcs_tool_set(VCS)
    assert sems["log"].roles == {
        "repo_path": "repo",
        "max_count": "limit",
        "start_timestamp": "since",
    }
    assert sems["create_branch"].roles["base_branch"] == "base"
    assert sems["branch"].choices == {"branch_type": ["local", "remote", "all"]}
    # The analysis serves them from the repository, not as CRUD rows or file verbs.
    ops = {e.tool: e.operation for e in analyze_programmatic(VCS).tools}
    assert ops["add"] == "compute" and ops["commit"] == "compute"


def test_hostile_and_non_vcs_definitions() -> None:
    # An order system's 'commit_order' and 'add_item' have no repository: not version control.
    shop = MCPSpec(
        name="shop",
        tools=[
            ToolSpec(
                name="commit_order",
                description="Commit the order so it ships",
                input_schema={"type": "object", "properties": {"order_id": S, "message": S}},
            ),
            ToolSpec(
                name="order_status",
                description="Shows the status of an order",
                input_schema={"type": "object", "properties": {"order_id": S}},
            ),
        ],
    )
    assert vcs_tool_set(shop) == {}
    # A code-hosting API names a hosted repository (owner + repo), not a working tree.
    hosted = MCPSpec(
        name="hosting",
        tools=[
            ToolSpec(
                name=n,
                description=d,
                input_schema={
                    "type": "object",
                    "properties": {
                        "owner": S,
                        "repo": {"type": "string", "description": "Repository name"},
                        **p,
                    },
                    "required": ["owner", "repo", *p],
                },
            )
            for n, d, p in (
                (
                    "create_commit",
                    "Create a commit on a branch",
                    {"message": S, "files": {"type": "array"}},
                ),
                ("get_status", "Get the combined status of a commit", {"ref": S}),
                ("list_commits", "Get the commit history of a branch", {"sha": S}),
            )
        ],
    )
    assert vcs_tool_set(hosted) == {}
    # A 'commit' the server annotates read-only changes nothing: not a write.
    ro_commit = _tool("commit", "Records changes", {"message": S}, ["repo_path", "message"], RO)
    assert vcs_semantics(ro_commit) is None
    # A commit with no message argument is not a commit; without status or log no tool set.
    assert vcs_semantics(_tool("commit", "Records changes", {}, ["repo_path"], RW)) is None
    assert vcs_tool_set(MCPSpec(name="x", tools=[VCS.tools[4], VCS.tools[5]])) == {}
    # A reset to a commit (mode, target) is no unstaging; a required argument no role takes
    # (a stash action) leaves the tool out rather than ignore what the caller says.
    hard = _tool(
        "reset", "Reset repository to specified commit", {"mode": S, "to": S}, ["repo_path"]
    )
    assert vcs_semantics(hard) is None
    stash = _tool("status", "Stash status", {"action": S}, ["repo_path", "action"], RO)
    assert vcs_semantics(stash) is None
    # Fifty parameters: the roles are still the repository, the files and nothing else.
    props = {f"opt{i}": {"type": "boolean"} for i in range(48)} | {
        "files": {"type": "array", "items": S}
    }
    many = _tool("add", "Adds file contents to the staging area", props, ["repo_path", "files"])
    sem = vcs_semantics(many)
    assert sem is not None and sem.verb == "add"
    assert set(sem.roles.values()) == {"repo", "files"}
    # Contradictory choices: an enum and quoted values in the description; the enum decides.
    enum = _tool(
        "branch",
        "List branches",
        {"branch_type": {"type": "string", "enum": ["local"], "description": "'remote' or 'all'"}},
        ["repo_path", "branch_type"],
        RO,
    )
    assert vcs_semantics(enum).choices == {"branch_type": ["local"]}  # type: ignore[union-attr]


@pytest.fixture(scope="module")
def vcs_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from weft_envsynth import synthesize_spec

    res = synthesize_spec(VCS, tmp_path_factory.mktemp("vcs"))
    assert res.bundle is not None and res.status == "certified", res.uncertified
    return Path(res.bundle)


Step = tuple[str, dict[str, Any]] | Callable[[Path], None]


def _run(
    bundle: Path, tmp: Path, steps: list[Step], document: dict[str, Any] | None = None
) -> tuple[list[tuple[bool, Any]], Path]:
    from fastmcp import Client

    from weft_core.binding import SessionBinding, bind_session, release_session
    from weft_envsynth.loader import import_bundle, unload_bundle

    db, ws = tmp / "state.sqlite", tmp / "ws"
    ws.mkdir(exist_ok=True)
    (ws / "README.md").write_text("# repo\n")
    shutil.copyfile(bundle / "seed.sqlite", db)
    if document is not None:
        from weft_envsynth import import_state

        report = import_state(bundle, document, db_path=db, workspace=ws)
        assert sorted(report.not_imported) == sorted(document.get("expect_not_imported", []))
    mod = import_bundle(bundle)
    out: list[tuple[bool, Any]] = []

    async def go() -> None:
        with bind_session(SessionBinding(session_id=f"v-{tmp.name}", db_path=db, workspace=ws)):
            async with Client(mod.create_server()) as c:
                for step in steps:
                    if callable(step):
                        step(ws)
                        continue
                    name, args = step
                    r = await c.call_tool(
                        name, {"repo_path": str(ws), **args}, raise_on_error=False
                    )
                    out.append((bool(r.is_error), r.structured_content))

    try:
        asyncio.run(go())
    finally:
        release_session(f"v-{tmp.name}")
        unload_bundle(mod)
    return out, db


def test_working_tree_index_and_history(vcs_bundle: Path, tmp_path: Path) -> None:
    def edit(ws: Path) -> None:
        (ws / "notes.txt").write_text("first\n")
        (ws / "README.md").write_text("# repo\nmore\n")

    got, db = _run(
        vcs_bundle,
        tmp_path,
        [
            ("repo_status", {}),
            ("commit", {"message": "nothing"}),  # nothing staged: refused
            edit,
            ("repo_status", {}),
            ("add", {"files": ["notes.txt"]}),
            ("diff_staged", {}),
            ("diff_unstaged", {}),
            ("add", {"files": ["missing.txt"]}),  # refused
            ("add", {"files": ["/etc/passwd"]}),  # outside: refused
            ("commit", {"message": "add notes"}),
            ("log", {"max_count": 5}),
            ("create_branch", {"branch_name": "feature"}),
            ("create_branch", {"branch_name": "feature"}),  # exists: refused
            ("checkout", {"branch_name": "feature"}),
            ("repo_status", {}),
            ("show", {"revision": "HEAD:notes.txt"}),
            ("show", {"revision": "nope"}),  # unknown: refused
            ("branch", {"branch_type": "local"}),
            ("branch", {"branch_type": "everything"}),  # not one of the documented values
            ("reset", {}),
        ],
    )
    errors = [e for e, _ in got]
    assert errors == [
        False, True, False, False, False, False, True, True, False, False, False, True, False,
        False, False, True, False, True, False,
    ]  # fmt: skip
    assert got[0][1]["status"].endswith("nothing to commit, working tree clean")
    status = got[2][1]
    assert status["untracked"] == ["notes.txt"]
    assert status["unstaged"] == [{"change": "modified", "path": "README.md"}]
    assert "+first" in got[4][1]["diff"] and "+more" in got[5][1]["diff"]
    # Blob ids in the common object format: the same id git gives the same content.
    blob = hashlib.sha1(b"blob 6\0first\n").hexdigest()
    if shutil.which("git"):
        out = subprocess.run(
            ["git", "hash-object", "--stdin"], input=b"first\n", capture_output=True, check=True
        )
        assert out.stdout.decode().strip() == blob
    assert f"new file mode 100644\nindex 0000000..{blob[:7]}\n" in got[4][1]["diff"]
    log = got[9][1]["commits"]
    assert [c["message"] for c in log] == ["add notes", "Initial commit"]
    assert got[13][1]["status"].startswith("On branch feature")
    assert got[14][1]["content"] == "first\n"
    assert got[16][1]["names"] == ["feature", "master"] and got[16][1]["current"] == "feature"
    # The repository is state in the session DB: a snapshot of the DB carries it.
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("SELECT ref FROM weft_vcs_head").fetchone() == ("feature",)
        assert conn.execute("SELECT COUNT(*) FROM weft_vcs_commit").fetchone() == (2,)
    finally:
        conn.close()


def test_checkout_moves_the_working_tree(vcs_bundle: Path, tmp_path: Path) -> None:
    def change(ws: Path) -> None:
        (ws / "README.md").write_text("# repo\non feature\n")

    def dirty(ws: Path) -> None:
        (ws / "README.md").write_text("# repo\nuncommitted\n")

    got, _ = _run(
        vcs_bundle,
        tmp_path,
        [
            ("create_branch", {"branch_name": "feature"}),
            ("checkout", {"branch_name": "feature"}),
            change,
            ("add", {"files": ["."]}),
            ("commit", {"message": "feature work"}),
            ("checkout", {"branch_name": "master"}),
            lambda ws: (ws / "seen.txt").write_text((ws / "README.md").read_text()),
            ("diff", {"target": "feature"}),
            dirty,
            ("checkout", {"branch_name": "feature"}),  # would overwrite local changes: refused
            ("branch", {"branch_type": "all", "contains": "feature"}),
        ],
    )
    assert [e for e, _ in got] == [False, False, False, False, False, False, True, False]
    assert got[5][1]["diff"].count("on feature") == 1
    assert got[7][1]["names"] == ["feature"]
    ws = tmp_path / "ws"
    assert (ws / "seen.txt").read_text() == "# repo\n"  # master's README after the checkout


def test_imported_state_says_how_its_files_are_checked_in(vcs_bundle: Path, tmp_path: Path) -> None:
    doc: dict[str, Any] = {
        "files": {"src/app.py": "print('hi')\n"},
        "repository": {
            "branch": "main", "message": "init", "author": "Ann", "email": "ann@example.org",
            "date": "2024-01-15T10:00:00+00:00", "signed": "yes",
        },
    }  # fmt: skip
    doc["expect_not_imported"] = [
        "expect_not_imported: no entity or workspace tree matches this key",
        "repository.signed: not one of ['author', 'branch', 'date', 'email', 'message']",
    ]
    got, _ = _run(
        vcs_bundle,
        tmp_path,
        [
            lambda ws: (ws / "late.txt").write_text("edited after the import\n"),
            ("repo_status", {}),
            ("log", {}),
            ("log", {"start_timestamp": "2025-01-01"}),
            ("log", {"start_timestamp": "2 weeks ago"}),
            ("show", {"revision": "HEAD:src"}),
            ("show", {"revision": "HEAD:src/none.py"}),
        ],
        doc,
    )
    assert [e for e, _ in got] == [False, False, False, False, False, True]
    # The files checked in are those imported; one written before the first call is new.
    assert got[0][1]["status"].startswith("On branch main\nUntracked files:\n\tlate.txt")
    assert got[0][1]["untracked"] == ["late.txt"] and got[0][1]["unstaged"] == []
    (first,) = got[1][1]["commits"]
    assert (first["message"], first["author"], first["date"]) == (
        "init", "Ann", "2024-01-15 10:00:00+00:00",
    )  # fmt: skip
    assert got[2][1]["commits"] == [] and got[3][1]["commits"] == []
    assert got[4][1]["entries"] == "app.py"
