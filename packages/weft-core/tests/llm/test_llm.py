from __future__ import annotations

import pytest

from weft_core.exceptions import ModelConfigError, UserError
from weft_core.llm import (
    ModelConfig,
    ModelSettings,
    WeftLLMSettings,
    make_chat_model,
    make_chat_model_from_env,
    parse_model_spec,
)

openai = pytest.importorskip("langchain_openai")


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "MODEL",
        "BASE_URL",
        "API_KEY",
        "TEMPERATURE",
        "MAX_TOKENS",
        "TIMEOUT",
        "MAX_RETRIES",
    ):
        monkeypatch.delenv(f"WEFT_LLM_{name}", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


@pytest.mark.parametrize("spec", [None, "", "none", "programmatic", " None "])
def test_no_model_means_programmatic(spec: str | None) -> None:
    assert make_chat_model(spec) is None


def test_parse_specs() -> None:
    assert parse_model_spec("openai:gpt-4o-mini") == ModelConfig(
        provider="openai", model="gpt-4o-mini"
    )
    cfg = parse_model_spec("vllm:Qwen/Qwen3-8B@http://10.0.0.5:8000/v1")
    assert cfg is not None and (cfg.provider, cfg.model, cfg.base_url) == (
        "vllm",
        "Qwen/Qwen3-8B",
        "http://10.0.0.5:8000/v1",
    )
    cfg = parse_model_spec("vllm:Qwen/Qwen3-8B")
    assert cfg is not None and cfg.base_url == "http://localhost:8000/v1"
    cfg = parse_model_spec("OpenAI:org/model@v2@https://api.example.com/v1")
    assert cfg is not None and (cfg.provider, cfg.model, cfg.base_url) == (
        "openai",
        "org/model@v2",
        "https://api.example.com/v1",
    )
    assert cfg.spec == "openai:org/model@v2@https://api.example.com/v1"


@pytest.mark.parametrize(
    "bad", ["gpt-4o", "openai:", ":model", "openai: has space", "1x:model", "openai:m@ftp://x"]
)
def test_garbage_names_the_setting(bad: str) -> None:
    with pytest.raises(ModelConfigError, match=r"judge_model=") as info:
        make_chat_model(bad, setting="judge_model")
    assert isinstance(info.value, UserError)


def test_vllm_builds_chat_openai_without_contacting_it() -> None:
    model = make_chat_model("vllm:Qwen/Qwen3-8B@http://127.0.0.1:9/v1")
    assert isinstance(model, openai.ChatOpenAI)
    assert model.model_name == "Qwen/Qwen3-8B"
    assert model.openai_api_base == "http://127.0.0.1:9/v1"
    assert model.openai_api_key is not None and model.openai_api_key.get_secret_value() == "EMPTY"


def test_model_config_with_options() -> None:
    cfg = ModelConfig(
        provider="openai",
        model="Qwen/Qwen3-8B",
        base_url="http://127.0.0.1:9/v1",
        api_key="sk-test",
        temperature=0.7,
        max_tokens=256,
        timeout=30,
        max_retries=1,
        extra={"top_p": 0.9},
    )
    model = make_chat_model(cfg)
    assert isinstance(model, openai.ChatOpenAI)
    assert model.temperature == 0.7 and model.max_tokens == 256 and model.max_retries == 1
    assert model.request_timeout == 30 and model.top_p == 0.9
    assert model.openai_api_key.get_secret_value() == "sk-test"
    assert "sk-test" not in repr(cfg)


def test_dict_config_and_bad_dict() -> None:
    model = make_chat_model({"provider": "vllm", "model": "m", "base_url": "http://127.0.0.1:9/v1"})
    assert isinstance(model, openai.ChatOpenAI)
    with pytest.raises(ModelConfigError, match="temperature"):
        make_chat_model({"provider": "openai", "model": "m", "temperature": -1})
    with pytest.raises(ModelConfigError, match="got int"):
        make_chat_model(3)  # type: ignore[arg-type]


def test_bad_extra_option_is_a_config_error() -> None:
    with pytest.raises(ModelConfigError, match="cannot build ChatOpenAI"):
        make_chat_model(ModelConfig(provider="vllm", model="m", extra={"temperature": "hot"}))


def test_missing_provider_package_is_a_config_error() -> None:
    with pytest.raises(ModelConfigError, match="no_such_provider_xyz") as info:
        make_chat_model("no_such_provider_xyz:model")
    assert "\n" not in str(info.value)


def test_settings_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    assert make_chat_model_from_env() is None
    monkeypatch.setenv("WEFT_LLM_MODEL", "openai:Qwen/Qwen3-8B")
    monkeypatch.setenv("WEFT_LLM_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("WEFT_LLM_TEMPERATURE", "0.2")
    settings = WeftLLMSettings()
    assert ModelSettings is WeftLLMSettings
    cfg = settings.to_config()
    assert cfg is not None and cfg.base_url == "http://127.0.0.1:9/v1" and cfg.temperature == 0.2
    model = make_chat_model_from_env()
    assert isinstance(model, openai.ChatOpenAI) and model.temperature == 0.2
    assert model.openai_api_key.get_secret_value() == "EMPTY"


def test_settings_errors_name_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WEFT_LLM_MODEL", "qwen")
    with pytest.raises(ModelConfigError, match="WEFT_LLM_MODEL='qwen'"):
        make_chat_model_from_env()
    monkeypatch.setenv("WEFT_LLM_MODEL", "openai:m")
    monkeypatch.setenv("WEFT_LLM_MAX_TOKENS", "-5")
    with pytest.raises(ModelConfigError, match="WEFT_LLM_MAX_TOKENS"):
        make_chat_model_from_env()


def test_settings_fields_have_descriptions() -> None:
    assert all(f.description for f in WeftLLMSettings.model_fields.values())


def test_openai_without_any_key_is_a_config_error() -> None:
    with pytest.raises(ModelConfigError, match="WEFT_LLM_API_KEY"):
        make_chat_model("openai:gpt-4o-mini")
    model = make_chat_model(ModelConfig(provider="openai", model="gpt-4o-mini", api_key="sk-x"))
    assert isinstance(model, openai.ChatOpenAI)
