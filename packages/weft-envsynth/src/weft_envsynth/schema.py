"""Node 2, schema: the shared SQLModel schema (types, foreign keys, uniqueness, enums) as models.py.

Programmatic strategy: the analysis entities, checked and normalized. LLM strategy: the model
returns an EntityModel, accepted only if it passes `check_schema` and keeps every field the tool
contracts will need; otherwise the programmatic schema is used.
"""

from __future__ import annotations

from langchain_core.language_models import BaseChatModel

from weft_core.models import EntityModel, MCPSpec
from weft_envsynth._internal import words as W
from weft_envsynth.plans import Analysis

_PY_TYPES = {
    "string": "str",
    "integer": "int",
    "number": "float",
    "boolean": "bool",
    "date": "str",
    "datetime": "str",
    "json": "Any",
}


def schema_programmatic(spec: MCPSpec, analysis: Analysis) -> EntityModel:
    return EntityModel(
        mcp=spec.slug, entities=list(analysis.entities), relations=list(analysis.relations)
    )


def check_schema(model: EntityModel, analysis: Analysis | None = None) -> list[str]:
    """Problems that would make models.py wrong or unusable (empty list when it is fine)."""
    problems: list[str] = []
    ents = {e.name: e for e in model.entities}
    if len(ents) != len(model.entities):
        problems.append("duplicate entity names")
    for e in model.entities:
        if W.identifier(e.name) != e.name:
            problems.append(f"entity {e.name!r}: not a snake_case identifier")
        keys = [f for f in e.fields if f.primary_key]
        if len(keys) != 1 or keys[0].name != e.key:
            problems.append(f"entity {e.name!r}: needs exactly one primary key named {e.key!r}")
        names = [f.name for f in e.fields]
        if len(set(names)) != len(names):
            problems.append(f"entity {e.name!r}: duplicate field names")
        for f in e.fields:
            if W.identifier(f.name) != f.name:
                problems.append(f"field {e.name}.{f.name}: not a snake_case identifier")
            if f.foreign_key:
                tgt, _, tf = f.foreign_key.partition(".")
                if tgt not in ents or tf != ents[tgt].key:
                    problems.append(
                        f"field {e.name}.{f.name}: foreign key {f.foreign_key!r} is not an entity key"
                    )
            if f.enum is not None and (not f.enum or f.type != "string"):
                problems.append(f"field {e.name}.{f.name}: enum needs string values")
    if analysis is not None:
        for need in analysis.entities:
            have = ents.get(need.name)
            if have is None:
                problems.append(f"entity {need.name!r} from the analysis is missing")
                continue
            have_fields = {f.name: f for f in have.fields}
            for f in need.fields:
                if f.name not in have_fields:
                    problems.append(f"field {need.name}.{f.name} needed by the tools is missing")
                elif have_fields[f.name].type != f.type:
                    problems.append(
                        f"field {need.name}.{f.name} has type {have_fields[f.name].type}, tools need {f.type}"
                    )
                elif f.enum and set(f.enum) - set(have_fields[f.name].enum or f.enum):
                    problems.append(f"field {need.name}.{f.name} lacks enum values the tools use")
    return problems


def schema(
    spec: MCPSpec,
    analysis: Analysis,
    llm: BaseChatModel | None = None,
    feedback: list[str] | None = None,
) -> tuple[EntityModel, list[str]]:
    base = schema_programmatic(spec, analysis)
    if llm is None:
        return base, []
    from weft_envsynth._internal.llm import ask_or_none

    prompt = (
        "Write the shared database schema (an EntityModel: entities with typed fields, one primary key "
        "each, foreign keys 'entity.key', unique and enum constraints) for this MCP server.\n"
        f"Analysis: {analysis.model_dump_json()}\n"
    )
    if feedback:
        prompt += "Validation found these structural errors; fix them:\n- " + "\n- ".join(
            feedback[:20]
        )
    proposed, err = ask_or_none(llm, EntityModel, prompt)
    if proposed is None:
        return base, [f"schema: model output unusable ({err}); used programmatic schema"]
    proposed = proposed.model_copy(update={"mcp": spec.slug})
    problems = check_schema(proposed, analysis)
    if problems:
        return base, [f"schema: model schema rejected ({problems[0]}); used programmatic"]
    return proposed, ["schema: model schema accepted"]


