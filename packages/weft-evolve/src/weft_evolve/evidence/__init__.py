"""Evidence for attribution (§3.2.2): reference replay on fresh clones through MegaMCP, the state
each node leaves, failure units from traces, cross-view patterns and MegaMCP's per-tool stats."""

from weft_evolve.evidence.probe import STATE_PROBE, StateProbe
from weft_evolve.evidence.replay import replay_reference
from weft_evolve.evidence.stats import read_tool_stats
from weft_evolve.evidence.units import cross_view_patterns, failure_units

__all__ = [
    "STATE_PROBE",
    "StateProbe",
    "cross_view_patterns",
    "failure_units",
    "read_tool_stats",
    "replay_reference",
]
