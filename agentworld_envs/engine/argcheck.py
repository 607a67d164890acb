"""A compiled accept-check for tool argument schemas: the per-call fast path before jsonschema.

Building a jsonschema validator costs ~15 ms per tool (37 tools: ~0.6 s on an env's first
use) and ``is_valid`` walks the schema generically on every call. Tool parameter schemas use
a small subset of JSON Schema (``type``, ``properties``, ``required``,
``additionalProperties: false``, ``enum``, numeric and length bounds, ``pattern``, simple
``items``), so :func:`compile_accept` turns such a schema into nested closures once.

The closure is *conservative*: when it returns True the arguments are valid under
jsonschema's Draft 2020-12 semantics too; when it returns False (or the schema uses any
keyword outside the subset, so no closure is built) the caller asks jsonschema, which
decides and words the error. So the fast path can only skip work, never change a verdict:
edge cases where the two differ (``1.0`` for an ``integer``, ``True`` against ``enum: [1]``)
fall through to jsonschema instead of being decided here.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

Accept = Callable[[Any], bool]

#: Keywords that never affect validity (without a format checker, ``format`` is an annotation).
_ANNOTATIONS = frozenset({"description", "title", "default", "examples", "format", "deprecated",
                          "readOnly", "writeOnly", "$comment"})
_SUPPORTED = _ANNOTATIONS | {"type", "properties", "required", "additionalProperties", "enum", "minimum", "maximum",
                             "exclusiveMinimum", "exclusiveMaximum", "minLength", "maxLength", "pattern", "items",
                             "minItems", "maxItems"}


class Unsupported(Exception):
    """The schema uses something this compiler does not decide; jsonschema handles it alone."""


def _is_number(x: Any) -> bool:
    return (type(x) is int or type(x) is float)


# Exact types only: bool is an int subclass but not a JSON number; floats that jsonschema
# would accept as integers (1.0) are left to jsonschema.
_TYPE_CHECKS: dict[str, Callable[[Any], bool]] = {
    "string": lambda x: type(x) is str,
    "integer": lambda x: type(x) is int,
    "number": _is_number,
    "boolean": lambda x: type(x) is bool,
    "null": lambda x: x is None,
    "array": lambda x: type(x) is list,
    "object": lambda x: type(x) is dict,
}


def compile_accept(schema: Any) -> Accept | None:
    """A conservative accept-check for ``schema``, or None when it uses unsupported keywords."""
    try:
        return _compile(schema)
    except Unsupported:
        return None


def _compile(schema: Any) -> Accept:
    if schema is True or schema == {}:
        return lambda x: True
    if not isinstance(schema, dict) or not set(schema) <= _SUPPORTED:
        raise Unsupported
    checks: list[Accept] = []

    types = schema.get("type")
    if types is not None:
        names = [types] if isinstance(types, str) else types
        if not isinstance(names, list) or not names or any(n not in _TYPE_CHECKS for n in names):
            raise Unsupported
        fns = [_TYPE_CHECKS[n] for n in names]
        checks.append(fns[0] if len(fns) == 1 else (lambda x, fns=fns: any(f(x) for f in fns)))

    if "enum" in schema:
        values = schema["enum"]
        if not isinstance(values, list) or any(not isinstance(v, (str, int, float, bool)) and v is not None for v in values):
            raise Unsupported
        allowed = frozenset((type(v), v) for v in values)
        checks.append(lambda x: (type(x), x) in allowed if isinstance(x, (str, int, float, bool)) or x is None else False)

    bounds = [(k, schema[k]) for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum") if k in schema]
    if bounds:
        if any(not _is_number(v) for _, v in bounds):
            raise Unsupported
        ops = {"minimum": lambda x, b: x >= b, "maximum": lambda x, b: x <= b,
               "exclusiveMinimum": lambda x, b: x > b, "exclusiveMaximum": lambda x, b: x < b}
        pairs = [(ops[k], b) for k, b in bounds]
        if len(pairs) == 1:  # the usual single bound (an id's minimum): no generator per call
            (op, b), = pairs
            checks.append(lambda x: not _is_number(x) or op(x, b))
        else:
            checks.append(lambda x: not _is_number(x) or all(op(x, b) for op, b in pairs))

    if "minLength" in schema or "maxLength" in schema or "pattern" in schema:
        lo, hi = schema.get("minLength", 0), schema.get("maxLength")
        if type(lo) is not int or (hi is not None and type(hi) is not int):
            raise Unsupported
        pattern = schema.get("pattern")
        if pattern is not None:
            try:
                search = re.compile(pattern).search
            except (re.error, TypeError):
                raise Unsupported from None
        else:
            search = None
        checks.append(lambda x: type(x) is not str or (
            len(x) >= lo and (hi is None or len(x) <= hi) and (search is None or search(x) is not None)))

    if "items" in schema or "minItems" in schema or "maxItems" in schema:
        item = _compile(schema["items"]) if "items" in schema else None
        lo, hi = schema.get("minItems", 0), schema.get("maxItems")
        if type(lo) is not int or (hi is not None and type(hi) is not int):
            raise Unsupported
        checks.append(lambda x: type(x) is not list or (
            len(x) >= lo and (hi is None or len(x) <= hi) and (item is None or all(item(v) for v in x))))

    if "properties" in schema or "required" in schema or "additionalProperties" in schema:
        props = schema.get("properties", {})
        required = schema.get("required", [])
        extra = schema.get("additionalProperties", True)
        if not isinstance(props, dict) or not isinstance(required, list) or extra not in (True, False):
            raise Unsupported
        compiled = {name: _compile(sub) for name, sub in props.items()}
        known = frozenset(compiled)

        def check_object(x: Any) -> bool:
            if type(x) is not dict:
                return True
            for name in required:
                if name not in x:
                    return False
            if not extra and not known.issuperset(x):
                return False
            for name, value in x.items():
                sub = compiled.get(name)
                if sub is not None and not sub(value):
                    return False
            return True

        checks.append(check_object)

    return _all_of(checks)


def _all_of(checks: list[Accept]) -> Accept:
    """One accept-check for all of ``checks``: short ``and`` chains for the usual two or three
    (a generator through ``all()`` per schema level cost more than the checks themselves)."""
    if not checks:
        return lambda x: True
    if len(checks) == 1:
        return checks[0]
    if len(checks) == 2:
        a, b = checks
        return lambda x: a(x) and b(x)
    if len(checks) == 3:
        a, b, c = checks
        return lambda x: a(x) and b(x) and c(x)
    return lambda x: all(c(x) for c in checks)
