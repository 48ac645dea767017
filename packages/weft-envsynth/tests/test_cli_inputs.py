"""Hostile input to `weft-envsynth synth` / `serve`: one error line, exit 2, no hang."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import pytest

from weft_envsynth.cli import main


def _error(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    rc = main(list(argv))
    err = capsys.readouterr().err
    assert rc == 2, err
    assert "Traceback" not in err
    return err


def test_fifo_spec_is_refused_without_reading(capsys, tmp_path: Path):
    fifo = tmp_path / "spec.json"
    os.mkfifo(fifo)  # opening it for reading would block forever
    err = _error(capsys, "synth", str(fifo), "-o", str(tmp_path / "out"), "--quiet")
    assert "not a regular file" in err and err.count("\n") == 1


def test_oversized_spec_is_refused(capsys, tmp_path: Path):
    big = tmp_path / "big.json"
    big.write_text('{"tools": [{"name": "t", "description": "' + "x" * 5_000_000 + '"}]}')
    err = _error(capsys, "synth", str(big), "-o", str(tmp_path / "out"), "--quiet")
    assert "over the" in err and "--max-spec-bytes" in err


def test_huge_enum_is_refused_before_synthesis(capsys, tmp_path: Path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "400")  # the console would fold the line at 80
    values = [f"c{i}" for i in range(100_000)]
    tool = {
        "name": "set_color",
        "description": "Set the color of an item.",
        "input_schema": {
            "type": "object",
            "properties": {"item": {"type": "string"}, "color": {"type": "string", "enum": values}},
            "required": ["item", "color"],
        },
    }
    spec = tmp_path / "colors.json"
    spec.write_text(json.dumps({"name": "colors", "description": "Colors", "tools": [tool]}))
    err = _error(capsys, "synth", str(spec), "-o", str(tmp_path / "out"), "--quiet")
    assert "'set_color': input_schema.properties.color has an enum of 100,000 values" in err
    assert "WEFT_ENVSYNTH_MAX_ENUM_VALUES" in err and err.count("\n") == 2  # + the summary
    assert not list((tmp_path / "out").glob("*/server.py"))  # nothing was synthesized


def test_no_loadable_spec_exits_2(capsys, tmp_path: Path):
    (tmp_path / "empty.json").write_text("{}")
    (tmp_path / "list.json").write_text("[1, 2]")
    err = _error(
        capsys,
        "synth",
        str(tmp_path / "empty.json"),
        str(tmp_path / "list.json"),
        "-o",
        str(tmp_path / "out"),
        "--quiet",
    )
    assert "none of the 2 spec file(s) could be loaded" in err
    assert "empty.json" in err and "list.json" in err


def test_output_folder_that_is_a_file(capsys, tmp_path: Path):
    (tmp_path / "spec.json").write_text("{}")
    (tmp_path / "out").write_text("x")
    err = _error(capsys, "synth", str(tmp_path / "spec.json"), "-o", str(tmp_path / "out"))
    assert err.count("\n") == 1


def test_serve_refuses_a_non_bundle_and_a_busy_port(capsys, tmp_path: Path):
    assert "not a certified EnvBundle" in _error(capsys, "serve", str(tmp_path))
    bundle = tmp_path / "b"
    bundle.mkdir()
    (bundle / "manifest.json").write_text("{}")
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = str(busy.getsockname()[1])
        err = _error(capsys, "serve", str(bundle), "--port", port)
    assert "cannot listen" in err and err.count("\n") == 1
    assert "out of range" in _error(capsys, "serve", str(bundle), "--port", "70000")
