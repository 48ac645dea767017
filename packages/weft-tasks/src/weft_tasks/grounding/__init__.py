"""Progressive state grounding and reachability (paper §3.1.2)."""

from weft_tasks.grounding.agent import GroundingState, build_grounding_graph, ground
from weft_tasks.grounding.reachability import (
    ReplayReport,
    register_snapshots,
    replay,
    restore_snapshots,
    write_snapshots,
)

__all__ = [
    "GroundingState",
    "ReplayReport",
    "build_grounding_graph",
    "ground",
    "register_snapshots",
    "replay",
    "restore_snapshots",
    "write_snapshots",
]
