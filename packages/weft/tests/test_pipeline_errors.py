import json

import pytest

from weft.cli import main
from weft.config import parse_config
from weft.errors import StageError
from weft.pipeline import run_pipeline


async def test_specs_that_all_fail_synthesis_stop_with_a_clear_stage_error(tmp_path):
    (tmp_path / "bad.json").write_text(json.dumps({"not": "a spec"}))
    (tmp_path / "empty.json").write_text(json.dumps({"name": "Empty", "tools": []}))
    config = parse_config(
        {"pipeline": {"specs": ["*.json"], "out": str(tmp_path / "out")}}, base_dir=tmp_path
    )
    with pytest.raises(StageError, match="no environment could be certified"):
        await run_pipeline(config)
    # The failed specs are recorded per spec, so a rerun does not redo them.
    done = list((tmp_path / "out" / "stages" / "envs").glob("*/done.json"))
    assert len(done) == 2
    assert {json.loads(p.read_text())["status"] for p in done} == {"rejected"}


def test_cli_exit_code_1_and_one_line_for_a_failed_stage(tmp_path, capsys):
    (tmp_path / "bad.json").write_text("{}")
    cfg = tmp_path / "p.toml"
    cfg.write_text(f'[pipeline]\nspecs = ["bad.json"]\nout = "{tmp_path / "o"}"\n')
    assert main(["run", str(cfg), "--quiet"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert err[0].startswith("weft: no environment could be certified: bad.json: ")


def test_an_unreachable_model_endpoint_stops_the_run_at_once(tmp_path, capsys):
    cfg = tmp_path / "p.toml"
    (tmp_path / "a.json").write_text("{}")
    cfg.write_text(f'[pipeline]\nspecs = ["a.json"]\nout = "{tmp_path / "o"}"\n')
    code = main(["run", str(cfg), "--quiet", "--model", "vllm:nothing@http://127.0.0.1:9/v1"])
    assert code == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "model 'vllm:nothing@http://127.0.0.1:9/v1' did not answer" in err[0]
    assert not (tmp_path / "o" / "stages").exists()


async def test_probe_accepts_a_model_that_answers():
    from weft.pipeline import probe_model
    from weft_core.testing import ScriptedChatModel

    await probe_model(ScriptedChatModel(["OK"]), "scripted")
