"""A generated verifier: checks plus rubric for one node, versioned."""

from __future__ import annotations

from pydantic import Field

from weft_core.models import Check
from weft_core.models._base import Artifact, WeftModel
from weft_evolve.attribution.rubric import RubricItem


class VerifierTest(WeftModel):
    """One test a generated verifier ran: on the reference evidence or a perturbation of it."""

    name: str
    expect_pass: bool
    passed: bool
    detail: str = ""

    @property
    def ok(self) -> bool:
        return self.passed == self.expect_pass


class GeneratedVerifier(Artifact):
    """Checks and rubric for one node of one task, from an accepted reference execution."""

    task_id: str
    node_id: str
    checks: list[Check] = Field(default_factory=list)
    rubric: list[RubricItem] = Field(default_factory=list)
    reference_hash: str = Field(default="", description="Task version whose reference it rests on.")
    strategy: str = "programmatic"
    tests: list[VerifierTest] = Field(default_factory=list)
    feedback: list[str] = Field(default_factory=list, description="What each revision fixed.")

    @property
    def tests_pass(self) -> bool:
        return bool(self.tests) and all(t.ok for t in self.tests)
