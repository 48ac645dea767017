"""Certified atomic-task libraries (paper §3.1.2, App. A.1).

Names are imported on first use: `weft_tasks.atomic.megamcp` (the host client) is needed before
synthesis and its LangGraph/LangChain imports are, and the CLI starts the host while those load.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from weft_tasks.atomic.bundle import BundleView, load_bundle
    from weft_tasks.atomic.certify import bundle_dirs, certify_bundle
    from weft_tasks.atomic.library import (
        MCPLibrary,
        load_library,
        load_mcp_library,
        save_library,
    )
    from weft_tasks.atomic.orthogonality import filter_orthogonal, is_subsequence, tool_coverage
    from weft_tasks.atomic.synthesis import (
        SynthesisState,
        TaskValidator,
        build_task_synthesis_graph,
        certify,
    )
    from weft_tasks.atomic.validation import MegaMCPValidator

_HOME = {
    "BundleView": "bundle",
    "load_bundle": "bundle",
    "bundle_dirs": "certify",
    "certify_bundle": "certify",
    "MCPLibrary": "library",
    "load_library": "library",
    "load_mcp_library": "library",
    "save_library": "library",
    "filter_orthogonal": "orthogonality",
    "is_subsequence": "orthogonality",
    "tool_coverage": "orthogonality",
    "SynthesisState": "synthesis",
    "TaskValidator": "synthesis",
    "build_task_synthesis_graph": "synthesis",
    "certify": "synthesis",
    "MegaMCPValidator": "validation",
}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value


__all__ = [
    "BundleView",
    "MCPLibrary",
    "MegaMCPValidator",
    "SynthesisState",
    "TaskValidator",
    "build_task_synthesis_graph",
    "bundle_dirs",
    "certify",
    "certify_bundle",
    "filter_orthogonal",
    "is_subsequence",
    "load_bundle",
    "load_library",
    "load_mcp_library",
    "save_library",
    "tool_coverage",
]
