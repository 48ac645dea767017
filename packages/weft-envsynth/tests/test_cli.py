"""The weft-envsynth command: hostile input in a batch, the JSON report, serving a bundle over HTTP."""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fastmcp import Client

from weft_envsynth.cli import main

GOOD_SMALL = {
    "name": "Notes",
    "domain": "Productivity",
    "tools": [
        {
            "name": "create_note",
            "description": "Create a note.",
            "input_schema": {
                "type": "object",
                "properties": {"title": {"type": "string"}, "body": {"type": "string"}},
                "required": ["title"],
            },
        },
        {
            "name": "get_note",
            "description": "Get a note.",
            "input_schema": {
                "type": "object",
                "properties": {"note_id": {"type": "string"}},
                "required": ["note_id"],
            },
        },
        {
            "name": "broken_tool",
            "description": "Schema is not a schema.",
            "input_schema": "this is not json schema",
        },
    ],
}


def test_batch_with_hostile_specs_goes_on_and_reports(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "good.json").write_text(json.dumps(GOOD_SMALL))
    (specs / "truncated.json").write_text('{"name": "x", "tools": [')
    (specs / "no_tools.json").write_text(json.dumps({"name": "Empty", "tools": []}))
    (specs / "not_a_spec.json").write_text(json.dumps({"hello": "world"}))
    clash = {
        "name": "Clash",
        "tools": [
            {
                "name": "get_item",
                "description": "Get an item.",
                "input_schema": {
                    "type": "object",
                    "properties": {"item_id": {"type": "string"}},
                    "required": ["item_id"],
                },
            },
            {
                "name": "get_item",
                "description": "Get an item again.",
                "input_schema": {
                    "type": "object",
                    "properties": {"item_id": {"type": "string"}},
                    "required": ["item_id"],
                },
            },
        ],
    }
    (specs / "clash.json").write_text(json.dumps(clash))
    out = tmp_path / "out"
    code = main(["synth", str(specs), "-o", str(out), "--quiet", "--rounds", "1"])
    assert code == 1  # the batch went on, and the exit status says some spec files did not load
    report = json.loads((out / "envsynth-report.json").read_text())
    by = {Path(r["source"]).name: r for r in report["results"]}
    assert by["good.json"]["status"] == "certified" and by["good.json"]["tools_certified"] == 2
    assert "broken_tool" in by["good.json"]["rejected_tools"]
    # a name clash: the loader renames the second tool; both are synthesized and certified
    assert by["clash.json"]["status"] == "certified" and by["clash.json"]["tools_certified"] == 2
    assert any("renamed" in w for w in by["clash.json"]["warnings"])
    for bad in ("truncated.json", "no_tools.json", "not_a_spec.json"):
        assert by[bad]["status"] == "rejected" and by[bad]["reason"], bad
    assert (out / "notes" / "manifest.json").exists()
    assert sorted(p.name for p in out.iterdir() if not p.name.startswith(".")) == [
        "clash",
        "envsynth-report.json",
        "notes",
    ]


def test_missing_spec_file_is_one_actionable_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["synth", str(tmp_path / "nope.json"), "-o", str(tmp_path / "o")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "nope.json does not exist" in err[0]


def test_serve_rejects_a_folder_that_is_not_a_bundle(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["serve", str(tmp_path)]) == 2
    assert "not a certified EnvBundle" in capsys.readouterr().err


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.integration
@pytest.mark.slow  # a server subprocess importing the stack: 40 s on a loaded 2-core machine
async def test_serve_runs_a_bundle_over_streamable_http(
    tmp_path: Path, helpdesk_bundle: Path
) -> None:
    port = _free_port()
    db = tmp_path / "state.sqlite"
    cmd = [
        sys.executable,
        "-m",
        "weft_envsynth.cli",
        "serve",
        str(helpdesk_bundle),
        "--port",
        str(port),
        "--db",
        str(db),
        "--workspace",
        str(tmp_path / "ws"),
    ]
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        for _ in range(600):
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            if proc.poll() is not None:
                raise AssertionError(
                    proc.stdout.read().decode() if proc.stdout else "server exited"
                )
            time.sleep(0.1)
        async with Client(f"http://127.0.0.1:{port}/mcp") as c:
            names = {t.name for t in await c.list_tools()}
            assert "close_ticket" in names
            res = await c.call_tool(
                "close_ticket", {"ticket_id": "TIC-0001", "resolution": "Replaced the cable"}
            )
            assert res.structured_content["ticket"]["status"] == "closed"
        row = (
            sqlite3.connect(db)
            .execute("SELECT status, resolution FROM ticket WHERE ticket_id='TIC-0001'")
            .fetchone()
        )
        assert row == ("closed", "Replaced the cable")
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_two_specs_with_the_same_name_get_two_bundles(tmp_path: Path) -> None:
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps({**GOOD_SMALL, "tools": GOOD_SMALL["tools"][:2]}))
    b.write_text(json.dumps({**GOOD_SMALL, "tools": GOOD_SMALL["tools"][:1]}))
    out = tmp_path / "out"
    assert main(["synth", str(a), str(b), "-o", str(out), "--quiet", "--rounds", "0"]) == 0
    report = json.loads((out / "envsynth-report.json").read_text())
    assert [r["slug"] for r in report["results"]] == ["notes", "notes_2"]
    assert not (out / ".history").exists()
