"""JSON Schema normalization: each real-world oddity repaired, or rejected with its location."""

from __future__ import annotations

from typing import Any

import pytest

from weft_core.loaders._schema import SchemaRejected, normalize_schema


def norm(schema: Any, **kw: Any) -> tuple[dict[str, Any], list[str]]:
    warnings: list[str] = []
    return normalize_schema(schema, warn=warnings.append, **kw), warnings


def test_clean_schema_is_unchanged_and_silent() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"type": "string", "description": "x"}, "b": {"type": "integer"}},
        "required": ["a"],
        "additionalProperties": False,
    }
    out, warnings = norm(schema)
    assert out == schema
    assert out is not schema
    assert warnings == []


def test_input_is_not_mutated() -> None:
    schema = {
        "type": "dict",
        "properties": {"x": {"$ref": "#/$defs/X"}},
        "$defs": {"X": {"type": "float"}},
    }
    before = repr(schema)
    norm(schema)
    assert repr(schema) == before


def test_defs_refs_are_inlined_and_defs_removed() -> None:
    schema = {
        "type": "object",
        "properties": {"ctx": {"$ref": "#/$defs/Ctx", "description": "override"}},
        "$defs": {
            "Ctx": {
                "type": "object",
                "description": "orig",
                "properties": {"id": {"type": "string"}},
            }
        },
    }
    out, _ = norm(schema)
    assert "$defs" not in out
    assert out["properties"]["ctx"] == {
        "type": "object",
        "description": "override",
        "properties": {"id": {"type": "string"}},
    }


def test_definitions_and_pointer_into_properties() -> None:
    schema = {
        "type": "object",
        "properties": {
            "a": {"type": "array", "items": {"type": "string", "enum": ["x", "y"]}},
            "b": {"$ref": "#/properties/a/items"},
            "c": {"$ref": "#/definitions/C"},
        },
        "definitions": {"C": {"type": "integer"}},
    }
    out, _ = norm(schema)
    assert out["properties"]["b"] == {"type": "string", "enum": ["x", "y"]}
    assert out["properties"]["c"] == {"type": "integer"}
    assert "definitions" not in out


def test_property_named_like_a_keyword_is_kept() -> None:
    schema = {
        "type": "object",
        "properties": {"definitions": {"type": "string"}, "$defs": {"type": "string"}},
    }
    out, _ = norm(schema)
    assert set(out["properties"]) == {"definitions", "$defs"}


def test_recursive_ref_is_cut_with_a_warning() -> None:
    schema = {
        "type": "object",
        "properties": {"root": {"$ref": "#/$defs/Node"}},
        "$defs": {
            "Node": {
                "type": "object",
                "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}},
            }
        },
    }
    out, warnings = norm(schema)
    cut = out["properties"]["root"]["properties"]["children"]["items"]
    assert cut["type"] == "object"
    assert "Recursive reference" in cut["description"]
    assert "$ref" not in repr(out)
    assert any("recursive $ref '#/$defs/Node'" in w for w in warnings)


def test_mutual_recursion_terminates() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"$ref": "#/$defs/A"}},
        "$defs": {
            "A": {"type": "object", "properties": {"b": {"$ref": "#/$defs/B"}}},
            "B": {"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}}},
        },
    }
    out, warnings = norm(schema)
    assert "$ref" not in repr(out)
    assert len([w for w in warnings if "recursive" in w]) == 1


def test_unresolvable_and_external_refs_are_rejected_with_location() -> None:
    with pytest.raises(SchemaRejected, match=r"properties\.x: unresolvable \$ref '#/\$defs/Nope'"):
        norm({"type": "object", "properties": {"x": {"$ref": "#/$defs/Nope"}}})
    with pytest.raises(SchemaRejected, match=r"external \$ref 'https://example\.com/s\.json'"):
        norm({"type": "object", "properties": {"x": {"$ref": "https://example.com/s.json"}}})
    with pytest.raises(SchemaRejected, match=r"\$ref is a number"):
        norm({"type": "object", "properties": {"x": {"$ref": 3}}})


def test_ref_explosion_is_bounded() -> None:
    # Each level references the next four times: 4**10 nodes if fully inlined.
    defs: dict[str, Any] = {
        f"L{i}": {
            "type": "object",
            "properties": {k: {"$ref": f"#/$defs/L{i + 1}"} for k in "abcd"},
        }
        for i in range(10)
    }
    defs["L10"] = {"type": "string"}
    with pytest.raises(SchemaRejected, match="too large"):
        norm({"type": "object", "properties": {"x": {"$ref": "#/$defs/L0"}}, "$defs": defs})


def test_deep_nesting_is_rejected() -> None:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(100):
        schema = {"type": "object", "properties": {"x": schema}}
    with pytest.raises(SchemaRejected, match="nested deeper"):
        norm(schema)


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("dict", "object"),
        ("float", "number"),
        ("double", "number"),
        ("int", "integer"),
        ("bool", "boolean"),
        ("str", "string"),
        ("list", "array"),
        ("tuple", "array"),
        ("Integer", "integer"),
        (" String ", "string"),
        ("List[str]", "array"),
    ],
)
def test_type_aliases(given: str, expected: str) -> None:
    out, warnings = norm({"type": "object", "properties": {"v": {"type": given}}})
    assert out["properties"]["v"]["type"] == expected
    assert warnings


