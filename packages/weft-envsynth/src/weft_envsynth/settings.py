"""Settings of weft-envsynth (environment prefix WEFT_ENVSYNTH_)."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class EnvSynthSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="WEFT_ENVSYNTH_", extra="ignore")

    rounds: int = Field(default=3, ge=0, description="Revision rounds after the first validation.")
    seed_rows: int = Field(
        default=6, ge=1, le=200, description="Sample rows per business entity in seed.sqlite."
    )
    reference_rows: int = Field(
        default=8, ge=1, le=500, description="Synthesized reference rows per stateless-tool entity."
    )
    max_tools: int = Field(
        default=300,
        ge=1,
        description="Specs with more tools than this are rejected (too big to certify).",
    )
    max_enum_values: int = Field(
        default=1000,
        ge=1,
        description="Specs with a parameter enum longer than this are refused before "
        "synthesis (the largest of the 2,120 real specs has 169 values; a 100,000-value enum "
        "took 561 s to synthesize).",
    )
    route_code: bool = Field(
        default=False,
        description="With a model, the backend agent writes each database tool's route code "
        "(routecode); code that passes validation is kept in the bundle and served.",
    )
    route_code_rounds: int = Field(
        default=2, ge=0, le=10, description="Revisions of a tool's route code after its first."
    )
    code_time_limit_s: float = Field(
        default=2.0,
        gt=0,
        description="CPU-time limit of one call of model-written route code (read by bundles "
        "too; wall time is limited to 10x, at least 30 s).",
    )
    format_code: bool = Field(
        default=True, description="ruff-format generated sources when ruff is installed."
    )
