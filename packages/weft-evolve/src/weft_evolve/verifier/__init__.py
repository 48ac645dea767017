"""Verifier generation from execution evidence (§3.2.1): checks + rubric, tested, versioned."""

from weft_evolve.verifier.agent import VerifierContext, build_verifier_graph, generate_verifier
from weft_evolve.verifier.generate import accept_reference, programmatic_checks
from weft_evolve.verifier.models import GeneratedVerifier, VerifierTest
from weft_evolve.verifier.store import VerifierStore
from weft_evolve.verifier.testing import perturbations, test_checks

__all__ = [
    "GeneratedVerifier",
    "VerifierContext",
    "VerifierStore",
    "VerifierTest",
    "accept_reference",
    "build_verifier_graph",
    "generate_verifier",
    "perturbations",
    "programmatic_checks",
    "test_checks",
]
