from pathlib import Path

import pytest

from weft.cli import main
from weft.config import load_config
from weft.errors import ConfigError
from weft_core.models import Disclosure, ViewMode

REPO = Path(__file__).resolve().parents[3]


def _write(tmp_path, text):
    p = tmp_path / "p.toml"
    p.write_text(text)
    return p


def test_example_config_loads_and_resolves_specs():
    config = load_config(REPO / "examples" / "pipeline.toml")
    specs = config.spec_files()
    assert specs and all(s.suffix == ".json" and s.exists() for s in specs)
    assert config.rollouts.view_pairs()[0] == (ViewMode.AGENTIC, Disclosure.FULL)
    assert config.out_dir == (REPO / ".weft" / "run").resolve()


def test_defaults_and_relative_paths(tmp_path):
    (tmp_path / "a.json").write_text("{}")
    config = load_config(_write(tmp_path, '[pipeline]\nspecs = ["a.json"]\nout = "o"\n'))
    assert config.spec_files() == [(tmp_path / "a.json").resolve()]
    assert config.out_dir == (tmp_path / "o").resolve()
    assert config.rollouts.harnesses == ["teacher", "react"]
    assert not config.sft.enabled and config.sft.method == "prefix"
    assert config.evolve.rounds == 0  # evolution is opt-in


def test_evolve_section(tmp_path):
    config = load_config(_write(tmp_path, '[evolve]\nrounds = 3\nviews = ["simuser/vague"]\n'))
    assert config.evolve.rounds == 3 and config.evolve.views == ["simuser/vague"]


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ('[rollouts]\nviews = ["agentic/loud"]\n', "rollouts.views"),
        ("[rollouts]\nconcurrency = 0\n", "rollouts.concurrency"),
        ("[pipeline]\nspecz = []\n", "pipeline.specz"),
        ("[pipeline\n", "not valid TOML"),
        ('[sft]\nmethod = "greedy"\n', "sft.method"),
        ("[sft]\nk = -1\n", "sft.k"),
        ("[evolve]\nrounds = -1\n", "evolve.rounds"),
        (
            "[tasks]\nwitnessed_ranking = true\n",
            "tasks: Value error, witnessed_ranking = true needs",
        ),
    ],
)
def test_bad_configs_name_the_key(tmp_path, text, fragment):
    with pytest.raises(ConfigError, match=fragment.replace(".", r"\.")):
        load_config(_write(tmp_path, text))


def test_specs_that_match_nothing_are_a_clear_error(tmp_path):
    config = load_config(_write(tmp_path, '[pipeline]\nspecs = ["nope/*.json"]\n'))
    with pytest.raises(ConfigError, match="matches no file"):
        config.spec_files()


def test_cli_prints_one_line_and_exit_code_2_for_input_errors(tmp_path, capsys):
    code = main(["run", str(_write(tmp_path, "[rollouts]\nviews = ['x/y']\n")), "--quiet"])
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("weft: ") and "rollouts.views" in err[0]
    assert main(["run", str(tmp_path / "missing.toml"), "--quiet"]) == 2


def test_witnessed_ranking_reads_the_evidence_file_next_to_the_config(tmp_path):
    from weft.pipeline import evidence_path

    text = '[tasks]\nevidence = "ev.json"\nwitnessed_ranking = true\n'
    config = load_config(_write(tmp_path, text))
    with pytest.raises(ConfigError, match=r"\[tasks\]\.evidence: 'ev\.json' is not a file"):
        evidence_path(config)
    (tmp_path / "ev.json").write_text('{"source": "x", "edges": []}')
    assert evidence_path(config) == tmp_path / "ev.json"
