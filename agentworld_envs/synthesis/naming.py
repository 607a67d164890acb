"""Words: plurals, titles and the verbs a service would use for its records."""

from __future__ import annotations

_IRREGULAR = {"person": "people", "child": "children", "series": "series", "staff": "staff", "analysis": "analyses",
              "criterion": "criteria", "datum": "data", "status": "statuses", "bus": "buses", "quiz": "quizzes"}


def plural(word: str) -> str:
    head, _, last = word.rpartition("_")
    if last in _IRREGULAR:
        out = _IRREGULAR[last]
    elif last.endswith("y") and last[-2:-1] not in "aeiou":
        out = last[:-1] + "ies"
    elif last.endswith(("s", "x", "z", "ch", "sh")):
        out = last + "es"
    else:
        out = last + "s"
    return f"{head}_{out}" if head else out


def title(word: str) -> str:
    return word.replace("_", " ")


#: How a service phrases "create" for a record, by the module's first matching role.
CREATE_VERBS = {
    "booking": "book", "order": "place", "case": "open", "person": "register", "staff": "add",
    "document": "draft", "event": "schedule", "device": "register", "account": "open", "content": "publish",
    "project": "start", "vehicle": "register", "group": "create", "item": "add", "location": "add",
    "organization": "add", "record": "log",
}


def create_verb(roles: list[str], singular: str = "") -> str:
    last = singular.rsplit("_", 1)[-1]
    if "account" in roles and last != "account":
        return "add"     # "open" fits accounts, not members or payment methods
    if "record" in roles and last not in ("reading", "entry", "log", "event", "record", "measurement", "observation"):
        return "add"
    for role in roles:
        if role in CREATE_VERBS:
            return CREATE_VERBS[role]
    return "create"


from ..engine.language import VERB_PHRASES, participle, verb_phrase  # noqa: E402,F401 - re-exported for synthesis
