"""Validates a report against schema/report.schema.json, the contract shared with TypeScript
(src/profiler/schema.ts implements the same JSON Schema subset). Used by the tests on the Python side:
`python -m memhint_harness.schema_check SCHEMA.json < report.json` prints the first problem, exit 1."""
from __future__ import annotations

import json
import sys
from typing import Any, Dict, Optional

Schema = Dict[str, Any]


def _type_of(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value.is_integer() else "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def problem(value: Any, schema: Schema, root: Optional[Schema] = None, at: str = "") -> Optional[str]:
    """The first problem of `value` against `schema`, or None when it conforms."""
    root = schema if root is None else root
    where = at or "(report)"
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        return problem(value, root["definitions"][name], root, at)
    if "anyOf" in schema:
        found = [problem(value, s, root, at) for s in schema["anyOf"]]
        if any(p is None for p in found):
            return None
        return next((p for p in found if p and not p.startswith(where + ": expected ")),
                    "%s: matches none of the allowed shapes" % where)
    actual = _type_of(value)
    if "type" in schema:
        wanted = [schema["type"]] if isinstance(schema["type"], str) else schema["type"]
        if actual not in wanted and not (actual == "integer" and "number" in wanted):
            return "%s: expected %s, got %s" % (where, " or ".join(wanted), actual)
    if "const" in schema and value != schema["const"]:
        return "%s: expected %s" % (where, json.dumps(schema["const"]))
    if "enum" in schema and value not in schema["enum"]:
        return "%s: expected one of %s, got %s" % (where, schema["enum"], json.dumps(value))
    if "minimum" in schema and actual in ("integer", "number") and value < schema["minimum"]:
        return "%s: %s is below %s" % (where, value, schema["minimum"])
    if actual == "array" and "items" in schema:
        for index, item in enumerate(value):
            found = problem(item, schema["items"], root, "%s[%d]" % (at, index))
            if found:
                return found
    if actual == "object":
        prefix = at + "." if at else ""
        for key in schema.get("required", []):
            if key not in value:
                return "%s%s: missing" % (prefix, key)
        extra = schema.get("additionalProperties", True)
        for key, item in value.items():
            declared = schema.get("properties", {}).get(key)
            if declared is not None:
                found = problem(item, declared, root, prefix + key)
            elif extra is False:
                found = "%s%s: not part of the report schema" % (prefix, key)
            elif isinstance(extra, dict):
                found = problem(item, extra, root, prefix + key)
            else:
                found = None
            if found:
                return found
    return None


def main(argv: list[str]) -> int:
    with open(argv[0], encoding="utf-8") as handle:
        schema = json.load(handle)
    found = problem(json.load(sys.stdin), schema)
    print(found or "ok")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
