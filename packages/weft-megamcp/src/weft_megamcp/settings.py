"""MegaMCP settings: flags > environment (WEFT_MEGAMCP_*) > TOML file > embedded defaults."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from weft_megamcp.exceptions import MegaMCPUserError


class MegaMCPSettings(BaseSettings):
    """Everything `weft-megamcp serve` and `MegaMCPHost` can be configured with."""

    model_config = SettingsConfigDict(env_prefix="WEFT_MEGAMCP_", extra="forbid")

    host: str = Field(default="127.0.0.1", description="Interface the HTTP server binds.")
    port: int = Field(default=0, ge=0, le=65535, description="TCP port; 0 picks a free port.")
    workers: int = Field(
        default=0,
        ge=0,
        description="0 or 1: serve every session in the master process; N>1: prefork N worker processes.",
    )
    data_dir: Path = Field(
        default=Path(".megamcp"),
        description="Root of sessions, module cache and the default stores.",
    )
    registry_url: str | None = Field(
        default=None,
        description="SQLAlchemy URL of the registry (postgresql+psycopg://...); default SQLite in data_dir.",
    )
    object_store_url: str | None = Field(
        default=None,
        description="fsspec URL of the object store (s3://bucket/prefix); default a folder in data_dir.",
    )
    admin_token: str | None = Field(
        default=None, description="Bearer token of the admin API; generated and printed when unset."
    )
    token_ttl_s: float = Field(
        default=24 * 3600.0, gt=0, description="Lifetime of a session token from group creation."
    )
    call_timeout_s: float = Field(
        default=60.0,
        gt=0,
        description="A tool call running longer is cancelled and reported as a timeout.",
    )
    offload_after_s: float = Field(
        default=300.0, gt=0, description="Idle seconds after which a group's runtime is offloaded."
    )
    evict_after_s: float = Field(
        default=3600.0,
        gt=0,
        description="Idle seconds after which a group is checkpointed and evicted.",
    )
    idle_scan_interval_s: float = Field(
        default=5.0, gt=0, description="How often the idle manager looks for idle groups."
    )
    checkpoint_debounce_s: float = Field(
        default=0.5,
        ge=0,
        description="A checkpoint runs this long after the last write of a burst.",
    )
    checkpoint_max_delay_s: float = Field(
        default=5.0,
        gt=0,
        description="Upper bound between a write and the checkpoint that covers it "
        "(with checkpoint_min_interval_s: the larger of the two, plus one checkpoint's duration).",
    )
    checkpoint_min_interval_s: float = Field(
        default=5.0,
        ge=0,
        description="A session is checkpointed at most once per this interval: the durability "
        "window a host crash can lose, traded for checkpoint CPU under load.",
    )
    checkpoint_url: str | None = Field(
        default=None,
        description="fsspec URL of the checkpoint store; default <object store>/checkpoints.",
    )
    checkpoint_diff_max_rows: int = Field(
        default=200,
        ge=0,
        description="Changed rows a checkpoint verification's state diff keeps, over all MCPs "
        "of the group (the rest are only counted); 0 turns the per-turn diff off.",
    )
    verifier_timeout_s: float = Field(
        default=120.0, gt=0, description="Wall-clock limit of one Python verifier run."
    )
    keep_alive_s: int = Field(
        default=120, ge=1, description="Seconds an idle HTTP keep-alive connection stays open."
    )
    log_level: str = Field(default="warning", description="uvicorn / host log level.")

    @property
    def resolved_registry_url(self) -> str:
        if self.registry_url:
            return self.registry_url
        return f"sqlite:///{(self.data_dir / 'registry.sqlite').resolve()}"

    @property
    def resolved_object_store_url(self) -> str:
        return self.object_store_url or str((self.data_dir / "objects").resolve())


def load_settings(config: Path | None = None, **overrides: Any) -> MegaMCPSettings:
    """Settings from a TOML file (top level or a [megamcp] table), then env, then `overrides`."""
    file_values: dict[str, Any] = {}
    if config is not None:
        try:
            data = tomllib.loads(Path(config).read_text(encoding="utf-8"))
        except OSError as exc:
            raise MegaMCPUserError(f"config {config}: cannot read: {exc.strerror}") from None
        except tomllib.TOMLDecodeError as exc:
            raise MegaMCPUserError(f"config {config}: not valid TOML: {exc}") from None
        file_values = data.get("megamcp", data)
        unknown = set(file_values) - set(MegaMCPSettings.model_fields)
        if unknown:
            raise MegaMCPUserError(f"config {config}: unknown setting(s) {sorted(unknown)}")
    env = MegaMCPSettings()
    explicit_env = env.model_dump(exclude_unset=True)
    merged = {
        **file_values,
        **explicit_env,
        **{k: v for k, v in overrides.items() if v is not None},
    }
    return MegaMCPSettings.model_validate(merged) if merged else env
