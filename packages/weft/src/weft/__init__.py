"""weft: the pipeline command — specs -> environments -> atomic tasks -> composed tasks ->
rollouts -> verified traces, resumable by content hash."""

from weft.config import PipelineConfig, load_config, parse_config
from weft.errors import ConfigError, PipelineError, StageError
from weft.pipeline import run_pipeline
from weft.summary import PipelineSummary, print_summary

__all__ = [
    "ConfigError",
    "PipelineConfig",
    "PipelineError",
    "PipelineSummary",
    "StageError",
    "load_config",
    "parse_config",
    "print_summary",
    "run_pipeline",
]
