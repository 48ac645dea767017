"""weft-envsynth: certified, stateful MCP environments (EnvBundles) synthesized from tool definitions."""

from weft_envsynth.errors import (
    BundleError,
    EnvSynthError,
    EnvSynthRuntimeError,
    EnvSynthUserError,
    SpecRejected,
)
from weft_envsynth.graph import build_envsynth_graph
from weft_envsynth.loader import create_bundle_server, import_bundle
from weft_envsynth.pipeline import SynthResult, synthesize_file, synthesize_files, synthesize_spec
from weft_envsynth.state import EnvSynthContext, EnvSynthState
from weft_envsynth.stateimport import StateImportReport, import_state
from weft_envsynth.statesnapshot import StateSnapshot, build_initial_state, snapshot_from_state

__version__ = "0.1.0"

__all__ = [
    "BundleError",
    "EnvSynthContext",
    "EnvSynthError",
    "EnvSynthRuntimeError",
    "EnvSynthState",
    "EnvSynthUserError",
    "SpecRejected",
    "StateImportReport",
    "StateSnapshot",
    "SynthResult",
    "__version__",
    "build_envsynth_graph",
    "build_initial_state",
    "create_bundle_server",
    "import_bundle",
    "import_state",
    "snapshot_from_state",
    "synthesize_file",
    "synthesize_files",
    "synthesize_spec",
]
