"""``agentworld lint``: does a built environment make sense as a world?

Mechanical checks over a spec, its golden database and its tasks, each a named rule:

==================  ==============================================================================
``fk_naming``       a foreign-key column is named after the table it references (``<role>_<target>_id``)
``vocab_leak``      an enum/choice value belongs to a vocabulary of another, unrelated category
``column_misfit``   a column the vocabulary registry says does not belong in this category
``tool_name``       numbered or placeholder tool names (``_2``, ``_x``)
``tool_returns``    a tool description that does not say what the tool returns
``date_order``      paired dates out of order (an end before its start, an update before creation)
``status_stamp``    a status timestamp missing for a record in that status, or set before it got there
``value_range``     a value outside its semantic range (percentages, temperatures, readings, ages, counts)
``impossible``      amounts that must add up and do not (total = subtotal + tax + shipping; quantity x price)
``mime_mismatch``   a file's MIME type that does not match its extension
``word_salad``      free text of four or more words with no function word ("owner east ball Republican")
``grammar``         instruction smells: "the is <flag>", doubled words, dangling prepositions,
                    snake_case column names, "Hi, Please"
(task headroom)     ``loop_back``, ``announced_trap``, ``skeleton_repeat``, ``filler``, ``dead_knob``,
                    ``hard_too_short``: see :mod:`agentworld_envs.lint_tasks`
==================  ==============================================================================

The rules read the same semantic tables synthesis uses (:mod:`agentworld_envs.synthesis.semantics`)
but check the built artefacts, not the generators, so a wrong generator, a hand-edited spec or a
write tool that breaks an invariant all show up.
"""

from __future__ import annotations

import re
import sqlite3
from collections import Counter
from dataclasses import asdict, dataclass
from typing import Any, Iterable

import env_registry

from .datagen import mime_type
from .language import singular
from .lint_tasks import TASK_RULES, check_tasks
from .synthesis import semantics

RULES = ("fk_naming", "vocab_leak", "column_misfit", "tool_name", "tool_returns", "date_order", "status_stamp",
         "value_range", "impossible", "mime_mismatch", "word_salad", "grammar") + TASK_RULES
#: Violations kept per rule per env (the count is always exact).
MAX_EXAMPLES = 5


@dataclass(frozen=True)
class Violation:
    rule: str
    where: str
    detail: str

    def to_json(self) -> dict[str, str]:
        return asdict(self)


def q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


# ------------------------------------------------------------------------------------------ schema


def check_fk_naming(spec: dict[str, Any]) -> Iterable[Violation]:
    for t in spec["tables"]:
        for c in t["columns"]:
            ref = c.get("references")
            if ref:
                target = ref.split(".")[0]
                if target != t["name"] and not semantics.fk_matches_target(c["name"], target):
                    yield Violation("fk_naming", f"{t['name']}.{c['name']}", f"references {target}")


def _theme_columns(name: str) -> dict[str, tuple[str, dict[str, Any]]]:
    """``table.column`` → (module key, theme) for a synthesised env; empty for hand-built ones."""
    try:
        theme = env_registry.theme(name)
    except KeyError:
        return {}
    from .synthesis.schema import build_entities

    out = {}
    for ent in build_entities(theme):
        for col in ent.columns:
            out[f"{ent.table}.{col['name']}"] = (ent.key, theme)
    return out


def check_vocabulary(spec: dict[str, Any], name: str) -> Iterable[Violation]:
    """Values and columns against the vocabulary registry (synthesised envs; hand-built ones own their words)."""
    theme_columns = _theme_columns(name)
    if not theme_columns:
        return
    tags = {spec.get("taxonomy", {}).get("l1"), spec.get("taxonomy", {}).get("l2"), "*"}
    index = semantics.vocabulary_index()
    recipe = spec.get("data", {}).get("tables", {})
    for t in spec["tables"]:
        for c in t["columns"]:
            values = list(c.get("enum") or [])
            gen = recipe.get(t["name"], {}).get("columns", {}).get(c["name"], {})
            if gen.get("gen") == "choice":
                values += [v for v in gen["values"] if isinstance(v, str)]
            if c["name"] == "status":
                continue   # lifecycle states are generic by design
            for v in dict.fromkeys(values):
                owners = index.get(str(v))
                if owners and not owners & tags:
                    yield Violation("vocab_leak", f"{t['name']}.{c['name']}",
                                    f"{v!r} belongs to {', '.join(sorted(owners))[:80]}")
    for key, (module, theme) in theme_columns.items():
        column = key.split(".", 1)[1]
        fits, _ = semantics.vocabulary_for(theme, module, column)
        if not fits and column != env_registry.entity_modules()[module]["label"]:
            yield Violation("column_misfit", key, f"{module}.{column} does not fit {theme['l1']}/{theme['l2']}")


