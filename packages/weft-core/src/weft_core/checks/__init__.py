"""The completion-check evaluator: checks (weft_core.models.check) against execution evidence."""

from weft_core.checks._evaluate import evaluate, parse_checks
from weft_core.checks._evidence import (
    Evidence,
    EvidenceError,
    db_sides_read,
    evidence_from_paths,
    load_ledger,
    reads_ledger,
    reads_workspace,
    tables_read,
)
from weft_core.checks._values import json_subset, values_equal

__all__ = [
    "Evidence",
    "EvidenceError",
    "db_sides_read",
    "evaluate",
    "evidence_from_paths",
    "json_subset",
    "load_ledger",
    "parse_checks",
    "reads_ledger",
    "reads_workspace",
    "tables_read",
    "values_equal",
]
