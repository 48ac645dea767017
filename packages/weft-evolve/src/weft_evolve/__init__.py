"""weft-evolve: execution-driven self-evolution (paper §3.2)."""

from weft_evolve.attribution import AttributionContext, attribute, build_attribution_graph
from weft_evolve.models import Attribution, Component, Fix, Revision, RoundRecord
from weft_evolve.report import print_report, write_report
from weft_evolve.rounds import EvolveWorld, evolve, run_round
from weft_evolve.settings import EvolveSettings
from weft_evolve.verifier import VerifierStore, build_verifier_graph, generate_verifier

__version__ = "0.1.0"

__all__ = [
    "Attribution",
    "AttributionContext",
    "Component",
    "EvolveSettings",
    "EvolveWorld",
    "Fix",
    "Revision",
    "RoundRecord",
    "VerifierStore",
    "__version__",
    "attribute",
    "build_attribution_graph",
    "build_verifier_graph",
    "evolve",
    "generate_verifier",
    "print_report",
    "run_round",
    "write_report",
]
