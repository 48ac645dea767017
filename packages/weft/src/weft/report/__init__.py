"""`weft report`: one self-contained HTML page of a run folder — figures of environments, tasks,
rollouts, tool errors, evolution rounds and training curves, and a trace viewer."""

from weft.report.data import RunData, load_run
from weft.report.formats import EvolutionRounds, TrainingCurves
from weft.report.page import build_report, render_report

__all__ = [
    "EvolutionRounds",
    "RunData",
    "TrainingCurves",
    "build_report",
    "load_run",
    "render_report",
]
