"""The REST reference page, read from the app's OpenAPI schema (`docs/generate.py` writes it).

Per path and method: its summary and description, a parameter table, the request body's fields
(type, default, whether required, description) and what a success returns; then every schema the
answers and bodies use, each with its fields, and each enum with its values. A type reads as a
person would say it ("integer (1–10,000)", "one of `on_demand`, `spot`", "array of string"), never
as a bare "?".
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from docs.markdown_text import cell, number, values

__all__ = ["api_page", "type_text"]

Schema = Mapping[str, Any]
REF_PREFIX = "#/components/schemas/"


def _bounds(schema: Schema) -> str:
    """`1–10000`, `≥ 0`, `> 0`, `≤ 64 chars`: the limits a value must keep, if any."""
    low = schema.get("minimum")
    high = schema.get("maximum")
    above = schema.get("exclusiveMinimum")
    below = schema.get("exclusiveMaximum")
    if low is not None and high is not None:
        return f"{number(low)}–{number(high)}"
    parts = []
    if low is not None:
        parts.append(f"≥ {number(low)}")
    if above is not None:
        parts.append(f"> {number(above)}")
    if high is not None:
        parts.append(f"≤ {number(high)}")
    if below is not None:
        parts.append(f"< {number(below)}")
    return ", ".join(parts)


def _ref_name(schema: Schema) -> str | None:
    ref = schema.get("$ref", "")
    return ref.removeprefix(REF_PREFIX) if ref.startswith(REF_PREFIX) else None


def type_text(schema: Schema, components: Mapping[str, Schema]) -> str:
    """What a value of `schema` is, in words; a named object links to its schema below."""
    name = _ref_name(schema)
    if name is not None:
        target = components.get(name, {})
        if "enum" in target:
            return values(target["enum"])
        return f"[`{name}`](#{name.lower()})"
    if "enum" in schema:
        return values(schema["enum"])
    if "const" in schema:
        return f"`{schema['const']}`"
    for key in ("anyOf", "oneOf"):
        if key in schema:
            options = [type_text(option, components) for option in schema[key]]
            return " or ".join(dict.fromkeys(options))  # each once, in order
    if "allOf" in schema:
        return " and ".join(type_text(part, components) for part in schema["allOf"])
    kind = schema.get("type")
    if kind == "array":
        return f"array of {type_text(schema.get('items', {}), components)}"
    if kind == "object":
        extra = schema.get("additionalProperties")
        if isinstance(extra, Mapping) and extra:
            return f"object of {type_text(extra, components)}"
        return "object"
    if kind is None:
        return "any"
    if schema.get("contentMediaType") or schema.get("format") == "binary":
        return "file"
    notes = [note for note in (schema.get("format"), _bounds(schema)) if note]
    return f"{kind} ({', '.join(notes)})" if notes else str(kind)


def _default(schema: Schema) -> str:
    if "default" not in schema:
        return ""
    value = schema["default"]
    return f"`{json.dumps(value)}`" if not isinstance(value, str) else f"`{value}`"


def _fields_table(schema: Schema, components: Mapping[str, Schema]) -> str:
    properties: Mapping[str, Schema] = schema.get("properties", {})
    if not properties:
        return ""
    required = set(schema.get("required", []))
    rows = ["| Field | Type | Default | Description |\n|---|---|---|---|\n"]
    for name, field in properties.items():
        label = f"`{name}`" + (" (required)" if name in required else "")
        rows.append(
            f"| {label} | {cell(type_text(field, components))} | {cell(_default(field))} | "
            f"{cell(field.get('description') or '')} |\n"
        )
    return "".join(rows) + "\n"


def _parameters(parameters: list[Schema], components: Mapping[str, Schema]) -> str:
    rows = ["| Parameter | In | Type | Default | Description |\n|---|---|---|---|---|\n"]
    for parameter in parameters:
        schema = parameter.get("schema", {})
        label = f"`{parameter['name']}`" + (" (required)" if parameter.get("required") else "")
        rows.append(
            f"| {label} | {parameter['in']} | {cell(type_text(schema, components))} | "
            f"{cell(_default(schema))} | {cell(parameter.get('description') or '')} |\n"
        )
    return "".join(rows) + "\n"


def _request_body(body: Schema, components: Mapping[str, Schema]) -> str:
    out = []
    for media, content in body.get("content", {}).items():
        schema = content.get("schema", {})
        name = _ref_name(schema)
        target = components.get(name, {}) if name else schema
        required = ", required" if body.get("required") else ""
        shown = f" [`{name}`](#{name.lower()})" if name and not name.startswith("Body_") else ""
        out.append(f"**Request body** (`{media}`{required}):{shown}\n\n")
        description = (target.get("description") or "").strip()
        if description:
            out.append(description + "\n\n")
        out.append(_fields_table(target, components) or f"{type_text(schema, components)}.\n\n")
    return "".join(out)


def _returns(responses: Mapping[str, Schema], components: Mapping[str, Schema]) -> str:
    lines = []
    for status, response in responses.items():
        if not status.startswith("2"):
            continue
        contents = response.get("content") or {}
        shown = [
            f"{type_text(content['schema'], components)} (`{media}`)"
            for media, content in contents.items()
            if content.get("schema")
        ]
        what = "; ".join(shown) or response.get("description", "")
        lines.append(f"**Returns** `{status}`: {what}\n\n")
    return "".join(lines)


def _schemas(components: Mapping[str, Schema]) -> str:
    out = ["## Schemas\n\n", "The bodies and answers above, field by field.\n\n"]
    for name in sorted(components, key=str.lower):
        if name.startswith("Body_"):  # a form's fields: listed with its path
            continue
        schema = components[name]
        out.append(f"### `{name}`\n\n")
        description = (schema.get("description") or "").strip()
        if description:
            out.append(description + "\n\n")
        if "enum" in schema:
            out.append("O" + values(schema["enum"])[1:] + ".\n\n")
        else:
            out.append(_fields_table(schema, components) or f"{type_text(schema, components)}.\n\n")
    return "".join(out)


def api_page(schema: Schema, header: str) -> str:
    """The whole page for an OpenAPI `schema`; `header` comes first (title and note)."""
    components: Mapping[str, Schema] = schema.get("components", {}).get("schemas", {})
    lines = [header]
    lines.append(
        f"{schema['info'].get('description', '')}\n\n"
        "The running service serves this schema at `/openapi.json`, with Swagger UI at `/docs` "
        "and ReDoc at `/redoc`. Errors are `application/problem+json` "
        "([`Problem`](#problem)): `detail` says what to fix.\n\n"
    )
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            lines.append(f"## `{method.upper()} {path}`\n\n")
            summary = operation.get("summary") or ""
            description = (operation.get("description") or "").strip()
            if summary:
                lines.append(f"**{summary}**\n\n")
            if description:
                lines.append(description + "\n\n")
            if operation.get("parameters"):
                lines.append(_parameters(operation["parameters"], components))
            if "requestBody" in operation:
                lines.append(_request_body(operation["requestBody"], components))
            lines.append(_returns(operation.get("responses", {}), components))
    lines.append(_schemas(components))
    return "".join(lines)
