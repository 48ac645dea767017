"""Targeted revision (§3.2.2): environment -> backend routes, task -> graph / initial state,
verifier -> verifier generation. Each revision is revalidated before it replaces anything."""

from weft_evolve.revision.environment import revise_environment, route_sources, splice_routes
from weft_evolve.revision.task import drop_node, rebind, reground
from weft_evolve.revision.verifier import revise_verifier

__all__ = [
    "drop_node",
    "rebind",
    "reground",
    "revise_environment",
    "revise_verifier",
    "route_sources",
    "splice_routes",
]
