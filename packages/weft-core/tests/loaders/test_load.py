"""Loading spec files and dicts: every format, overrides, hostile files, batches."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from weft_core.exceptions import SpecError, UserError
from weft_core.loaders import (
    LoadedSpec,
    SpecBatch,
    load_spec_dict,
    load_spec_file,
    load_spec_files,
)
from weft_core.loaders._tools import NAME_RE
from weft_core.models import MCPSpec, ToolSpec

TOUCAN = "toucan"


def write(tmp_path: Path, name: str, content: str | bytes) -> Path:
    p = tmp_path / name
    if isinstance(content, bytes):
        p.write_bytes(content)
    else:
        p.write_text(content, encoding="utf-8")
    return p


def assert_well_formed(loaded: LoadedSpec) -> None:
    spec = loaded.spec
    assert spec.content_hash == spec.compute_hash()
    assert spec.tools
    for t in spec.tools:
        assert NAME_RE.match(t.name), t.name
        assert t.description
        assert t.input_schema["type"] == "object"
        assert isinstance(t.input_schema["properties"], dict)
        assert "$ref" not in json.dumps(t.input_schema)
        for name in t.required:
            assert name in t.properties


def test_mcp_tools_list_file(specs_dir: Path) -> None:
    loaded = load_spec_file(specs_dir / "mcp_tools_list.json")
    assert_well_formed(loaded)
    assert loaded.format == "mcp_tools_list"
    assert loaded.spec.name == "mcp_tools_list"  # no serverInfo: the file name
    assert loaded.spec.domain == "general"
    assert [t.name for t in loaded.spec.tools] == [
        "create_ticket",
        "tickets_search",
        "org_chart",
        "ping",
    ]
    assert [(r.name, r.index) for r in loaded.rejected_tools] == [("export_report", 3)]
    assert "unresolvable $ref '#/$defs/Missing'" in loaded.rejected_tools[0].reason
    create = loaded.spec.tool("create_ticket")
    assert create.required == ["customer_id", "subject"]
    assert create.properties["priority"]["type"] == "string"
    assert create.properties["tags"]["items"] == {"type": "string", "minLength": 1}
    assert create.output_schema is not None
    assert create.annotations == {
        "destructiveHint": False,
        "idempotentHint": False,
        "title": "Create ticket",
    }
    assert loaded.spec.tool("tickets_search").original_name == "tickets.search"
    assert loaded.spec.tool("tickets_search").properties["min_score"]["type"] == "number"
    assert any("'body'" in w for w in loaded.warnings)
    assert any("recursive $ref" in w for w in loaded.warnings)


def test_openai_tools_file(specs_dir: Path) -> None:
    loaded = load_spec_file(specs_dir / "openai_tools.json", name="Travel desk", domain="Travel")
    assert_well_formed(loaded)
    assert loaded.format == "openai_functions"
    assert (loaded.spec.name, loaded.spec.domain) == ("Travel desk", "Travel")
    weather = loaded.spec.tool("get_weather")
    assert weather.properties["unit"] == {
        "type": ["string", "null"],
        "enum": ["celsius", "fahrenheit", None],
    }
    assert weather.input_schema["additionalProperties"] is False
    assert loaded.warnings == []


def test_bfcl_entry_file(specs_dir: Path) -> None:
    loaded = load_spec_file(specs_dir / "bfcl_entry.json")
    assert_well_formed(loaded)
    tri = loaded.spec.tool("geometry_area_triangle")
    assert tri.original_name == "geometry.area_triangle"
    assert tri.properties["base"]["type"] == "number"
    assert tri.properties["point"] == {
        "type": "array",
        "items": {"type": "number"},
        "description": "A vertex.",
    }
    assert "type" not in tri.properties["meta"]
    assert tri.required == ["base", "height"]


def test_single_openai_function_and_wrapper_dicts() -> None:
    fn = {
        "name": "add",
        "description": "Add.",
        "parameters": {"type": "object", "properties": {"a": {"type": "number"}}},
    }
    for data in (fn, {"type": "function", "function": fn}, {"functions": [fn]}):
        loaded = load_spec_dict(data, source="inline", name="calc")
        assert [t.name for t in loaded.spec.tools] == ["add"]


def test_mcp_server_info_names_the_spec() -> None:
    data = {
        "serverInfo": {"name": "Helpdesk"},
        "tools": [{"name": "t", "description": "d", "inputSchema": {"type": "object"}}],
    }
    assert load_spec_dict(data, source="x").spec.name == "Helpdesk"


def test_toucan_server_metadata(specs_dir: Path) -> None:
    loaded = load_spec_file(specs_dir / TOUCAN / "0001.exa_exa-search_labeled.json")
    assert_well_formed(loaded)
    assert loaded.format == "toucan"
    assert loaded.spec.name == "Exa Search"
    assert loaded.spec.domain == "Web Search & Research"
    assert loaded.spec.description.startswith("Fast, intelligent web search")
    assert len(loaded.spec.tools) == 8


def test_toucan_scraped_parameter_tables(specs_dir: Path) -> None:
    loaded = load_spec_file(specs_dir / TOUCAN / "cf_0003.@smithery_notion_labeled.json")
    assert_well_formed(loaded)
    update = loaded.spec.tool("update_page")
    assert update.required == ["page_id", "properties"]
    get_page = loaded.spec.tool("get_page")
    assert get_page.properties == {}  # the only row repeated the tool's own name
    assert loaded.spec.tool("update_block").original_name == "update-block"


def test_toucan_page_element_only_is_rejected(specs_dir: Path) -> None:
    path = specs_dir / TOUCAN / "cf_0021.@alexander-zuev_supabase-mcp-server_labeled.json"
    with pytest.raises(SpecError) as info:
        load_spec_file(path)
    err = info.value
    assert err.source == str(path)
    assert err.tool == "Optional Settings"
    assert "not a tool" in err.reason
    assert str(path) in str(err)


def test_toucan_falls_back_to_remote_tools() -> None:
    tool = {
        "name": "search",
        "description": "Search.",
        "input_schema": {"type": "object"},
        "annotations": {},
    }
    data = {
        "labels": {"primary_label": "Web Search & Research"},
        "metadata": {
            "server_name": "Fallback",
            "server_info_crawled": {"tools": []},
            "remote_server_response": {"tools": [tool]},
        },
    }
    loaded = load_spec_dict(data, source="mem")
    assert loaded.spec.name == "Fallback"
    assert [t.name for t in loaded.spec.tools] == ["search"]
    assert any("remote_server_response" in w for w in loaded.warnings)


def test_weft_spec_round_trip_keeps_hash_and_version(tmp_path: Path) -> None:
    spec = MCPSpec(
        name="CRM",
        domain="CRM",
        tools=[
            ToolSpec(
                name="get_customer",
                description="Get one.",
                input_schema={
                    "type": "object",
                    "properties": {"id": {"type": "string"}},
                    "required": ["id"],
                },
                original_name="get-customer",
            )
        ],
        requirements=["Emails are unique."],
        source="upstream.json",
    ).revised()
    path = spec.save(tmp_path / "spec.json")
    loaded = load_spec_file(path)
    assert loaded.format == "weft"
    assert loaded.warnings == []
    assert loaded.spec.version == 2
    assert loaded.spec.content_hash == spec.content_hash
    assert loaded.spec == spec


@pytest.mark.parametrize(
    "fixture",
    [
        "mcp_tools_list.json",
        "openai_tools.json",
        "bfcl_entry.json",
        f"{TOUCAN}/cf_0003.@smithery_notion_labeled.json",
        f"{TOUCAN}/tf_1846.@6_mcp-server-rubygems_labeled.json",
    ],
)
def test_normalization_is_idempotent(fixture: str, specs_dir: Path, tmp_path: Path) -> None:
    first = load_spec_file(specs_dir / fixture)
    again = load_spec_file(first.spec.save(tmp_path / "spec.json"))
    assert again.warnings == []
    assert again.rejected_tools == []
    assert again.spec == first.spec


def test_tampered_weft_spec_is_refused(tmp_path: Path) -> None:
    spec = MCPSpec(name="s", tools=[ToolSpec(name="t", description="d")])
    path = spec.save(tmp_path / "spec.json")
    data = json.loads(path.read_text())
    data["tools"][0]["description"] = "edited"
    path.write_text(json.dumps(data))
    with pytest.raises(SpecError, match="does not match its content_hash"):
        load_spec_file(path)


def test_newer_weft_schema_version_is_refused(tmp_path: Path) -> None:
    path = write(
        tmp_path, "spec.json", json.dumps({"schema_version": 99, "name": "s", "tools": []})
    )
    with pytest.raises(SpecError, match=r"schema_version 99 is newer .* upgrade weft-core"):
        load_spec_file(path)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("", "invalid JSON at line 1 column 1"),
        ('{"tools": [', "invalid JSON at line 1 column 12"),
        ('{\n  "tools": [],\n  oops\n}', "invalid JSON at line 3 column 3"),
        (
            '{"tools": [{"name": "t", "inputSchema": {"type": "object", "default": NaN}}]}',
            "NaN is not valid JSON",
        ),
        (b"\xff\xfe{}", "not UTF-8 text"),
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
        ('"just a string"', "unknown format (str)"),
        ("42", "unknown format (int)"),
        ('{"hello": "world"}', "unknown format (object with keys hello)"),
        ("{}", "no tools: the document is empty"),
        ("[]", "no tools: the document is empty"),
        ('{"tools": []}', "no tools: the tool list is empty"),
        ('{"tools": {"name": "t"}}', "'tools' is a dict, not a list of tools"),
        ('{"tools": [1, "two"]}', "every tool was rejected (2)"),
        (
            '{"tools": [{"name": "t", "inputSchema": {"type": "array"}}]}',
            "tool arguments must be an object",
        ),
    ],
)
def test_hostile_files_raise_spec_error_naming_the_file(
    tmp_path: Path, content: str | bytes, message: str
) -> None:
    path = write(tmp_path, "bad.json", content)
    with pytest.raises(SpecError) as info:
        load_spec_file(path)
    assert message in str(info.value)
    assert info.value.source == str(path)
    assert isinstance(info.value, UserError)


def test_single_rejected_tool_names_the_tool(tmp_path: Path) -> None:
    path = write(
        tmp_path, "one.json", '{"tools": [{"name": "only", "inputSchema": {"type": "string"}}]}'
    )
    with pytest.raises(SpecError) as info:
        load_spec_file(path)
    assert info.value.tool == "only"
    assert f"file {path}, tool 'only':" in str(info.value)


def test_unreadable_paths(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="cannot read"):
        load_spec_file(tmp_path / "missing.json")
    with pytest.raises(SpecError, match="is a directory"):
        load_spec_file(tmp_path)


def test_utf8_bom_is_accepted(tmp_path: Path) -> None:
    body = json.dumps(
        {"tools": [{"name": "t", "description": "d", "inputSchema": {"type": "object"}}]}
    )
    loaded = load_spec_file(write(tmp_path, "bom.json", b"\xef\xbb\xbf" + body.encode()))
    assert loaded.spec.tools[0].name == "t"


def test_batch_never_stops_for_a_bad_file(tmp_path: Path, specs_dir: Path) -> None:
    good = write(tmp_path, "a_good.json", (specs_dir / "openai_tools.json").read_text())
    bad = write(tmp_path, "b_bad.json", "{nope")
    empty = write(tmp_path, "c_empty.json", '{"tools": []}')
    write(tmp_path, "notes.txt", "not a spec")  # folders expand to *.json only
    batch = load_spec_files(tmp_path)
    assert [item.source for item in batch.loaded] == [str(good)]
    assert [e.source for e in batch.failed] == [str(bad), str(empty)]
    assert all(isinstance(e, SpecError) for e in batch.failed)
    assert batch.specs == [batch.loaded[0].spec]
    # a list of paths, including one that does not exist
    batch2 = load_spec_files([good, tmp_path / "gone.json"])
    assert len(batch2.loaded) == 1 and "cannot read" in batch2.failed[0].reason


def test_batch_serializes_to_json(tmp_path: Path) -> None:
    write(tmp_path, "bad.json", "{")
    dumped: dict[str, Any] = json.loads(load_spec_files([tmp_path / "bad.json"]).model_dump_json())
    assert dumped["failed"][0]["source"].endswith("bad.json")
    assert "invalid JSON" in dumped["failed"][0]["reason"]
    assert SpecBatch.model_fields.keys() == {"loaded", "failed"}


def test_loaded_spec_hash_is_stable_across_loads(specs_dir: Path) -> None:
    a = load_spec_file(specs_dir / "mcp_tools_list.json")
    b = load_spec_file(specs_dir / "mcp_tools_list.json")
    assert a.spec.content_hash == b.spec.content_hash
    assert a == b


def test_bfcl_json_lines_under_a_json_name(specs_dir: Path) -> None:
    loaded = load_spec_file(specs_dir / "bfcl_lines.json", name="BFCL simple")
    assert_well_formed(loaded)
    assert loaded.format == "openai_functions"
    assert [t.name for t in loaded.spec.tools] == [
        "calculate_triangle_area",
        "math_factorial",
        "math_hypot",
    ]
    assert loaded.spec.tool("math_hypot").properties["x"]["type"] == "number"
    assert loaded.warnings[0] == "JSON Lines: tools of 4 documents merged"
    assert any("identical repeat of tool #0" in w for w in loaded.warnings)


def test_jsonl_suffix_and_its_errors(tmp_path: Path) -> None:
    fn = {"name": "f", "description": "d", "parameters": {"type": "object", "properties": {}}}
    good = write(
        tmp_path, "fns.jsonl", json.dumps(fn) + "\n\n" + json.dumps({**fn, "name": "g"}) + "\n"
    )
    assert [t.name for t in load_spec_file(good).spec.tools] == ["f", "g"]
    bad = write(tmp_path, "bad.jsonl", json.dumps(fn) + "\n{oops\n")
    with pytest.raises(SpecError, match="invalid JSON on line 2 \\(JSON Lines\\)"):
        load_spec_file(bad)
    mixed = write(
        tmp_path,
        "mixed.jsonl",
        json.dumps(fn) + "\n" + json.dumps({"tools": [{"name": "t", "inputSchema": {}}]}) + "\n",
    )
    with pytest.raises(SpecError, match="mixes formats"):
        load_spec_file(mixed)
    unknown = write(tmp_path, "unknown.jsonl", json.dumps(fn) + "\n" + json.dumps({"x": 1}) + "\n")
    with pytest.raises(SpecError, match="line 2: unknown format") as info:
        load_spec_file(unknown)
    assert info.value.source == str(unknown)
    with pytest.raises(SpecError, match="document is empty"):
        load_spec_file(write(tmp_path, "empty.jsonl", "\n\n"))


def test_trailing_garbage_after_json_reports_the_first_error(tmp_path: Path) -> None:
    path = write(tmp_path, "trailing.json", '{\n  "tools": []\n}\n}garbage')
    with pytest.raises(SpecError, match="invalid JSON at line 4 column 1: Extra data"):
        load_spec_file(path)


def test_hostile_toucan_shapes() -> None:
    tool = {"name": "t", "description": "d", "input_schema": {"type": "object"}}
    odd = {
        "labels": ["not", "a", "dict"],
        "metadata": {"server_name": 7, "server_info_crawled": {"tools": [tool], "name": None}},
    }
    loaded = load_spec_dict(odd, source="odd.json")
    assert (loaded.spec.name, loaded.spec.domain) == ("odd", "general")
    with pytest.raises(SpecError, match=r"'metadata\.server_info_crawled\.tools' is a dict"):
        load_spec_dict({"metadata": {"server_info_crawled": {"tools": {"t": tool}}}}, source="x")
    with pytest.raises(SpecError, match="no tools"):
        load_spec_dict(
            {"metadata": {"server_info_crawled": None, "remote_server_response": {"tools": None}}},
            source="x",
        )
