"""File tools whose documented result is one string answer in text, as their description says
(filesem.text_result + the bundle runtime fsrt); hostile definitions keep the plain routes."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from weft_core.models import MCPSpec, ToolSpec
from weft_envsynth.analyze import classify_operation
from weft_envsynth.filesem import media_result, text_result

S = {"type": "string"}
TEXT = {"type": "object", "properties": {"text": S}, "required": ["text"]}
RO = {"readOnlyHint": True}


def _tool(
    name: str, desc: str, props: dict[str, Any], out: Any = TEXT, ann: Any = None
) -> ToolSpec:
    return ToolSpec(
        name=name,
        description=desc,
        input_schema={"type": "object", "properties": props, "required": list(props)[:1]},
        output_schema=out,
        annotations=ann,
    )


PATHS = {"type": "array", "items": S}
BLOCK = {
    "anyOf": [
        {
            "type": "object",
            "properties": {"type": {"enum": ["image"]}, "bytes": S, "mimeType": S},
        },
        {
            "type": "object",
            "properties": {
                "type": {"const": "resource"},
                "resource": {"type": "object", "properties": {"uri": S, "mimeType": S, "blob": S}},
            },
        },
    ]
}
MEDIA_OUT = {"type": "object", "properties": {"blocks": {"type": "array", "items": BLOCK}}}
# A file server written for this test: its descriptions say how its texts read.
FILES = MCPSpec(
    name="files",
    tools=[
        _tool("read_file", "Read the contents of a file.", {"path": S}, ann=RO),
        _tool(
            "read_many_files",
            "Read several files; each file's content comes with its path. A failed read does not "
            "stop the others.",
            {"paths": PATHS},
            ann=RO,
        ),
        _tool(
            "list_folder",
            "List the entries of a folder; folders are marked [FOLDER] and files [FILE].",
            {"path": S},
            ann=RO,
        ),
        _tool(
            "folder_tree",
            "A recursive tree of a folder as JSON; each entry has 'label', 'kind' and 'items'. "
            "Formatted with 4-space indentation.",
            {"path": S, "excludePatterns": PATHS},
            ann=RO,
        ),
        _tool("find_files", "Search for files matching a glob pattern.", {"path": S, "pattern": S}),
        _tool(
            "get_file_metadata",
            "Returns metadata about a file or folder: its size and permissions.",
            {"path": S},
            ann=RO,
        ),
        _tool(
            "list_allowed_folders",
            "Lists the directories this server is allowed to access.",
            {},
            ann=RO,
        ),
        _tool("write_file", "Write content to a file.", {"path": S, "content": S}),
        _tool("make_directory", "Create a new directory.", {"path": S}),
        _tool(
            "read_media",
            "Read a file as a base64-encoded block with its MIME type.",
            {"path": S},
            MEDIA_OUT,
            RO,
        ),
    ],
)


def test_text_shapes_are_read_from_the_description() -> None:
    ops = {
        t.name: text_result(t, classify_operation(t)[0])
        for t in FILES.tools
        if t.name != "read_media"
    }
    got = {n: (r.op if r else None) for n, r in ops.items()}
    assert got == {
        "read_file": "read",
        "read_many_files": "read_many",
        "list_folder": "list",
        "folder_tree": "tree",
        "find_files": "search",
        "get_file_metadata": "info",
        "list_allowed_folders": "roots",
        "write_file": "write",
        "make_directory": "mkdir",
    }
    lst, tree, info = ops["list_folder"], ops["folder_tree"], ops["get_file_metadata"]
    assert lst is not None and lst.markers == {"dir": "[FOLDER]", "file": "[FILE]"}
    assert tree is not None and tree.tree_keys == ["label", "kind", "items"] and tree.indent == 4
    assert info is not None and info.info_keys == ["size", "permissions"]
    assert ops["list_allowed_folders"].message == "Allowed folders:"  # type: ignore[union-attr]
    assert ops["make_directory"].message == "Successfully made directory"  # type: ignore[union-attr]
    assert ops["write_file"].field == "text"  # type: ignore[union-attr]


def test_media_block_from_the_output_schema() -> None:
    media = media_result(FILES.tool("read_media"), "file_read")
    assert media is not None and media.field == "blocks" and media.data_field == "bytes"
    assert media.kinds == {"image": "image"} and media.resource == "resource"
    # Hostile: no base64 said, or an output that is no single array of blocks.
    plain = FILES.tool("read_media").model_copy(update={"description": "Read a file"})
    assert media_result(plain, "file_read") is None
    two = FILES.tool("read_media").model_copy(
        update={"output_schema": {"properties": {"a": S, "b": S}}}
    )
    assert media_result(two, "file_read") is None
    assert media_result(FILES.tool("read_file"), "file_read") is None


def test_hostile_definitions_keep_the_plain_route() -> None:
    listing = FILES.tool("list_folder")
    # No documented output, two documented fields, or one that is not a string: no text.
    for out in (None, {"properties": {"a": S, "b": S}}, {"properties": {"n": {"type": "integer"}}}):
        assert text_result(listing.model_copy(update={"output_schema": out}), "file_list") is None
    # A listing whose description names no markers lists plain names.
    plain = _tool("list_folder", "List a folder. [note] lower-case brackets.", {"path": S})
    assert text_result(plain, "file_list").markers == {}  # type: ignore[union-attr]
    # A path argument means it is no list of the server's roots, whatever it says.
    rooted = _tool(
        "list_allowed_folders", "Lists the directories it is allowed to access.", {"path": S}
    )
    assert text_result(rooted, "file_list").op == "list"  # type: ignore[union-attr]
    # An array of paths makes a reading tool a file tool; not a deleting one.
    assert classify_operation(FILES.tool("read_many_files"))[0].startswith("file_")
    assert not classify_operation(_tool("delete_records", "Delete", {"paths": PATHS}))[
        0
    ].startswith("file_")


@pytest.fixture(scope="module")
def files_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from weft_envsynth import synthesize_spec

    res = synthesize_spec(FILES, tmp_path_factory.mktemp("files"))
    assert res.bundle is not None and res.status == "certified", res.uncertified
    return Path(res.bundle)


def _run(bundle: Path, tmp: Path, steps: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    from fastmcp import Client

    from weft_core.binding import SessionBinding, bind_session, release_session
    from weft_envsynth.loader import import_bundle, unload_bundle

    db, ws = tmp / "state.sqlite", tmp / "ws"
    (ws / "docs").mkdir(parents=True)
    (ws / "docs" / "a.txt").write_text("alpha\n")
    shutil.copyfile(bundle / "seed.sqlite", db)
    mod = import_bundle(bundle)
    out: list[Any] = []

    async def go() -> None:
        with bind_session(SessionBinding(session_id=f"f-{tmp.name}", db_path=db, workspace=ws)):
            async with Client(mod.create_server()) as c:
                for name, args in steps:
                    r = await c.call_tool(name, args, raise_on_error=False)
                    text = " ".join(getattr(x, "text", "") for x in r.content or [])
                    data = r.structured_content or {}
                    out.append(("error", text) if r.is_error else data.get("text", data))

    try:
        asyncio.run(go())
    finally:
        release_session(f"f-{tmp.name}")
        unload_bundle(mod)
    return out


def test_texts_answer_what_the_workspace_holds(files_bundle: Path, tmp_path: Path) -> None:
    got = _run(
        files_bundle,
        tmp_path,
        [
            ("make_directory", {"path": "/docs/sub"}),
            ("write_file", {"path": "/docs/b.txt", "content": "beta"}),
            ("list_folder", {"path": "/docs"}),
            ("folder_tree", {"path": "/", "excludePatterns": ["b.txt"]}),
            ("read_many_files", {"paths": ["/docs/a.txt", "/docs/none.txt", "/docs"]}),
            ("get_file_metadata", {"path": "/docs"}),  # a folder has metadata too
            ("find_files", {"path": "/", "pattern": "**/*.txt"}),
            ("find_files", {"path": "/", "pattern": "*.csv"}),
            ("list_allowed_folders", {}),
            ("read_file", {"path": "/docs"}),  # a folder is no file: refused
            ("read_media", {"path": "/docs/a.txt"}),
        ],
    )
    mkdir, write, listing, tree, many, info, found, none, roots, refused, media = got
    assert mkdir == "Successfully made directory /docs/sub"
    assert write == "Successfully wrote to /docs/b.txt"
    assert listing.splitlines() == ["[FILE] a.txt", "[FILE] b.txt", "[FOLDER] sub"]
    docs = json.loads(tree)[0]
    assert docs["label"] == "docs" and docs["kind"] == "directory"
    assert [e["label"] for e in docs["items"]] == ["a.txt", "sub"]  # b.txt excluded
    assert tree.startswith("[\n    {")  # the described 4-space indentation
    parts = many.split("\n---\n")
    assert parts[0].startswith("/docs/a.txt:\nalpha\n")
    assert "ENOENT" in parts[1] and "/docs/none.txt" in parts[1] and "EISDIR" in parts[2]
    assert info.splitlines()[0].startswith("size: ") and "permissions: " in info
    assert found.splitlines() == ["/docs/a.txt", "/docs/b.txt"]
    assert none == "No matches found"
    assert roots.splitlines()[0] == "Allowed folders:"
    assert refused[0] == "error" and "EISDIR" in refused[1]
    block = media["blocks"][0]  # text/plain: no image block documented for it, so a resource
    assert block["type"] == "resource" and block["resource"]["mimeType"] == "text/plain"
    assert block["resource"]["uri"].startswith("file://")
    assert block["resource"]["uri"].endswith("/docs/a.txt")
    assert block["resource"]["blob"] == "YWxwaGEK"  # base64 of "alpha\n"