def check_tools(spec: dict[str, Any]) -> Iterable[Violation]:
    for tool in spec["tools"]:
        if re.search(r"(_[2-9]|_x)$", tool["name"]):
            yield Violation("tool_name", tool["name"], "numbered or placeholder name")
        if "return" not in tool.get("description", "").lower():
            yield Violation("tool_returns", tool["name"], "description does not say what it returns")


# --------------------------------------------------------------------------------------------- data


def _columns(conn: sqlite3.Connection, table: str) -> list[str]:
    return [r[1] for r in conn.execute(f"PRAGMA table_info({q(table)})")]


def _date_columns(conn: sqlite3.Connection, table: str, cols: list[str]) -> list[str]:
    out = []
    for c in cols:
        v = conn.execute(f"SELECT {q(c)} FROM {q(table)} WHERE {q(c)} IS NOT NULL LIMIT 1").fetchone()
        if v and isinstance(v[0], str) and re.fullmatch(r"\d{4}-\d\d-\d\d(T\d\d:\d\d:\d\dZ?)?", v[0]):
            out.append(c)
    return out


def _workflow_of(spec: dict[str, Any], table: str) -> dict[str, Any] | None:
    """The lifecycle a table's transition tools implement (states from its enum, moves from the tools)."""
    moves = [t["impl"] for t in spec["tools"] if t["impl"].get("kind") == "transition" and t["impl"].get("table") == table]
    if not moves:
        return None
    col = next(c for t in spec["tables"] if t["name"] == table for c in t["columns"] if c["name"] == moves[0]["column"])
    return {"states": list(col.get("enum") or []), "transitions": [{"from": m["from"], "to": m["to"]} for m in moves],
            "column": moves[0]["column"]}


def check_data(spec: dict[str, Any], conn: sqlite3.Connection, tables: Iterable[str] | None = None,
               modules: dict[str, str] | None = None) -> Iterable[Violation]:
    """``modules``: table → entity module key (synthesised envs), which tells whose birth dates a table holds."""
    names = list(tables or (t["name"] for t in spec["tables"]))
    modules = modules or {}
    for table in names:
        cols = _columns(conn, table)
        dates = _date_columns(conn, table, cols)
        for earlier, later, strict in semantics.ordered_pairs([d for d in dates if "birth" not in d]):
            op = "<=" if strict else "<"
            n = conn.execute(f"SELECT COUNT(*) FROM {q(table)} WHERE {q(earlier)} IS NOT NULL AND {q(later)} IS NOT NULL "
                             f"AND substr({q(later)}, 1, min(length({q(later)}), length({q(earlier)}))) {op} "
                             f"substr({q(earlier)}, 1, min(length({q(later)}), length({q(earlier)})))").fetchone()[0]
            if n:
                yield Violation("date_order", f"{table}.{later}", f"{n} rows with {later} before {earlier}")
        wf = _workflow_of(spec, table)
        if wf:
            st = wf["column"]
            for col, states in semantics.status_stamps(cols, wf).items():
                marks = ", ".join("?" * len(states))
                missing = conn.execute(f"SELECT COUNT(*) FROM {q(table)} WHERE {q(st)} = ? AND {q(col)} IS NULL",
                                       (col.rsplit("_", 1)[0],)).fetchone()[0]
                early = conn.execute(f"SELECT COUNT(*) FROM {q(table)} WHERE {q(col)} IS NOT NULL AND {q(st)} NOT IN ({marks})",
                                     tuple(states)).fetchone()[0]
                if missing or early:
                    yield Violation("status_stamp", f"{table}.{col}",
                                    f"{missing} rows in that status without it, {early} rows with it in another status")
        yield from _check_ranges(conn, table, cols, dates, spec["now"][:10], f"{singular(table)} {modules.get(table, '')}")
        for total, parts in semantics.TOTALS:
            present = [p for p in parts if p in cols]
            if total in cols and parts[0] in present and len(present) >= 2:
                expr = " + ".join(f"COALESCE({q(p)}, 0)" for p in present)
                n = conn.execute(f"SELECT COUNT(*) FROM {q(table)} WHERE {q(total)} IS NOT NULL AND "
                                 f"abs({q(total)} - ({expr})) > 0.011").fetchone()[0]
                if n:
                    yield Violation("impossible", f"{table}.{total}", f"{n} rows whose {total} is not {' + '.join(present)}")
        if {"quantity", "unit_price", "line_total"} <= set(cols):
            n = conn.execute(f"SELECT COUNT(*) FROM {q(table)} WHERE line_total IS NOT NULL AND "
                             f"abs(line_total - quantity * unit_price) > 0.011").fetchone()[0]
            if n:
                yield Violation("impossible", f"{table}.line_total", f"{n} rows whose line_total is not quantity x unit_price")
        if "file_name" in cols and "mime_type" in cols:
            bad = sum(1 for f, m in conn.execute(f"SELECT file_name, mime_type FROM {q(table)} WHERE file_name IS NOT NULL")
                      if m != mime_type(f))
            if bad:
                yield Violation("mime_mismatch", f"{table}.mime_type", f"{bad} rows whose MIME type does not match the file")
        yield from _check_text(conn, table, cols, spec)