def test_date_alias_adds_format_and_any_drops_type() -> None:
    out, _ = norm(
        {"type": "object", "properties": {"d": {"type": "datetime"}, "a": {"type": "any"}}}
    )
    assert out["properties"]["d"] == {"type": "string", "format": "date-time"}
    assert out["properties"]["a"] == {}


def test_unknown_type_is_dropped_with_warning() -> None:
    out, warnings = norm(
        {"type": "object", "properties": {"v": {"type": "gizmo", "description": "d"}}}
    )
    assert out["properties"]["v"] == {"description": "d"}
    assert any("unknown type 'gizmo'" in w for w in warnings)


def test_type_list_normalized_and_deduplicated() -> None:
    out, _ = norm({"type": "object", "properties": {"v": {"type": ["int", "integer", "null"]}}})
    assert out["properties"]["v"]["type"] == ["integer", "null"]


def test_openapi_nullable() -> None:
    out, _ = norm(
        {"type": "object", "properties": {"v": {"type": "string", "nullable": True, "enum": ["a"]}}}
    )
    assert out["properties"]["v"] == {"type": ["string", "null"], "enum": ["a", None]}


@pytest.mark.parametrize(
    ("enum", "expected"),
    [
        (["a", "b"], "string"),
        ([1, 2], "integer"),
        ([1, 2.5], "number"),
        ([True, False], "boolean"),
        (["a", 1], ["string", "integer"]),
        (["a", None], ["string", "null"]),
    ],
)
def test_enum_type_inferred_from_values(enum: list[Any], expected: Any) -> None:
    out, _ = norm({"type": "object", "properties": {"v": {"enum": enum}}})
    assert out["properties"]["v"]["type"] == expected


def test_enum_contradicting_type_wins_and_warns() -> None:
    out, warnings = norm(
        {"type": "object", "properties": {"v": {"type": "integer", "enum": ["low", "high"]}}}
    )
    assert out["properties"]["v"]["type"] == "string"
    assert any("contradicts enum" in w for w in warnings)
    # integer values under a number type are fine
    out, warnings = norm(
        {"type": "object", "properties": {"v": {"type": "number", "enum": [1, 2]}}}
    )
    assert out["properties"]["v"]["type"] == "number" and warnings == []


def test_empty_and_duplicate_enums() -> None:
    out, warnings = norm(
        {
            "type": "object",
            "properties": {"e": {"type": "string", "enum": []}, "d": {"enum": ["a", "a", "b"]}},
        }
    )
    assert out["properties"]["e"] == {"type": "string"}
    assert out["properties"]["d"]["enum"] == ["a", "b"]
    assert len(warnings) == 2


def test_enum_duplicates_are_by_type_and_value() -> None:
    values = [1, 1.0, True, 1, [1], [1], {"a": 1}, {"a": 1}, None, None]
    out, warnings = norm({"type": "object", "properties": {"d": {"enum": values}}})
    assert out["properties"]["d"]["enum"] == [1, 1.0, True, [1], {"a": 1}, None]
    assert warnings and "duplicate enum values removed" in warnings[0]


def test_a_100000_value_enum_loads() -> None:
    # Comparing each value with every kept one made this take minutes (CI's limit is 60 s).
    values = [f"c{i}" for i in range(100_000)] + ["c0"]
    out, warnings = norm({"type": "object", "properties": {"c": {"enum": values}}})
    assert len(out["properties"]["c"]["enum"]) == 100_000 and len(warnings) == 1


def test_integer_with_fractional_values_becomes_number() -> None:
    out, warnings = norm(
        {
            "type": "object",
            "properties": {
                "t": {"type": "integer", "default": 0.5},
                "n": {"type": "integer", "default": 2.0},
            },
        }
    )
    assert out["properties"]["t"]["type"] == "number"
    assert out["properties"]["n"]["type"] == "integer"
    assert len(warnings) == 1


def test_missing_types_inferred_from_shape() -> None:
    out, _ = norm(
        {
            "properties": {
                "o": {"properties": {"a": {"type": "string"}}},
                "l": {"items": {"type": "string"}},
                "c": {"const": 3},
                "free": {"description": "anything"},
            }
        }
    )
    assert out["type"] == "object"
    assert out["properties"]["o"]["type"] == "object"
    assert out["properties"]["l"]["type"] == "array"
    assert out["properties"]["c"]["type"] == "integer"
    assert "type" not in out["properties"]["free"]


def test_required_naming_absent_properties_dropped() -> None:
    out, warnings = norm(
        {
            "type": "object",
            "properties": {"a": {"type": "string"}},
            "required": ["a", "ghost", "a", 7],
        }
    )
    assert out["required"] == ["a"]
    assert any("absent properties ['ghost']" in w for w in warnings)
    assert any("7" in w for w in warnings)


def test_required_at_root_without_properties_dropped() -> None:
    out, warnings = norm({"type": "object", "required": ["x"]})
    assert "required" not in out
    assert warnings


