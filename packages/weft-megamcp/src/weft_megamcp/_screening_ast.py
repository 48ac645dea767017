"""The syntax-tree helpers of the server-module screen (see weft_megamcp.screening): names,
literals, scopes, and which functions a server registers or empties state in."""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from weft_megamcp._screening_rules import _BINDING_NAMES, _MUTABLE_CONSTRUCTORS


def _dotted(node: ast.AST) -> str | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def _root_name(node: ast.AST) -> str | None:
    """The variable a subscript/attribute chain hangs off (`x` for `x.a[1].b`)."""
    while isinstance(node, ast.Attribute | ast.Subscript):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _is_mutable_value(node: ast.AST | None) -> bool:
    if node is None:
        return False
    if isinstance(node, ast.Dict | ast.List | ast.Set | ast.DictComp | ast.ListComp | ast.SetComp):
        return True
    if isinstance(node, ast.Call):
        name = _dotted(node.func)
        return name is not None and name.rsplit(".", 1)[-1] in _MUTABLE_CONSTRUCTORS
    return False


def _is_absolute_path_literal(node: ast.AST) -> bool:
    if not isinstance(node, ast.Constant) or not isinstance(node.value, str):
        return False
    text = node.value
    if text.startswith("sqlite:///"):
        text = text[len("sqlite:///") :]
        if text in ("", ":memory:"):
            return False
    return (text.startswith("/") and len(text) > 1) or (
        len(text) > 2 and text[1:3] in (":\\", ":/")
    )


def _string_literal(node: ast.AST) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def _names_in(node: ast.AST) -> set[str]:
    out: set[str] = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name):
            out.add(sub.id)
        elif isinstance(sub, ast.Attribute):
            out.add(sub.attr)
    return out


def _bound_names(target: ast.AST) -> Iterator[str]:
    if isinstance(target, ast.Name):
        yield target.id
    elif isinstance(target, ast.Tuple | ast.List):
        for elt in target.elts:
            yield from _bound_names(elt)
    elif isinstance(target, ast.Starred):
        yield from _bound_names(target.value)


def _own_nodes(body: Sequence[ast.AST]) -> Iterator[ast.AST]:
    """Nodes of a scope, not descending into nested functions, lambdas or classes."""
    stack = list(reversed(body))
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            continue
        for child in reversed(list(ast.iter_child_nodes(node))):
            if isinstance(
                child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda
            ):
                yield child  # the definition itself binds a name in this scope
                continue
            stack.append(child)


@dataclass
class _Scope:
    kind: str  # "module" | "function" | "class"
    name: str
    locals: set[str] = field(default_factory=set)
    mutables: set[str] = field(default_factory=set)
    globals_declared: set[str] = field(default_factory=set)
    nonlocals_declared: set[str] = field(default_factory=set)
    uses_binding: bool = False
    # A function that registers tools/routes is a server factory: it runs once per server
    # instance, so its locals outlive a call and every session shares them. Any other function's
    # locals are fresh per call, and a nested helper writing them shares nothing.
    registers_handlers: bool = False


# Decorators that register a handler with an MCP server or a web app (`@mcp.tool`, `@app.get(...)`).
_REGISTERING_DECORATORS = {
    "tool", "resource", "prompt", "route", "api_route", "websocket",
    "get", "post", "put", "patch", "delete",
}  # fmt: skip
# Calls that register one. HTTP verbs are not among them: `d.get(k)` or `requests.post(...)` in a
# per-request helper would make it look like a server factory.
_REGISTERING_CALLS = {
    "tool", "resource", "prompt", "add_tool", "add_resource", "add_prompt", "add_route",
    "add_api_route", "add_websocket_route", "include_router", "mount",
}  # fmt: skip


def _registers(node: ast.AST) -> bool:
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        return any(
            _last_name(d.func if isinstance(d, ast.Call) else d) in _REGISTERING_DECORATORS
            for d in node.decorator_list
        )
    return isinstance(node, ast.Call) and _last_name(node.func) in _REGISTERING_CALLS


def _last_name(node: ast.AST) -> str:
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def _collect_scope(kind: str, name: str, node: ast.AST, body: Sequence[ast.AST]) -> _Scope:
    scope = _Scope(kind=kind, name=name)
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
        a = node.args
        for arg in [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg]:
            if arg is not None:
                scope.locals.add(arg.arg)
    for sub in _own_nodes(body):
        if kind == "function" and _registers(sub):
            scope.registers_handlers = True
        if isinstance(sub, ast.Global):
            scope.globals_declared.update(sub.names)
        elif isinstance(sub, ast.Nonlocal):
            scope.nonlocals_declared.update(sub.names)
        elif isinstance(sub, ast.Assign):
            for t in sub.targets:
                for n in _bound_names(t):
                    scope.locals.add(n)
                    if _is_mutable_value(sub.value):
                        scope.mutables.add(n)
        elif isinstance(sub, ast.AnnAssign | ast.AugAssign):
            for n in _bound_names(sub.target):
                scope.locals.add(n)
                if isinstance(sub, ast.AnnAssign) and _is_mutable_value(sub.value):
                    scope.mutables.add(n)
        elif isinstance(sub, ast.For | ast.AsyncFor | ast.comprehension):
            scope.locals.update(_bound_names(sub.target))
        elif isinstance(sub, ast.With | ast.AsyncWith):
            for item in sub.items:
                if item.optional_vars is not None:
                    scope.locals.update(_bound_names(item.optional_vars))
        elif isinstance(sub, ast.NamedExpr):
            scope.locals.update(_bound_names(sub.target))
        elif isinstance(sub, ast.ExceptHandler) and sub.name:
            scope.locals.add(sub.name)
        elif isinstance(sub, ast.Import | ast.ImportFrom):
            for alias in sub.names:
                scope.locals.add((alias.asname or alias.name).split(".")[0])
        elif isinstance(sub, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            scope.locals.add(sub.name)
        if (isinstance(sub, ast.Name) and sub.id in _BINDING_NAMES) or (
            isinstance(sub, ast.Attribute) and sub.attr in _BINDING_NAMES
        ):
            scope.uses_binding = True
    scope.locals -= scope.globals_declared | scope.nonlocals_declared
    return scope


_EMPTYING_METHODS = {"pop", "popitem", "clear", "discard", "remove"}


def release_hook_names(tree: ast.AST) -> set[str]:
    """Names of functions passed to `register_release_hook(...)` anywhere in `tree`."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args:
            callee = _dotted(node.func) or ""
            if callee.rsplit(".", 1)[-1] == "register_release_hook":
                target = _dotted(node.args[0])
                if target:
                    out.add(target.rsplit(".", 1)[-1])
    return out


def _emptied_names(fn: ast.AST) -> set[str]:
    """Containers a (release hook) function removes entries from."""
    out: set[str] = set()
    for node in ast.walk(fn):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in _EMPTYING_METHODS
        ):
            root = _root_name(node.func.value)
            if root:
                out.add(root)
        elif isinstance(node, ast.Delete):
            for t in node.targets:
                root = _root_name(t) if isinstance(t, ast.Subscript) else None
                if root:
                    out.add(root)
    return out
