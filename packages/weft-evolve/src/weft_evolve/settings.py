"""Settings of weft-evolve (env prefix WEFT_EVOLVE_)."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class EvolveSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="WEFT_EVOLVE_", extra="ignore")

    rounds: int = Field(
        default=3, ge=0, description="Evolution rounds (rollouts, attribution, revision)."
    )
    model: str = Field(
        default="", description="LangChain model spec for the LLM strategies; empty = programmatic."
    )
    concurrency: int = Field(default=4, ge=1, description="Rollouts and replays in flight at once.")
    samples: int = Field(
        default=1, ge=1, description="Rollouts per task, view and harness in a round."
    )
    error_rate_threshold: float = Field(
        default=0.5, description="A tool failing this share of its calls in a round is revalidated."
    )
    min_calls_for_rate: int = Field(
        default=4, description="Calls a tool needs before its rate counts."
    )