def _enum_check(table: str, field: str, values: list[str]) -> str:
    quoted = ", ".join("'" + v.replace("'", "''") + "'" for v in values)
    sql = f"{field} IS NULL OR {field} IN ({quoted})"
    return f"sa.CheckConstraint({sql!r}, name={'ck_' + table + '_' + field!r})"


_CLASS_RESERVED = {"Base", "SQLModel", "Field", "Any", "Optional", "TABLES"}


def model_class(entity: str) -> str:
    """The class name models.py gives an entity's table."""
    cname = W.class_name(entity)
    return f"{cname}Row" if cname in _CLASS_RESERVED else cname


def render_models(model: EntityModel, *, title: str) -> str:
    """models.py: one SQLModel table per entity on a registry of its own, so many bundles coexist."""
    lines = [
        f'"""SQLModel tables of the {title!s} environment (generated by weft-envsynth)."""',
        "",
        "from typing import Any, Optional",
        "",
        "import sqlalchemy as sa",
        "from sqlalchemy.orm import registry",
        "from sqlmodel import Field, SQLModel",
        "",
        "",
        "# Named constraints, so later schema revisions (alembic batch mode) can alter or drop them.",
        "NAMING = {",
        '    "ix": "ix_%(table_name)s_%(column_0_name)s",',
        '    "uq": "uq_%(table_name)s_%(column_0_name)s",',
        '    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",',
        '    "pk": "pk_%(table_name)s",',
        "}",
        "",
        "",
        "class Base(SQLModel, registry=registry(metadata=sa.MetaData(naming_convention=NAMING))):",
        '    """Tables of this bundle only; a separate registry keeps equal table names of other bundles apart."""',
        "",
        "",
    ]
    classes: list[str] = []
    for e in model.entities:
        cname = model_class(e.name)
        classes.append(cname)
        lines.append(f"class {cname}(Base, table=True):")
        doc = (e.description or e.name).replace('"', "'").replace("\\", "/").strip().splitlines()
        lines.append(f'    """{(doc[0] if doc else e.name)[:150]}"""')
        lines.append("")
        lines.append(f'    __tablename__ = "{e.name}"')
        checks = [_enum_check(e.name, f.name, f.enum) for f in e.fields if f.enum]
        if checks:
            lines.append("    __table_args__ = (")
            for c in checks:
                lines.append(f"        {c},")
            lines.append("    )")
        lines.append("")
        for f in e.fields:
            py = _PY_TYPES[f.type]
            args: list[str] = []
            if f.primary_key:
                args.append("primary_key=True")
                if f.type == "integer":
                    lines.append(
                        f"    {f.name}: Optional[int] = Field(default=None, primary_key=True)"
                    )
                else:
                    lines.append(f"    {f.name}: {py} = Field(primary_key=True)")
                continue
            if f.type == "json":
                lines.append(f"    {f.name}: Optional[Any] = Field(default=None, sa_type=sa.JSON)")
                continue
            args.append("default=None")
            if f.foreign_key:
                args.append(f'foreign_key="{f.foreign_key}"')
                args.append("index=True")
            if f.unique:
                args.append("unique=True")
            lines.append(f"    {f.name}: Optional[{py}] = Field({', '.join(args)})")
        lines.append("")
        lines.append("")
    lines.append(
        "TABLES = {" + ", ".join(f'"{e.name}": {model_class(e.name)}' for e in model.entities) + "}"
    )
    lines.append("")
    return "\n".join(lines)
