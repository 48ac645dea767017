"""weft-toolspace: tool-centric task synthesis from real execution traces (ToolSpace §3–4)."""

from weft_toolspace.clusters import cluster, environment_of
from weft_toolspace.exceptions import ToolSpaceError, ToolSpaceRuntimeError, ToolSpaceUserError
from weft_toolspace.graph import ToolGraph, build_graph
from weft_toolspace.models import (
    Chain,
    ChainStep,
    EdgeKind,
    EdgeRecord,
    Environment,
    EnvironmentKind,
    NodeRecord,
    TraceCall,
    TraceRecord,
)
from weft_toolspace.synthesize import synthesize
from weft_toolspace.traces import (
    from_group_ledger,
    from_openai_messages,
    from_weft_trace,
    load_traces,
)
from weft_toolspace.walk import WalkConfig, Walker
from weft_toolspace.writers import LLMTaskWriter, ProgrammaticTaskWriter, TaskWriter

__version__ = "0.1.0"

__all__ = [
    "Chain",
    "ChainStep",
    "EdgeKind",
    "EdgeRecord",
    "Environment",
    "EnvironmentKind",
    "LLMTaskWriter",
    "NodeRecord",
    "ProgrammaticTaskWriter",
    "TaskWriter",
    "ToolGraph",
    "ToolSpaceError",
    "ToolSpaceRuntimeError",
    "ToolSpaceUserError",
    "TraceCall",
    "TraceRecord",
    "WalkConfig",
    "Walker",
    "__version__",
    "build_graph",
    "cluster",
    "environment_of",
    "from_group_ledger",
    "from_openai_messages",
    "from_weft_trace",
    "load_traces",
    "synthesize",
]
