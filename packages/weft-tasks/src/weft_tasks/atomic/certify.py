"""Certify bundles into atomic-task libraries: the entry point the CLI and the `weft` pipeline use."""

from __future__ import annotations

from pathlib import Path

from langchain_core.language_models import BaseChatModel
from pydantic import BaseModel, Field

from weft_core.exceptions import UserError
from weft_core.llm import model_display_name
from weft_megamcp.service import GroupService
from weft_tasks.atomic.bundle import load_bundle
from weft_tasks.atomic.library import MCPLibrary, load_mcp_library, save_library
from weft_tasks.atomic.megamcp import Registrar
from weft_tasks.atomic.synthesis import certify
from weft_tasks.atomic.validation import MegaMCPValidator
from weft_tasks.settings import TasksSettings


class MCPOutcome(BaseModel):
    """What certification made of one bundle."""

    bundle: str
    mcp: str | None = None
    domain: str | None = None
    tools: int = 0
    retained: int = 0
    coverage: float = 0.0
    rounds: int = 0
    stop_reason: str | None = None
    failures: int = 0
    error: str | None = Field(default=None, description="Why no library was written.")


async def certify_bundle(
    bundle_dir: str | Path,
    client: GroupService,
    library_root: str | Path,
    *,
    llm: BaseChatModel | None = None,
    settings: TasksSettings | None = None,
    validator: MegaMCPValidator | None = None,
    registrar: Registrar | None = None,
) -> MCPLibrary:
    """Run Algorithm 1 on one bundle against MegaMCP and save its library. Raises
    `weft_tasks.exceptions.BundleError` for an unusable bundle and `LibraryError` when no task
    of the MCP could be certified (nothing is written then)."""
    from weft_tasks.exceptions import LibraryError

    settings = settings or TasksSettings()
    bundle = load_bundle(bundle_dir)
    validator = validator or MegaMCPValidator(
        client, concurrency=settings.concurrency, registrar=registrar
    )
    state = await certify(
        bundle,
        validator,
        llm=llm,
        budget=settings.round_budget,
        target=settings.target_coverage,
        max_chain=settings.max_chain_length,
    )
    if not state.retained:
        why = state.failures[-1].diagnostic if state.failures else state.stop_reason
        raise LibraryError(f"{bundle.mcp}: no certifiable atomic task ({why})")
    folder = save_library(library_root, bundle, state, strategy=model_display_name(llm))
    return load_mcp_library(folder)


def bundle_dirs(paths: list[str | Path]) -> list[Path]:
    """Bundle folders named directly, or found one level below a folder of bundles."""
    out: list[Path] = []
    for p in map(Path, paths):
        if (p / "spec.json").exists() or (p / "manifest.json").exists():
            out.append(p)
        elif p.is_dir():
            found = sorted(c for c in p.iterdir() if (c / "spec.json").exists())
            if not found:
                raise UserError(f"{p}: neither a bundle nor a folder of bundles (no spec.json)")
            out.extend(found)
        else:
            raise UserError(f"{p}: no such bundle folder")
    return out
