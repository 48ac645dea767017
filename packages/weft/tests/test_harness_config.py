import sys

import pytest

from weft.config import parse_config
from weft.errors import ConfigError
from weft.pipeline import build_harnesses, profile_set
from weft_core.models import ViewMode
from weft_core.testing import ScriptedChatModel


def _config(tmp_path, rollouts=None, tasks=None):
    return parse_config({"rollouts": rollouts or {}, "tasks": tasks or {}}, base_dir=tmp_path)


def test_harnesses_from_config(tmp_path):
    config = _config(
        tmp_path,
        {
            "harnesses": ["teacher", "react", "openclaw"],
            "external": [
                {
                    "name": "openclaw",
                    "command": [sys.executable, "-c", "pass"],
                    "modes": ["agentic"],
                }
            ],
        },
    )
    built = build_harnesses(config, llm=None)
    assert built["teacher"].model_name == "reference-chain"
    assert built["react"].model_name == "reference-policy"  # no model: the reference policy
    assert built["openclaw"].modes == frozenset({ViewMode.AGENTIC})
    with_model = build_harnesses(config, llm=ScriptedChatModel(["hi"]))
    assert with_model["react"].model_name == "ScriptedChatModel"


def test_unknown_harness_and_profile_are_config_errors(tmp_path):
    with pytest.raises(ConfigError, match="unknown harness 'bogus'"):
        build_harnesses(_config(tmp_path, {"harnesses": ["bogus"]}), llm=None)
    # Hermes and OpenClaw have no programmatic policy: they need a model behind the gateway
    with pytest.raises(ConfigError, match="'hermes' needs an OpenAI-compatible model"):
        build_harnesses(_config(tmp_path, {"harnesses": ["hermes"]}), llm=None)
    with pytest.raises(ConfigError, match="unknown profile"):
        profile_set(_config(tmp_path, tasks={"profiles": ["Legendary"]}))
    assert [
        p.name for p in profile_set(_config(tmp_path, tasks={"profiles": ["Simple"]})).profiles
    ] == ["Simple"]
