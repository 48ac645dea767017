"""ModelConfig and the `provider:model[@base_url]` string form."""

from __future__ import annotations

import re
from typing import Any

from pydantic import Field, SecretStr, field_validator

from weft_core.exceptions import ModelConfigError
from weft_core.models._base import WeftModel

# Strings that explicitly choose the programmatic strategies.
NO_MODEL = frozenset({"", "none", "programmatic", "off"})
# vLLM's OpenAI-compatible server listens here unless told otherwise.
DEFAULT_VLLM_URL = "http://localhost:8000/v1"
_SPEC = re.compile(
    r"^(?P<provider>[A-Za-z][A-Za-z0-9_\-]*):(?P<model>[^@\s]+(?:@[^@\s]+)*?)(?:@(?P<url>https?://\S+))?$"
)
# Providers served through ChatOpenAI against an OpenAI-compatible endpoint.
OPENAI_COMPATIBLE = frozenset({"openai", "vllm", "openai_compatible", "sglang"})


class ModelConfig(WeftModel):
    """A chat model to build. `provider` is `openai`, `vllm` (an OpenAI-compatible server) or any
    provider `langchain.chat_models.init_chat_model` knows (anthropic, ollama, ...)."""

    provider: str = Field(description="openai, vllm, or an init_chat_model provider name.")
    model: str = Field(description="Model name as the server knows it, e.g. Qwen/Qwen3-8B.")
    base_url: str | None = Field(
        default=None, description="Endpoint of an OpenAI-compatible server."
    )
    api_key: SecretStr | None = Field(default=None, description="API key; vLLM accepts any.")
    temperature: float | None = Field(default=None, ge=0, description="Sampling temperature.")
    max_tokens: int | None = Field(default=None, gt=0, description="Completion token limit.")
    timeout: float | None = Field(default=None, gt=0, description="Request timeout in seconds.")
    max_retries: int | None = Field(default=None, ge=0, description="Client-side retries.")
    extra: dict[str, Any] = Field(
        default_factory=dict, description="Passed to the model class as is."
    )

    @field_validator("provider")
    @classmethod
    def _provider(cls, value: str) -> str:
        value = value.strip().lower().replace("-", "_")
        if not value:
            raise ValueError("provider is empty")
        return value

    @field_validator("model")
    @classmethod
    def _model(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("model is empty")
        return value.strip()

    @property
    def spec(self) -> str:
        """The string form, without the key: `provider:model[@base_url]`."""
        return f"{self.provider}:{self.model}" + (f"@{self.base_url}" if self.base_url else "")


def parse_model_spec(spec: str, *, setting: str = "model") -> ModelConfig | None:
    """`openai:gpt-4o-mini`, `vllm:Qwen/Qwen3-8B@http://gpu:8000/v1`, `anthropic:claude-...`;
    empty / `none` / `programmatic` -> None. Errors name `setting`."""
    text = spec.strip()
    if text.lower() in NO_MODEL:
        return None
    match = _SPEC.match(text)
    if match is None:
        raise ModelConfigError(
            f"{setting}={spec!r}: expected 'provider:model[@base_url]', e.g. 'openai:gpt-4o-mini' or "
            f"'vllm:Qwen/Qwen3-8B@{DEFAULT_VLLM_URL}' (or 'none' for programmatic strategies)"
        )
    provider, model, url = match["provider"], match["model"], match["url"]
    if "://" in model:
        raise ModelConfigError(
            f"{setting}={spec!r}: the base URL after '@' must be http:// or https://"
        )
    if provider.lower() == "vllm" and url is None:
        url = DEFAULT_VLLM_URL
    try:
        return ModelConfig(provider=provider, model=model, base_url=url)
    except ValueError as exc:
        raise ModelConfigError(f"{setting}={spec!r}: {exc}") from None
