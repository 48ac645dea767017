"""Targeted revision changes only the selected component."""

from weft_evolve.revision import drop_node, rebind, route_sources, splice_routes

from ..conftest import make_replay

SERVER = '''
ROUTES = {}


@router.post("/a")
def tool_a(body):
    """A."""
    return 1


@router.post("/b")
def tool_b(body):
    """B."""
    return 2
'''


def test_splice_replaces_only_selected_routes():
    broken = SERVER.replace(
        '    """A."""\n    return 1', '    """A."""\n    raise RuntimeError("x")'
    )
    broken = broken.replace("return 2", "return 2  # b differs too")
    fixed, changed = splice_routes(broken, SERVER, ["a"])
    assert changed == ["a"]
    assert route_sources(fixed)["a"] == route_sources(SERVER)["a"]
    assert route_sources(fixed)["b"] == route_sources(broken)["b"]  # not selected: untouched


def test_rebind_takes_the_value_the_fixture_names(graph):
    node = graph.node("n1")
    wrong = [i.model_copy(update={"value": "ORD-901"}) for i in node.inputs]
    g = graph.model_copy(deep=True)
    g.nodes[0] = node.model_copy(
        update={"inputs": wrong, "task": node.task.model_copy(update={"inputs": wrong})}
    )
    new, changes = rebind(g, "n1", "order_id", make_replay(graph))
    assert new is not None and new.version == graph.version + 1
    assert new.node("n1").inputs[0].value == "ORD-1" and "ORD-901" in changes[0]
    assert new.node("n2") == g.node("n2")  # the other node keeps its semantics


def test_rebind_without_a_source_returns_none_and_drop_removes_the_node(graph):
    node = graph.node("n2")
    inputs = [i for i in node.inputs if i.name != "status"]
    g = graph.model_copy(deep=True)
    g.nodes[1] = node.model_copy(update={"inputs": inputs})
    new, _ = rebind(g, "n2", "status", make_replay(graph))
    assert new is None
    dropped, changes = drop_node(g, "n2")
    assert changes == ["dropped node(s) ['n2']"]
    assert (
        dropped is not None and [n.id for n in dropped.nodes] == ["n1"] and dropped.order == ["n1"]
    )
