"""Spec validation: structural errors name the JSON path; referential errors too."""

from __future__ import annotations

import pytest

from agentworld_envs.engine.spec import SpecError, content_hash, validate_spec
from toy_spec import toy_spec


def test_toy_spec_is_valid():
    assert validate_spec(toy_spec())["id"] == "toy-library"


@pytest.mark.parametrize(
    "mutate, path",
    [
        (lambda s: s["tools"][1]["impl"]["filters"][0].__setitem__("op", "bogus"), "$.tools[1].impl.filters[0].op"),
        (lambda s: s["tools"][2]["impl"].__setitem__("func", "median"), "$.tools[2].impl.func"),
        (lambda s: s["tasks"][0]["checks"][0].__setitem__("expect", "x"), "$.tasks[0].checks[0].expect"),
        (lambda s: s["tables"][0]["columns"][0].__setitem__("type", "VARCHAR"), "$.tables[0].columns[0].type"),
        (lambda s: s["tables"][2]["columns"][1].__setitem__("references", "nobody.id"), "$.tables[2].columns[1].references"),
        (lambda s: s["tools"][0]["impl"].__setitem__("table", "ghosts"), "$.tools[0].impl.table"),
        (lambda s: s["tools"][0]["parameters"].__setitem__("type", "array"), "$.tools[0].parameters.type"),
        (lambda s: s["tools"][3].__setitem__("name", "submit"), "$.tools[3].name"),
        (lambda s: s["tasks"][1]["solution"][0].__setitem__("name", "nope"), "$.tasks[1].solution[0].name"),
        (lambda s: s.__setitem__("now", "yesterday"), "$.now"),
        (lambda s: s.pop("policy"), "$"),
    ],
)
def test_invalid_spec_names_the_path(mutate, path):
    spec = toy_spec()
    mutate(spec)
    with pytest.raises(SpecError) as exc:
        validate_spec(spec)
    assert exc.value.path == path, str(exc.value)
    assert str(exc.value).startswith(path)


def test_content_hash_is_order_independent():
    a = toy_spec()
    b = dict(reversed(list(toy_spec().items())))
    assert content_hash(a) == content_hash(b)
    b["policy"] += " Changed."
    assert content_hash(a) != content_hash(b)


def test_shipped_schema_is_a_valid_json_schema():
    import jsonschema

    from agentworld_envs.engine.spec import spec_schema

    schema = spec_schema()
    jsonschema.validators.validator_for(schema).check_schema(schema)
