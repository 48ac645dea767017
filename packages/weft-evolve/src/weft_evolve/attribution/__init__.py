"""Failure attribution (§3.2.2): contract conformance, rules, and the attribution agent."""

from weft_evolve.attribution.agent import (
    AttributionContext,
    LLMVerdict,
    attribute,
    build_attribution_graph,
    evidence_packet,
)
from weft_evolve.attribution.conformance import CallJudgement, judge_call
from weft_evolve.attribution.rubric import judge_rubric, rubric_for
from weft_evolve.attribution.rules import NodeDiagnosis, coverage_gaps, decide_unit, diagnose_node

__all__ = [
    "AttributionContext",
    "CallJudgement",
    "LLMVerdict",
    "NodeDiagnosis",
    "attribute",
    "build_attribution_graph",
    "coverage_gaps",
    "decide_unit",
    "diagnose_node",
    "evidence_packet",
    "judge_call",
    "judge_rubric",
    "rubric_for",
]