def test_required_only_branches_of_combinators_are_kept() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
        "oneOf": [{"required": ["a"]}, {"required": ["b"]}],
    }
    out, warnings = norm(schema)
    assert out["oneOf"] == [{"required": ["a"]}, {"required": ["b"]}]
    assert warnings == []


def test_draft3_required_flags_are_lifted() -> None:
    schema = {
        "type": "object",
        "properties": {
            "a": {"type": "string", "required": True},
            "b": {"type": "string", "required": False},
        },
    }
    out, _ = norm(schema)
    assert out["required"] == ["a"]
    assert "required" not in out["properties"]["a"] and "required" not in out["properties"]["b"]


def test_non_schema_property_values() -> None:
    schema = {"type": "object", "properties": {"ok": True, "never": False, "bad": "string", "n": 3}}
    out, warnings = norm(schema)
    assert out["properties"] == {"ok": {}}
    assert len(warnings) == 3
    assert any("properties.bad: property schema is a string" in w for w in warnings)


def test_whole_schema_pasted_inside_properties_is_unwrapped() -> None:
    # Seen in the Toucan corpus (rubygems server).
    schema = {
        "type": "object",
        "properties": {
            "type": "object",
            "properties": {"gem": {"type": "string", "minLength": 1}},
            "required": ["gem"],
            "additionalProperties": False,
            "$schema": "http://json-schema.org/draft-07/schema#",
        },
    }
    out, warnings = norm(schema)
    assert out["properties"] == {"gem": {"type": "string", "minLength": 1}}
    assert out["required"] == ["gem"]
    assert any("whole object schema" in w for w in warnings)


def test_tuple_items_become_prefix_items() -> None:
    out, warnings = norm(
        {
            "type": "object",
            "properties": {
                "r": {"type": "array", "items": [{"type": "number"}, {"type": "number"}]}
            },
        }
    )
    assert out["properties"]["r"] == {
        "type": "array",
        "prefixItems": [{"type": "number"}, {"type": "number"}],
    }
    assert warnings


def test_non_list_combinator_dropped_and_bad_properties_rejected() -> None:
    out, warnings = norm({"type": "object", "properties": {"a": {"anyOf": {"type": "string"}}}})
    assert out["properties"]["a"] == {}
    assert warnings
    with pytest.raises(SchemaRejected, match="'properties' is a list"):
        norm({"type": "object", "properties": [{"name": "a"}]})
    with pytest.raises(SchemaRejected, match="not a JSON object"):
        norm("object")


def test_values_are_not_treated_as_schemas() -> None:
    schema = {
        "type": "object",
        "properties": {"v": {"type": "object", "default": {"$ref": "#/nowhere", "type": "dict"}}},
    }
    out, _ = norm(schema)
    assert out["properties"]["v"]["default"] == {"$ref": "#/nowhere", "type": "dict"}


def test_root_ref_into_defs_pydantic_v1_style() -> None:
    schema = {
        "$ref": "#/definitions/Args",
        "definitions": {
            "Args": {"type": "object", "properties": {"item": {"$ref": "#/definitions/Item"}}},
            "Item": {"type": "object", "properties": {"sku": {"type": "string"}}},
        },
    }
    out, warnings = norm(schema)
    assert out == {
        "type": "object",
        "properties": {"item": {"type": "object", "properties": {"sku": {"type": "string"}}}},
    }
    assert warnings == []


def test_self_reference_to_root_is_cut() -> None:
    out, warnings = norm({"type": "object", "properties": {"child": {"$ref": "#"}}})
    assert out["properties"]["child"]["properties"]["child"]["type"] == "object"
    assert (
        "Recursive reference to #"
        in out["properties"]["child"]["properties"]["child"]["description"]
    )
    assert len(warnings) == 1


def test_boolean_schemas_through_refs() -> None:
    out, _ = norm({"$ref": "#/$defs/Any", "$defs": {"Any": True}})
    assert out == {}
    with pytest.raises(SchemaRejected, match="resolves to false"):
        norm({"$ref": "#/$defs/No", "$defs": {"No": False}})
    with pytest.raises(SchemaRejected, match="points at a string"):
        norm({"type": "object", "properties": {"a": {"$ref": "#/$defs/S"}}, "$defs": {"S": "str"}})


def test_long_ref_alias_chain_is_rejected_not_a_crash() -> None:
    defs: dict[str, Any] = {f"A{i}": {"$ref": f"#/$defs/A{i + 1}"} for i in range(5000)}
    defs["A5000"] = {"type": "string"}
    with pytest.raises(SchemaRejected, match="nested deeper"):
        norm({"type": "object", "properties": {"x": {"$ref": "#/$defs/A0"}}, "$defs": defs})
    short = {f"A{i}": {"$ref": f"#/$defs/A{i + 1}"} for i in range(5)}
    short["A5"] = {"type": "string"}
    out, _ = norm({"type": "object", "properties": {"x": {"$ref": "#/$defs/A0"}}, "$defs": short})
    assert out["properties"]["x"] == {"type": "string"}
