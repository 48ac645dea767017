"""MegaMCP settings: flags > environment (WEFT_MEGAMCP_*) > TOML file > embedded defaults."""

from __future__ import annotations

import difflib
import json
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from weft_megamcp.exceptions import MegaMCPUserError
from weft_megamcp.sandbox import Sandbox, sandbox_for
from weft_megamcp.screening import ScreeningSettings


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
    groups_dir: Path | None = Field(
        default=None,
        description=(
            "Where live session groups keep their files (DBs, workspaces, ledgers); default "
            "data_dir/groups. A tmpfs (e.g. a folder in /dev/shm) spares the disk's journal the "
            "folders, copies and deletes of every group: durability is unchanged (session DBs "
            "already commit to the page cache only, and a machine crash is the checkpoints' "
            "job), at the price of RAM for every live session's files."
        ),
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
    max_result_chars: int = Field(
        default=4 * 1024 * 1024,
        ge=1,
        description="A tool result longer than this (characters of text plus structured "
        "content) is not returned: the agent gets a one-line error observation instead.",
    )
    group_max_calls: int = Field(
        default=8,
        ge=1,
        description="Tool calls of one group that run at once (a timed-out call whose thread "
        "still runs keeps its slot); more wait, so one group cannot starve the others.",
    )
    tool_threads: int = Field(
        default=256,
        ge=1,
        description="Threads sync tools of hosted modules run on, per process (anyio's "
        "default is 40: 40 slow calls stalled every session).",
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
    checkpoint_max_patches: int = Field(
        default=16,
        ge=0,
        description="A checkpoint uploads only the DB pages changed since the previous one, "
        "up to this many patches in a row (then a full copy; also when the patches would "
        "outweigh the DB); 0 uploads a full copy every time.",
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
    gc_young_threshold: int = Field(
        default=20_000,
        ge=0,
        description="Net allocations between young garbage collections in `weft-megamcp serve` "
        "and its workers, which also freeze the objects that exist once the app is built "
        "(CPython's default is 700: at 1,000 sessions the collector took ~30% of the host's "
        "CPU); 0 keeps CPython's defaults. An embedded host never changes its process's "
        "collector.",
    )
    gil_switch_interval_s: float = Field(
        default=0.05,
        ge=0,
        description="GIL switch interval (`sys.setswitchinterval`) of `weft-megamcp serve` and its "
        "workers: how long a busy event loop keeps the GIL before a waiting tool, checkpoint or "
        "group thread forces a switch (CPython's default is 0.005; at 1,000 sessions 0.05 took "
        "~10% off the host's CPU per call); 0 keeps the interpreter's value. An "
        "embedded host never changes it.",
    )
    keep_alive_s: int = Field(
        default=120, ge=1, description="Seconds an idle HTTP keep-alive connection stays open."
    )
    log_level: Literal["critical", "error", "warning", "info", "debug", "trace"] = Field(
        default="warning", description="uvicorn / host log level."
    )
    allowed_hosts: list[str] = Field(
        default_factory=list,
        description="Host names (no port; fnmatch patterns) that requests' Host header may "
        "name, on top of localhost, 127.0.0.1, ::1 and the bound address; ['*'] turns the "
        "DNS-rebinding check off (e.g. behind a proxy that checks it).",
    )

    sandbox: Literal["bwrap", "off"] = Field(
        default="bwrap",
        description="How hosted server processes (commands, dedicated modules, registration "
        "probes) are confined: 'bwrap' (bubblewrap namespaces: only the session workspace and "
        "DB visible; fails closed when bwrap cannot run) or 'off' (plain child processes).",
    )
    sandbox_network: bool = Field(
        default=False, description="Let sandboxed server processes use the network."
    )
    sandbox_ro_paths: list[Path] = Field(
        default_factory=list,
        description="Extra host folders sandboxed servers may read (e.g. a Node installation); "
        "a folder that holds the data dir is never bound.",
    )
    register_timeout_s: float = Field(
        default=60.0,
        gt=0,
        description="Limit of a registration probe: a module's import and tools/list, or a "
        "command's start and tools/list; the process is killed after it.",
    )
    register_fork_probes: bool = Field(
        default=True,
        description="Registration probes fork from one sandboxed process that has already "
        "imported fastmcp (~0.3 s of CPU per MCP instead of ~2 s); any outcome but a clean "
        "result or a timeout is re-run in a process of its own. False: every probe starts its own.",
    )
    lease_check_interval_s: float = Field(
        default=1.0,
        ge=0,
        description="A session's lease is re-read before a call at most this often (0: before "
        "every call); it is always re-read before a write is acknowledged.",
    )

    screen_limited_cap: int = Field(
        default=4,
        ge=1,
        description="Sessions one process may serve at once of a module whose screen had "
        "warning findings (WEFT_MEGAMCP_SCREEN_LIMITED_CAP).",
    )
    screen_shared_cap: int = Field(
        default=100_000,
        ge=1,
        description="The same for modules with a clean screen: nothing process-global to "
        "protect, so no real cap; placement balances the sessions workers hold instead.",
    )

    worker_pack_sessions: int = Field(
        default=64,
        ge=1,
        description="With --workers N>1: sessions a worker holds before the pool forks another "
        "(up to N). Packing keeps idle sessions in few processes (each worker costs the whole "
        "serving stack in memory); 1 spreads groups over new workers from the first.",
    )
    worker_busy_load: float = Field(
        default=0.75,
        gt=0,
        description="With --workers N>1: measured busy share of a core at which a worker counts "
        "as busy; when every worker is busy or full (worker_pack_sessions) the pool forks "
        "another (up to N), so workers are added for load, not for session counts alone.",
    )

    def screening(self) -> ScreeningSettings:
        """The per-process session caps of screened modules this host places by."""
        return ScreeningSettings(
            limited_cap=self.screen_limited_cap, shared_cap=self.screen_shared_cap
        )

    def as_environ(self) -> dict[str, str]:
        """Every setting as the WEFT_MEGAMCP_* variables that reproduce it in a child
        `weft-megamcp serve` (None values are left out: unset is their default)."""
        prefix = self.model_config.get("env_prefix", "")
        out = {}
        for name, value in self.model_dump(mode="json").items():
            if value is None:
                continue
            text = value if isinstance(value, str) else json.dumps(value)
            out[f"{prefix}{name}".upper()] = text
        return out

    @field_validator("log_level", mode="before")
    @classmethod
    def _lower_level(cls, value: Any) -> Any:
        return value.lower() if isinstance(value, str) else value

    @property
    def resolved_registry_url(self) -> str:
        if self.registry_url:
            return self.registry_url
        return f"sqlite:///{(self.data_dir / 'registry.sqlite').resolve()}"

    def sandbox_policy(self) -> Sandbox:
        """The sandbox of this host's server processes; hides the data dir and local stores."""
        hidden = [self.data_dir, self.resolved_groups_dir]
        for url in (self.object_store_url, self.checkpoint_url):
            if url and "://" not in url:
                hidden.append(Path(url))
        if self.registry_url and self.registry_url.startswith("sqlite:///"):
            hidden.append(Path(self.registry_url.removeprefix("sqlite:///")))
        return sandbox_for(
            self.sandbox,
            hidden=hidden,
            ro_paths=self.sandbox_ro_paths,
            network=self.sandbox_network,
        )

    @property
    def resolved_groups_dir(self) -> Path:
        return self.groups_dir if self.groups_dir is not None else self.data_dir / "groups"

    @property
    def resolved_object_store_url(self) -> str:
        return self.object_store_url or str((self.data_dir / "objects").resolve())


# Variables under the WEFT_MEGAMCP_ prefix that are not host settings: other settings classes'
# prefixes and the client side's (`weft-megamcp stdio`, weft-tasks' MegaMCP backend).
_OTHER_ENV = ("WEFT_MEGAMCP_HEALTH_",)
_CLIENT_ENV = {"WEFT_MEGAMCP_SESSION_TOKEN", "WEFT_MEGAMCP_URL"}
DEFAULT_CONFIG = Path("megamcp.toml")


def _check_env(environ: Mapping[str, str]) -> None:
    """A misspelt WEFT_MEGAMCP_* variable is an error, as the same typo in TOML is."""
    prefix = MegaMCPSettings.model_config.get("env_prefix", "")
    known = {f"{prefix}{name}".upper() for name in MegaMCPSettings.model_fields}
    for key in sorted(environ):
        upper = key.upper()
        if not upper.startswith(prefix) or upper in known or upper in _CLIENT_ENV:
            continue
        if upper.startswith(_OTHER_ENV):
            continue
        close = difflib.get_close_matches(upper, sorted(known), n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        raise MegaMCPUserError(f"environment variable {key} is not a MegaMCP setting{hint}")


def _one_line(exc: ValidationError, where: str) -> str:
    parts = []
    for err in exc.errors():
        loc = ".".join(str(x) for x in err["loc"]) or "settings"
        parts.append(f"{loc}: {err['msg']}")
    return f"{where}: " + "; ".join(parts)


def _read_config(config: Path) -> dict[str, Any]:
    try:
        data = tomllib.loads(Path(config).read_bytes().decode("utf-8"))
    except OSError as exc:
        raise MegaMCPUserError(f"config {config}: cannot read: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise MegaMCPUserError(
            f"config {config}: not UTF-8 (byte {exc.start}: {exc.reason})"
        ) from None
    except tomllib.TOMLDecodeError as exc:
        raise MegaMCPUserError(f"config {config}: not valid TOML: {exc}") from None
    values = data.get("megamcp", data)
    if not isinstance(values, dict):
        raise MegaMCPUserError(f"config {config}: [megamcp] must be a table")
    unknown = set(values) - set(MegaMCPSettings.model_fields)
    if unknown:
        raise MegaMCPUserError(f"config {config}: unknown setting(s) {sorted(unknown)}")
    return values


def load_settings(config: Path | None = None, **overrides: Any) -> MegaMCPSettings:
    """Settings from a TOML file (top level or a [megamcp] table), then env, then `overrides`.

    Without `config`, `./megamcp.toml` is read when it exists. Every mistake (unreadable or
    invalid file, unknown key or variable, a value out of range) raises MegaMCPUserError with
    one line naming the setting and where it came from.
    """
    if config is None and DEFAULT_CONFIG.is_file():
        config = DEFAULT_CONFIG
    file_values = _read_config(config) if config is not None else {}
    _check_env(os.environ)
    try:
        env = MegaMCPSettings()
    except ValidationError as exc:
        raise MegaMCPUserError(_one_line(exc, "environment (WEFT_MEGAMCP_*)")) from None
    explicit_env = env.model_dump(exclude_unset=True)
    flags = {k: v for k, v in overrides.items() if v is not None}
    if config is not None:
        try:  # checked alone first, so an error names the file
            MegaMCPSettings.model_validate(file_values)
        except ValidationError as exc:
            raise MegaMCPUserError(_one_line(exc, f"config {config}")) from None
    try:
        return MegaMCPSettings.model_validate({**file_values, **explicit_env, **flags})
    except ValidationError as exc:
        raise MegaMCPUserError(_one_line(exc, "settings")) from None
