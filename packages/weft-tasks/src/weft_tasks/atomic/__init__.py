"""Certified atomic-task libraries (paper §3.1.2, App. A.1)."""

from weft_tasks.atomic.bundle import BundleView, load_bundle
from weft_tasks.atomic.certify import bundle_dirs, certify_bundle
from weft_tasks.atomic.library import MCPLibrary, load_library, load_mcp_library, save_library
from weft_tasks.atomic.orthogonality import filter_orthogonal, is_subsequence, tool_coverage
from weft_tasks.atomic.synthesis import (
    SynthesisState,
    TaskValidator,
    build_task_synthesis_graph,
    certify,
)
from weft_tasks.atomic.validation import MegaMCPValidator

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
