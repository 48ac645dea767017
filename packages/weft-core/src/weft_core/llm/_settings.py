"""Environment settings for the LLM (prefix WEFT_LLM_)."""

from __future__ import annotations

from typing import Any

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from weft_core.exceptions import ModelConfigError
from weft_core.llm._config import ModelConfig, parse_model_spec


class WeftLLMSettings(BaseSettings):
    """`WEFT_LLM_MODEL=vllm:Qwen/Qwen3-8B`, `WEFT_LLM_BASE_URL=http://gpu:8000/v1`, ...

    Unset `WEFT_LLM_MODEL` means no model: programmatic strategies everywhere.
    """

    model_config = SettingsConfigDict(env_prefix="WEFT_LLM_", extra="ignore")

    model: str | None = Field(
        default=None,
        description="provider:model[@base_url], e.g. openai:Qwen/Qwen3-8B; unset = none.",
    )
    base_url: str | None = Field(default=None, description="OpenAI-compatible endpoint (vLLM).")
    api_key: SecretStr | None = Field(default=None, description="API key for the endpoint.")
    temperature: float | None = Field(default=None, ge=0, description="Sampling temperature.")
    max_tokens: int | None = Field(default=None, gt=0, description="Completion token limit.")
    timeout: float | None = Field(default=None, gt=0, description="Request timeout in seconds.")
    max_retries: int | None = Field(default=None, ge=0, description="Client-side retries.")

    def to_config(self) -> ModelConfig | None:
        if self.model is None:
            return None
        parsed = parse_model_spec(self.model, setting="WEFT_LLM_MODEL")
        if parsed is None:
            return None
        overrides: dict[str, Any] = {
            k: v
            for k, v in {
                "base_url": self.base_url,
                "api_key": self.api_key,
                "temperature": self.temperature,
                "max_tokens": self.max_tokens,
                "timeout": self.timeout,
                "max_retries": self.max_retries,
            }.items()
            if v is not None
        }
        try:
            return parsed.model_copy(update=overrides)
        except ValueError as exc:  # pragma: no cover - fields are validated by the settings already
            raise ModelConfigError(f"WEFT_LLM_*: {exc}") from None


# The name other packages use for the settings class.
ModelSettings = WeftLLMSettings
