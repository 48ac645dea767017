"""Settings (`WEFT_TOOLSPACE_*` environment variables)."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class ToolSpaceSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="WEFT_TOOLSPACE_")

    server_home: Path = Field(
        default=Path.home() / ".cache" / "weft" / "toolspace-servers",
        description="Where the real MCP servers (npm and PyPI packages) are installed.",
    )
    min_count: int = Field(default=2, description="Prune edges seen fewer than N_ij times.")
    min_weight: float = Field(default=0.05, description="Prune edges with w(i,j) below this.")
    resolution: float = Field(
        default=2.0,
        description="Louvain resolution of the environment clustering (higher: smaller "
        "environments; at 1.0 servers that trade many values, e.g. filesystem and memory, "
        "merge into one environment). The paper gives none.",
    )
    seed: int = Field(default=0, description="Seed of clustering, exploration and walks.")
    pro_length_factor: float = Field(
        default=2.0,
        ge=1.0,
        description="Pro upgrade (§5): its walks have ceil(L x this) calls, L the environment's own.",
    )
    pro_extra_environments: int = Field(
        default=1,
        ge=0,
        description="Pro upgrade (§5): its walks cross K + this environments, K the environment's own.",
    )
    pro_hops: int = Field(
        default=1,
        ge=1,
        description="Pro upgrade (§5): rounds of linking outside tools by data or state edges "
        "(2: tools related to a linked tool join too).",
    )