_PERCENT = re.compile(r"(^|_)(pct|percent|percentage)($|_)")
_TEMPERATURE = re.compile(r"(^|_)(temp|temperature)(_|$)|_c$")
_NON_NEGATIVE = re.compile(r"(_count|quantity|qty|_minutes|_hours|_seconds|_ms|duration|price|fee|cost|^hours$|^minutes$)")


def _check_ranges(conn: sqlite3.Connection, table: str, cols: list[str], dates: list[str], today: str,
                  who: str) -> Iterable[Violation]:
    """``who``: the words naming the table's records (and its module), which set the plausible ages."""
    def count(where: str, params: tuple = ()) -> int:
        return conn.execute(f"SELECT COUNT(*) FROM {q(table)} WHERE {where}", params).fetchone()[0]

    for c in cols:
        if c == "id" or c.endswith("_id"):
            continue
        if _PERCENT.search(c) and count(f"typeof({q(c)}) IN ('integer','real') AND ({q(c)} < 0 OR {q(c)} > 100)"):
            yield Violation("value_range", f"{table}.{c}", "percentage outside 0-100")
        if _TEMPERATURE.search(c) and count(f"typeof({q(c)}) IN ('integer','real') AND ({q(c)} < -200 OR {q(c)} > 150)"):
            yield Violation("value_range", f"{table}.{c}", "temperature outside -200..150 °C")
        if _NON_NEGATIVE.search(c) and count(f"typeof({q(c)}) IN ('integer','real') AND {q(c)} < 0"):
            yield Violation("value_range", f"{table}.{c}", "negative amount, count or duration")
        if c == "age" and count(f"typeof({q(c)}) = 'integer' AND ({q(c)} < 0 OR {q(c)} > 120)"):
            yield Violation("value_range", f"{table}.{c}", "age outside 0-120")
    if "metric" in cols and "value" in cols:
        for metric, (lo, hi) in semantics.METRIC_RANGES.items():
            n = count("metric = ? AND (value < ? OR value > ?)", (metric, lo, hi))
            if n:
                yield Violation("value_range", f"{table}.value", f"{n} {metric} readings outside {lo}..{hi}")
    if "analyte" in cols and "unit" in cols:
        offered = {u for (u,) in conn.execute(f"SELECT DISTINCT unit FROM {q(table)}")}
        for analyte, (unit, lo, hi) in semantics.ANALYTES.items():
            if unit not in offered:
                continue   # this service reports in other units: the pairing cannot be checked
            n = count("analyte = ? AND (unit != ? OR value < ? OR value > ?)", (analyte, unit, lo, hi))
            if n:
                yield Violation("value_range", f"{table}.value", f"{n} {analyte} results with the wrong unit or range")
    for c in cols:
        if "birth" in c and c in dates:
            lo = semantics.AGE_RANGES[semantics.person_kind(who)][0]
            n = count(f"{q(c)} IS NOT NULL AND ((julianday(?) - julianday({q(c)})) / 365.25 > 120 "
                      f"OR (julianday(?) - julianday({q(c)})) / 365.25 < ?)", (today, today, lo))
            if n:
                yield Violation("value_range", f"{table}.{c}", f"{n} birth dates giving an age outside {lo}-120")


_FREE_TEXT_WORDS = ("description", "note", "comment", "summary", "body", "message", "reason", "memo", "feedback",
                   "instruction", "justification", "request", "agenda", "purpose", "hypothesis", "goals", "bio",
                   "letter", "reply", "changelog", "criteria")
_FUNCTION_WORDS = frozenset(
    "a an the of to for and or with on in at by from is are was be this that it its as please not no all our your "
    "we i you they them their has have had will can could should would may up out into over after before about "
    "just next today per via than then so".split())


