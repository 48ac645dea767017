"""File verbs from whole definitions, and the shell semantics a synthesized bundle gives them."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from weft_core.models import MCPSpec, ToolSpec
from weft_envsynth.analyze import file_tool_set
from weft_envsynth.filesem import file_semantics

BLURB = "Part of a small file system for a team workspace. Tool description: "


def tool(
    name: str, desc: str, props: dict[str, Any], response: list[str] | None = None
) -> ToolSpec:
    return ToolSpec(
        name=name,
        description=BLURB + desc,
        input_schema={"type": "object", "properties": props, "required": list(props)[:1]},
        output_schema=(
            {"type": "object", "properties": {f: {"type": "string"} for f in response}}
            if response
            else None
        ),
    )


S = {"type": "string"}
SHELL = MCPSpec(
    name="tiny shell",
    tools=[
        tool(
            "cd",
            "Change the current working directory to the specified folder.",
            {"folder": S},
            ["current_working_directory"],
        ),
        tool(
            "pwd", "Return the current working directory path.", {}, ["current_working_directory"]
        ),
        tool(
            "ls",
            "List the contents of the current directory.",
            {"a": {"type": "boolean"}},
            ["current_directory_content"],
        ),
        tool(
            "cat",
            "Display the contents of a file from the current directory.",
            {"file_name": S},
            ["file_content"],
        ),
        tool(
            "grep",
            "Search for lines in a file at current directory that contain the pattern.",
            {"file_name": S, "pattern": S},
            ["matching_lines"],
        ),
        tool(
            "mv",
            "Move a file or directory from one location to another.",
            {"source": S, "destination": S},
            ["result"],
        ),
        tool("mkdir", "Create a new directory in the current directory.", {"dir_name": S}),
        tool("rmdir", "Remove a directory at current directory.", {"dir_name": S}, ["result"]),
        tool(
            "wc",
            "Count the number of lines, words, and characters in a file.",
            {"file_name": S, "mode": {"type": "string", "enum": ["l", "w", "c"]}},
            ["count", "type"],
        ),
    ],
)


def test_verbs_come_from_descriptions_and_parameters() -> None:
    sem = file_tool_set(SHELL)
    assert {k: v.verb for k, v in sem.items()} == {
        "cd": "navigate",
        "pwd": "where",
        "ls": "list",
        "cat": "read",
        "grep": "grep",
        "mv": "move",
        "mkdir": "mkdir",
        "rmdir": "rmdir",
        "wc": "count",
    }
    assert sem["mv"].roles == {"source": "path", "destination": "target"}
    assert sem["grep"].roles == {"file_name": "path", "pattern": "pattern"}
    assert sem["wc"].roles["mode"] == "mode"
    assert sem["wc"].response_fields == ["count", "type"]


def test_a_verb_named_tool_without_file_evidence_is_not_a_file_tool() -> None:
    # "move" of a task board and a "copy" of a record: no file words anywhere in the tool set.
    spec = MCPSpec(
        name="board",
        tools=[
            ToolSpec(
                name="move_card",
                description="Move a card to another column.",
                input_schema={"type": "object", "properties": {"card_id": S, "column": S}},
            ),
            ToolSpec(
                name="copy_card",
                description="Duplicate a card.",
                input_schema={"type": "object", "properties": {"card_id": S}},
            ),
        ],
    )
    assert file_tool_set(spec) == {}


def test_contradictory_definition_gets_no_verb() -> None:
    # Named like a navigation command, described as a deletion: the evidence disagrees.
    t = tool("cd", "Remove a file from the workspace.", {"file_name": S})
    assert file_semantics(t) is None


def test_move_without_a_destination_argument_gets_no_verb() -> None:
    t = tool("mv", "Move a file or directory from one location to another.", {"source": S})
    assert file_semantics(t) is None


def test_fifty_parameters_do_not_break_role_assignment() -> None:
    props = {f"p{i}": S for i in range(48)} | {
        "lines": {"type": "integer"},
        "a": {"type": "boolean"},
    }
    t = tool("tail", "Display the last part of a file.", {"file_name": S, **props})
    sem = file_semantics(t)
    assert sem is not None and sem.verb == "tail"
    assert sem.roles["file_name"] == "path" and sem.roles["lines"] == "count"
    assert list(sem.roles.values()).count("target") == 1


@pytest.fixture(scope="module")
def shell_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from weft_envsynth import synthesize_spec

    res = synthesize_spec(SHELL, tmp_path_factory.mktemp("shell"))
    assert res.status == "certified", res.uncertified
    assert res.bundle is not None
    return Path(res.bundle)


def _run(bundle: Path, tmp: Path, state: dict[str, Any], calls: list[tuple[str, dict[str, Any]]]):
    from fastmcp import Client

    from weft_core.binding import SessionBinding, bind_session, release_session
    from weft_envsynth import import_state
    from weft_envsynth.loader import import_bundle

    db, ws = tmp / "state.sqlite", tmp / "workspace"
    shutil.copyfile(bundle / "seed.sqlite", db)
    ws.mkdir()
    report = import_state(bundle, state, db_path=db, workspace=ws)
    out: list[tuple[bool, Any]] = []

    async def go() -> None:
        with bind_session(SessionBinding(session_id=f"t-{tmp.name}", db_path=db, workspace=ws)):
            async with Client(import_bundle(bundle).create_server()) as c:
                for name, args in calls:
                    r = await c.call_tool(name, args, raise_on_error=False)
                    out.append((bool(r.is_error), r.structured_content or r.content[0].text))

    try:
        asyncio.run(go())
    finally:
        release_session(f"t-{tmp.name}")
    return report, out, ws


TREE = {
    "root": {
        "home": {
            "type": "directory",
            "contents": {
                "docs": {
                    "type": "directory",
                    "contents": {
                        "plan.txt": {"type": "file", "content": "alpha budget\nbeta\ngamma budget"}
                    },
                },
                "archive": {"type": "directory", "contents": {}},
            },
        }
    }
}


def test_shell_semantics_follow_a_current_directory(shell_bundle: Path, tmp_path: Path) -> None:
    report, out, ws = _run(
        shell_bundle,
        tmp_path,
        TREE,
        [
            ("cd", {"folder": "docs"}),
            ("pwd", {}),
            ("grep", {"file_name": "plan.txt", "pattern": "budget"}),
            ("wc", {"file_name": "plan.txt", "mode": "w"}),
            ("mv", {"source": "plan.txt", "destination": "../archive"}),
            ("cat", {"file_name": "plan.txt"}),  # moved away: refused
            ("cd", {"folder": ".."}),
            ("ls", {"a": False}),
            ("rmdir", {"dir_name": "archive"}),  # not empty: refused
            ("cd", {"folder": "nowhere"}),
            ("cat", {"file_name": "../../etc/passwd"}),
        ],
    )
    assert report.files == 1 and report.not_imported == []
    assert out[0] == (False, {"current_working_directory": "/docs"})
    assert out[1] == (False, {"current_working_directory": "/docs"})
    assert out[2] == (False, {"matching_lines": ["alpha budget", "gamma budget"]})
    # Every field of this spec is documented as a string (shapert answers the documented type).
    assert out[3] == (False, {"count": "5", "type": "words"})
    assert out[4][0] is False
    assert (ws / "archive" / "plan.txt").is_file() and not (ws / "docs" / "plan.txt").exists()
    assert out[5][0] is True and "not_found" in json.dumps(out[5][1])
    assert out[7] == (False, {"current_directory_content": ["archive", "docs"]})
    assert out[8][0] is True and "invalid_state" in json.dumps(out[8][1])
    assert out[9][0] is True and out[10][0] is True


def test_edit_tools_pair_an_old_text_with_a_new_one() -> None:
    from weft_envsynth.filesem import edit_pairs

    def t(name: str, items: Any) -> ToolSpec:
        props = {"path": {"type": "string"}, "edits": {"type": "array", "items": items}}
        return ToolSpec(
            name=name, input_schema={"type": "object", "properties": props, "required": ["path"]}
        )

    pair = {"type": "object", "properties": {"oldText": {}, "newText": {}}}
    assert edit_pairs(t("edit_file", pair)) == ("edits", "oldText", "newText")
    assert edit_pairs(t("write_file", pair)) is None  # no edit verb
    # Hostile items: not an object, no old/new pair, one field doing both.
    assert edit_pairs(t("edit_file", "oldText")) is None
    assert edit_pairs(t("edit_file", {"properties": {"text": {}, "line": {}}})) is None
    assert edit_pairs(t("edit_file", {"properties": {"old_to_new": {}}})) is None
