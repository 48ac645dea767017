"""Which tools the specialised runtimes serve (SQL statements, a version-controlled repository, a
record graph): one binding that analyze, backend, validate and state import all read.

The rules (`sqlsem`, `vcssem`, `graphsem`) bind a tool set from its definitions; a chat model may
bind it instead (`bindmodel`), and its checked answer is kept in the `Analysis` and saved in the
bundle as `bindings.json`, because a saved bundle is served, validated again and given imported
state without the model. No `bindings` (None, no file) means the rules' binding, so a run without
a model computes exactly what it always did and writes no extra file.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from weft_core.models import MCPSpec, WeftModel, atomic_write_text
from weft_envsynth.errors import BundleError
from weft_envsynth.graphsem import GraphToolSet, graph_tool_set
from weft_envsynth.sqlsem import SqlSemantics, sql_tool_set
from weft_envsynth.vcssem import VcsSemantics, vcs_tool_set

BINDINGS_FILE = "bindings.json"


class ToolBindings(WeftModel):
    """Per family, the tools it serves and how (each tool in one family at most)."""

    sql: dict[str, SqlSemantics] = Field(default_factory=dict)
    vcs: dict[str, VcsSemantics] = Field(default_factory=dict)
    graph: GraphToolSet = Field(default_factory=GraphToolSet)
    source: str = Field(default="rules", description="Who bound the tools: 'rules' or 'model'.")


def rule_bindings(spec: MCPSpec) -> ToolBindings:
    return ToolBindings(sql=sql_tool_set(spec), vcs=vcs_tool_set(spec), graph=graph_tool_set(spec))


# Per family, so that a call site needing one family computes only that one, as before.
def sql_tools(spec: MCPSpec, bindings: ToolBindings | None) -> dict[str, SqlSemantics]:
    return sql_tool_set(spec) if bindings is None else bindings.sql


def vcs_tools(spec: MCPSpec, bindings: ToolBindings | None) -> dict[str, VcsSemantics]:
    return vcs_tool_set(spec) if bindings is None else bindings.vcs


def graph_tools(spec: MCPSpec, bindings: ToolBindings | None) -> GraphToolSet:
    return graph_tool_set(spec) if bindings is None else bindings.graph


def save_bindings(folder: Path, bindings: ToolBindings | None) -> None:
    """`bindings.json` when a binding other than the rules' was chosen; none otherwise (a stale
    one from an earlier write of the folder would outlive the choice)."""
    path = folder / BINDINGS_FILE
    if bindings is None:
        path.unlink(missing_ok=True)
        return
    atomic_write_text(path, bindings.model_dump_json(indent=2) + "\n")


def load_bindings(folder: Path) -> ToolBindings | None:
    """The binding a bundle was built with; None (the rules') when it saved none."""
    path = folder / BINDINGS_FILE
    if not path.is_file():
        return None
    try:
        return ToolBindings.model_validate_json(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise BundleError(f"{folder}: {BINDINGS_FILE} is not readable ({exc})") from exc