def _check_text(conn: sqlite3.Connection, table: str, cols: list[str], spec: dict[str, Any]) -> Iterable[Violation]:
    spec_cols = {c["name"]: c for t in spec["tables"] if t["name"] == table for c in t["columns"]}
    for c in cols:
        col = spec_cols.get(c, {})
        # Free text only: names and titles are proper nouns, which need no function words.
        if col.get("type") != "TEXT" or col.get("enum") or semantics.text_kind(c) == "title" \
                or not any(w in c for w in _FREE_TEXT_WORDS):
            continue
        bad = 0
        for (v,) in conn.execute(f"SELECT {q(c)} FROM {q(table)} WHERE typeof({q(c)}) = 'text' LIMIT 200"):
            tokens = [w.strip(".,;:!?()\"'") for w in v.split()]
            if len(tokens) >= 4 and not any(w.lower() in _FUNCTION_WORDS for w in tokens) and " " in v:
                bad += 1
        if bad:
            yield Violation("word_salad", f"{table}.{c}", f"{bad} values read as random words")


# -------------------------------------------------------------------------------------------- tasks

_GRAMMAR = (
    (re.compile(r"\bthe (is|has)\s+\w+", re.I), "'the is/has <flag>'"),
    (re.compile(r"\b(\w{2,})\s+\1\b"), "doubled word"),
    (re.compile(r"(?<![\w./])(of|the|a|an)\s*[.?!](\s|$)"), "dangling word before the full stop"),
    (re.compile(r"\bthe \w+ (on|at|by) of\b"), "a date column used as a noun ('the listed on of')"),
    (re.compile(r"(?<![\w./])a (?!one\b|uni|use|usu|uti|ure|eu|once)[aeiou]\w*"), "'a' before a vowel"),
    (re.compile(r"\b(Hi|Hello|Hey there),\s+(Please|Could|Can|What|Which|How|Among|Several|For|Look|Of|Find|List|"
                r"Count|Total|Set|Update|Mark|Add|The|There|This|My|Our|Note|Quick|When|Is|Does|Who)\b"),
     "capital after a greeting comma"),
    (re.compile(r"\b(start|stop|end|mark|request|return|submit|bring|check|set|flag|give|make|pick|record|send)"
                r" (maintenance|review|changes|info|online|exception|notice|offer|partial|pending) (the|a|an)\b"),
     "multi-word verb without its preposition"),
)


def check_instructions(spec: dict[str, Any], tasks: list[dict[str, Any]]) -> Iterable[Violation]:
    columns = {c["name"] for t in spec["tables"] for c in t["columns"] if "_" in c["name"]}
    for task in tasks:
        text = task.get("instruction", "")
        for pattern, what in _GRAMMAR:
            m = pattern.search(text)
            if m and not (what == "doubled word" and m.group(1).isdigit()):
                yield Violation("grammar", task["id"], f"{what}: {text[max(0, m.start() - 30): m.end() + 20]!r}")
        for word in re.findall(r"\b[a-z]+(?:_[a-z]+)+\b", text):
            if word in columns:
                yield Violation("grammar", task["id"], f"column name {word!r} in the instruction")
                break


# ------------------------------------------------------------------------------------------- driver


def lint_built(name: str, spec: dict[str, Any], golden_conn: sqlite3.Connection, tasks: list[dict[str, Any]]) -> list[Violation]:
    out: list[Violation] = []
    out += check_fk_naming(spec)
    out += check_vocabulary(spec, name)
    out += check_tools(spec)
    modules = {key.split(".")[0]: module for key, (module, _) in _theme_columns(name).items()}
    out += check_data(spec, golden_conn, modules=modules)
    out += check_instructions(spec, tasks)
    out += check_tasks(spec, golden_conn, tasks)   # task headroom: lint_tasks.py
    return out


def summarise(violations: list[Violation]) -> dict[str, Any]:
    """Exact counts per rule, and the first few examples of each."""
    counts = Counter(v.rule for v in violations)
    examples: dict[str, list[dict[str, str]]] = {}
    for v in violations:
        if len(examples.setdefault(v.rule, [])) < MAX_EXAMPLES:
            examples[v.rule].append(v.to_json())
    return {"violations": len(violations), "by_rule": dict(sorted(counts.items())), "examples": examples}


def lint_env(name: str) -> list[Violation]:
    """Build (if needed) and lint one registered environment."""
    from . import catalog

    bundle = catalog.load_bundle(name)
    conn = bundle.connect()
    try:
        return lint_built(name, bundle.spec, conn, bundle.tasks)
    finally:
        conn.close()
