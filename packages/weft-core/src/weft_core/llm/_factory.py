"""Build a LangChain chat model from a model setting."""

from __future__ import annotations

import importlib
from typing import Any

from langchain_core.language_models import BaseChatModel
from pydantic import ValidationError

from weft_core.exceptions import ModelConfigError
from weft_core.llm._config import OPENAI_COMPATIBLE, ModelConfig, parse_model_spec
from weft_core.llm._settings import WeftLLMSettings

# vLLM and similar servers ignore the key, but the OpenAI client refuses to start without one.
_PLACEHOLDER_KEY = "EMPTY"


def _common_kwargs(config: ModelConfig) -> dict[str, Any]:
    kwargs: dict[str, Any] = {}
    for name in ("temperature", "max_tokens", "timeout", "max_retries"):
        value = getattr(config, name)
        if value is not None:
            kwargs[name] = value
    return kwargs


def _openai(config: ModelConfig) -> BaseChatModel:
    try:
        module = importlib.import_module("langchain_openai")
    except ImportError:
        raise ModelConfigError(
            f"model {config.spec!r} needs langchain-openai: pip install 'weft-core[openai]'"
        ) from None
    kwargs = _common_kwargs(config)
    if config.base_url:
        kwargs["base_url"] = config.base_url
    if config.api_key is not None:
        kwargs["api_key"] = config.api_key.get_secret_value()
    elif config.base_url or config.provider != "openai":
        kwargs["api_key"] = _PLACEHOLDER_KEY
    kwargs.update(config.extra)
    cls = module.ChatOpenAI
    if config.provider == "vllm":
        # A policy server: keep its token ids and raw tool-call text on each reply (TITO).
        from weft_core.llm._tito import TokenCapturingChatOpenAI

        cls = TokenCapturingChatOpenAI
    try:
        model: BaseChatModel = cls(model=config.model, **kwargs)
    except Exception as exc:  # the client raises its own types (e.g. openai.OpenAIError: no key)
        reason = " ".join(str(exc).split())
        hint = " (set WEFT_LLM_API_KEY or OPENAI_API_KEY)" if "api_key" in reason.lower() else ""
        raise ModelConfigError(
            f"model {config.spec!r}: cannot build ChatOpenAI: {reason}{hint}"
        ) from None
    return model


def _other(config: ModelConfig) -> BaseChatModel:
    try:
        chat_models = importlib.import_module("langchain.chat_models")
    except ImportError:
        raise ModelConfigError(
            f"model {config.spec!r}: provider {config.provider!r} needs the 'langchain' package "
            "(pip install langchain) and its integration package"
        ) from None
    kwargs = _common_kwargs(config)
    if config.base_url:
        kwargs["base_url"] = config.base_url
    if config.api_key is not None:
        kwargs["api_key"] = config.api_key.get_secret_value()
    kwargs.update(config.extra)
    try:
        model: BaseChatModel = chat_models.init_chat_model(
            config.model, model_provider=config.provider, **kwargs
        )
    except Exception as exc:  # integrations raise their own types for missing packages or keys
        reason = " ".join(str(exc).split())  # one line: CLIs print it as is
        raise ModelConfigError(f"model {config.spec!r}: {reason}") from None
    return model


def make_chat_model(
    spec: str | ModelConfig | dict[str, Any] | None, *, setting: str = "model"
) -> BaseChatModel | None:
    """A chat model for `spec`, or None (programmatic strategies).

    `spec` is None, a string `provider:model[@base_url]` (`openai:gpt-4o-mini`,
    `vllm:Qwen/Qwen3-8B@http://gpu:8000/v1`, `anthropic:claude-sonnet-4-5`; `none` = None), a
    ModelConfig, or its dict form. Nothing is contacted here: the client connects on first use.
    Raises ModelConfigError naming `setting` for anything unusable.
    """
    if spec is None:
        return None
    if isinstance(spec, str):
        config = parse_model_spec(spec, setting=setting)
    elif isinstance(spec, ModelConfig):
        config = spec
    elif isinstance(spec, dict):
        try:
            config = ModelConfig.model_validate(spec)
        except ValidationError as exc:
            first = exc.errors()[0]
            loc = ".".join(str(p) for p in first["loc"]) or "(root)"
            raise ModelConfigError(f"{setting}: {loc}: {first['msg']}") from None
    else:
        raise ModelConfigError(
            f"{setting}: expected a 'provider:model' string or a ModelConfig, got {type(spec).__name__}"
        )
    if config is None:
        return None
    if config.provider in OPENAI_COMPATIBLE:
        return _openai(config)
    return _other(config)


def make_chat_model_from_env(settings: WeftLLMSettings | None = None) -> BaseChatModel | None:
    """The model the WEFT_LLM_* environment asks for, or None when WEFT_LLM_MODEL is unset."""
    try:
        settings = settings or WeftLLMSettings()
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(p) for p in first["loc"])
        raise ModelConfigError(f"WEFT_LLM_{loc.upper()}: {first['msg']}") from None
    return make_chat_model(settings.to_config(), setting="WEFT_LLM_MODEL")
