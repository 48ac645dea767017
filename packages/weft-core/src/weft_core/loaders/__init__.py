"""Spec loaders: MCP tools/list results, OpenAI/BFCL function docs, Weft MCPSpecs and Toucan
server metadata, normalized into `MCPSpec`s with every repair reported and every rejection named.
"""

from weft_core.loaders._formats import SpecFormat, detect_format
from weft_core.loaders._load import load_spec_dict, load_spec_file, load_spec_files
from weft_core.loaders._result import LoadedSpec, RejectedTool, SpecBatch

__all__ = [
    "LoadedSpec",
    "RejectedTool",
    "SpecBatch",
    "SpecFormat",
    "detect_format",
    "load_spec_dict",
    "load_spec_file",
    "load_spec_files",
]
