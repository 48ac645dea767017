"""Settings of the rollout runner (environment prefix `WEFT_ROLLOUT_`)."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class RolloutSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="WEFT_ROLLOUT_", extra="ignore")

    concurrency: int = Field(default=8, ge=1, description="Rollouts running at the same time.")
    max_infra_retries: int = Field(
        default=3,
        ge=0,
        description="Physical retries of a rollout after an infrastructure failure.",
    )
    retry_backoff_s: float = Field(
        default=0.5, ge=0.0, description="Wait before retry k is k times this many seconds."
    )
    call_timeout_s: float = Field(default=120.0, gt=0, description="Timeout of one MCP tool call.")
    progress: bool = Field(default=True, description="Show a rich progress bar.")
