"""Hostile configuration of `weft-megamcp serve`: one error line, exit status 2, no traceback,
before anything is served (so these run in-process, fast)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from weft_megamcp.cli import main


def _serve_error(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    rc = main(["serve", *argv])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert err.count("\n") == 1 and err.startswith("weft-megamcp: error:"), err
    assert "Traceback" not in err
    return err


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for key in list(__import__("os").environ):
        if key.startswith("WEFT_MEGAMCP_"):
            monkeypatch.delenv(key)
    monkeypatch.chdir(tmp_path)


def test_misspelt_env_var_is_refused(monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("WEFT_MEGAMCP_PROT", "8080")
    err = _serve_error(capsys, "--data-dir", str(tmp_path / "d"))
    assert "WEFT_MEGAMCP_PROT" in err and "did you mean WEFT_MEGAMCP_PORT" in err


def test_bad_env_value_names_the_variable(monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("WEFT_MEGAMCP_CALL_TIMEOUT_S", "soon")
    err = _serve_error(capsys, "--data-dir", str(tmp_path / "d"))
    assert "environment" in err and "call_timeout_s" in err


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["--port", "70000"], "port"),
        (["--port", "-1"], "port"),
        (["--log-level", "loud"], "log_level"),
        (["--workers", "-3"], "workers"),
    ],
)
def test_out_of_range_flags(capsys, tmp_path, argv, needle):
    assert needle in _serve_error(capsys, "--data-dir", str(tmp_path / "d"), *argv)


def test_busy_port(capsys, tmp_path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = str(busy.getsockname()[1])
        err = _serve_error(capsys, "--data-dir", str(tmp_path / "d"), "--port", port)
        assert "cannot listen" in err and "in use" in err
        err = _serve_error(
            capsys, "--data-dir", str(tmp_path / "d"), "--port", port, "--workers", "2"
        )
        assert "cannot listen" in err


def test_data_dir_that_is_a_file(capsys, tmp_path):
    (tmp_path / "f").write_text("x")
    assert "not a folder" in _serve_error(capsys, "--data-dir", str(tmp_path / "f"))


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        (b"[megamcp]\nport = 1\n# \xff\xfe\n", "not UTF-8"),
        (b"[megamcp\n", "not valid TOML"),
        (b"[megamcp]\nprot = 1\n", "unknown setting"),
        (b'[megamcp]\nport = "many"\n', "port"),
        (b"megamcp = 3\n", "must be a table"),
    ],
)
def test_bad_config_files(capsys, tmp_path, content, needle):
    cfg = tmp_path / "c.toml"
    cfg.write_bytes(content)
    err = _serve_error(capsys, "--config", str(cfg))
    assert needle in err and "c.toml" in err


def test_config_that_is_a_folder(capsys, tmp_path):
    assert "cannot read" in _serve_error(capsys, "--config", str(tmp_path))


def test_megamcp_toml_in_the_working_folder_is_read(capsys, tmp_path):
    (tmp_path / "megamcp.toml").write_text('[megamcp]\nlog_level = "loud"\n')
    err = _serve_error(capsys)
    assert "megamcp.toml" in err and "log_level" in err


def test_serve_help_names_env_vars_and_toml(capsys):
    with pytest.raises(SystemExit):
        main(["serve", "--help"])
    out = capsys.readouterr().out
    assert "WEFT_MEGAMCP_" in out and "megamcp.toml" in out and "allowed_hosts" in out
