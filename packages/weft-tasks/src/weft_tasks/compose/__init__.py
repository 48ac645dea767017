"""Coverage-aware sampling and grounded task-graph composition (paper §3.1.2, App. A.2)."""

from weft_tasks.compose.coherence import build_coherence_graph, check_coherence
from weft_tasks.compose.composer import CompositionState, build_composition_graph, compose_graph
from weft_tasks.compose.dag_checks import GraphIssue, check_graph, stable_order
from weft_tasks.compose.pipeline import Composer, CorpusReport, compose_tasks
from weft_tasks.compose.profiles import (
    DEFAULT_PROFILES,
    Profile,
    ProfileSet,
    largest_remainder,
    load_profiles,
)
from weft_tasks.compose.sampler import CoverageSampler

__all__ = [
    "DEFAULT_PROFILES",
    "Composer",
    "CompositionState",
    "CorpusReport",
    "CoverageSampler",
    "GraphIssue",
    "Profile",
    "ProfileSet",
    "build_coherence_graph",
    "build_composition_graph",
    "check_coherence",
    "check_graph",
    "compose_graph",
    "compose_tasks",
    "largest_remainder",
    "load_profiles",
    "stable_order",
]
