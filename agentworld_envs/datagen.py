"""Deterministic seeded data: the ``data`` recipe of a spec, interpreted.

A recipe names a seed and, per table, a row count and a generator per column::

    {"seed": 7, "locale": "en_US", "tables": {
        "customers": {"rows": 300, "columns": {
            "name":   {"gen": "faker", "provider": "name"},
            "email":  {"gen": "faker", "provider": "email", "unique": true},
            "tier":   {"gen": "choice", "values": ["basic", "gold"], "weights": [4, 1]}}},
        "orders": {"rows": 900, "columns": {
            "customer_id": {"gen": "ref", "ref": "customers.id"},
            "placed_at":   {"gen": "datetime", "days": [-120, 0]}}}}}

Integer primary keys are numbered 1..rows. Faker values come from per-(locale,
provider) pools drawn once with a fixed seed and then sampled with the table's own
``random.Random``, which keeps thousands of environments fast to build and makes
every value a pure function of (spec, Faker release). Hand-built domains may
instead name a registered Python generator (``"generator": "retail"``).
"""

from __future__ import annotations

import datetime as dt
import functools
import random
import sqlite3
import string
from collections.abc import Callable
from typing import Any

from .registry import Registry
from .textgen import text_drawer


DataGenerator = Callable[[sqlite3.Connection, dict[str, Any]], None]
#: Python data generators of hand-built domains: ``fn(conn, spec)``.
DATA_GENERATORS: Registry[DataGenerator] = Registry("data generator")
data_generator = DATA_GENERATORS.register
get_data_generator = DATA_GENERATORS.get


@functools.lru_cache(maxsize=512)
def faker_pool(locale: str, provider: str, size: int = 512, seed: int = 0) -> tuple[Any, ...]:
    """``size`` values of one Faker provider, drawn deterministically."""
    from faker import Faker

    fake = Faker(locale)
    fake.seed_instance(seed)
    fn = getattr(fake, provider, None)
    if fn is None:  # not every locale has every provider
        if locale == "en_US":
            raise ValueError(f"unknown Faker provider {provider!r}")
        return faker_pool("en_US", provider, size, seed)
    values = (fn() for _ in range(size))
    return tuple(v.isoformat() if isinstance(v, (dt.date, dt.datetime)) else str(v) if not isinstance(v, (int, float, str)) else v
                 for v in values)


def parse_now(now: str) -> dt.datetime:
    return dt.datetime.strptime(now, "%Y-%m-%dT%H:%M:%SZ")


def _code_maker(rng: random.Random, pattern: str) -> Callable[[], str]:
    """A drawer for codes like ``INV-####-??`` (``#`` digit, ``?`` capital letter), one draw per run of marks."""
    import itertools

    parts: list[Callable[[], str]] = []
    for ch, run in itertools.groupby(pattern):
        n = len(list(run))
        if ch == "#":
            parts.append(lambda n=n: str(rng.randrange(10**n)).zfill(n))
        elif ch == "?":
            parts.append(lambda n=n: "".join(rng.choices(string.ascii_uppercase, k=n)))
        else:
            parts.append(lambda text=ch * n: text)
    return lambda: "".join(p() for p in parts)


def _compile(g: dict[str, Any], rng: random.Random, now: dt.datetime, locale: str,
             existing: dict[str, list[Any]]) -> Callable[[int, dict[str, Any]], Any]:
    """One column generator as a closure ``draw(row_index, row) -> value`` (the hot loop of a build)."""
    kind = g["gen"]
    if kind == "const":
        value = g["value"]
        return lambda i, row: value
    if kind == "sequence":
        start, step = g.get("start", 1), g.get("step", 1)
        return lambda i, row: start + i * step
    if kind == "int":
        lo, hi = g["min"], g["max"]
        return lambda i, row: rng.randint(lo, hi)
    if kind in ("float", "money"):
        lo, hi, nd = g["min"], g["max"], g.get("decimals", 2)
        return lambda i, row: round(rng.uniform(lo, hi), nd)
    if kind == "bool":
        p = g.get("p", 0.5)
        return lambda i, row: int(rng.random() < p)
    if kind == "choice":
        values, weights = g["values"], g.get("weights")
        if weights:
            return lambda i, row: rng.choices(values, weights=weights)[0]
        return lambda i, row: rng.choice(values)
    if kind == "ref":
        pool = existing[g["ref"]]
        return (lambda i, row: rng.choice(pool)) if pool else (lambda i, row: None)
    if kind == "code":
        make = _code_maker(rng, g["pattern"])
        return lambda i, row: make()
    if kind == "format":
        template = g["template"]
        return lambda i, row: template.format(**row, i=i + 1)
    if kind in ("date", "datetime"):
        lo, hi = g.get("days", [-365, 0])
        lo_s, hi_s = int(lo * 86400), int(hi * 86400)
        if kind == "date":
            return lambda i, row: (now + dt.timedelta(seconds=rng.randint(lo_s, hi_s))).date().isoformat()
        return lambda i, row: (now + dt.timedelta(seconds=rng.randint(lo_s, hi_s))).strftime("%Y-%m-%dT%H:%M:%SZ")
    if kind == "faker":
        pool = faker_pool(g.get("locale", locale), g["provider"], g.get("pool", 512))
        return lambda i, row: rng.choice(pool)
    if kind == "words":
        words = faker_pool(g.get("locale", "en_US"), "word", 1024)
        lo, hi = g.get("count", [2, 6])
        return lambda i, row: " ".join(rng.choices(words, k=rng.randint(lo, hi)))
    if kind == "pick":
        values = g["values"]
        return (lambda i, row: values[i % len(values)]) if g.get("cycle") else (lambda i, row: rng.choice(values))
    # Row-dependent kinds: they read columns generated earlier in the same row, which is how paired
    # and dependent values stay consistent (an end after its start, a timestamp only once a status
    # is reached, a reading's range set by its metric, a MIME type matching the file's extension).
    if kind == "after":
        of, lo, hi = g["of"], *g.get("days", [0, 30])
        lo_s, hi_s, cap = int(lo * 86400), int(hi * 86400), g.get("not_after_now", False)
        fallback = _compile({"gen": g.get("kind", "datetime"), "days": g.get("else_days", [-365, 0])}, rng, now, locale, existing)

        def draw_after(i: int, row: dict[str, Any]) -> Any:
            base = row.get(of)
            if base is None:
                return fallback(i, row)
            start = parse_when(base)
            when = start + dt.timedelta(seconds=rng.randint(lo_s, hi_s))
            if cap and when > now:
                when = start + (now - start) * rng.random() if start <= now else start
            return when.date().isoformat() if g.get("kind") == "date" else when.strftime("%Y-%m-%dT%H:%M:%SZ")

        return draw_after
    if kind == "when":
        column, states = g["column"], set(g["in"])
        then = _compile(g["then"], rng, now, locale, existing)
        return lambda i, row: then(i, row) if row.get(column) in states else None
    if kind == "by":
        column = g["column"]
        cases = {k: _compile(v, rng, now, locale, existing) for k, v in g["cases"].items()}
        default = _compile(g["default"], rng, now, locale, existing)
        return lambda i, row: cases.get(str(row.get(column)), default)(i, row)
    if kind == "text":
        return text_drawer(g, rng)
    if kind in ("sum", "product"):
        of = list(g["of"])

        def combine(i: int, row: dict[str, Any]) -> Any:
            vals = [row.get(c) or 0 for c in of]
            out = vals[0]
            for v in vals[1:]:
                out = out + v if kind == "sum" else out * v
            return round(out, 2)

        return combine
    if kind == "mime_of":
        of = g["of"]
        return lambda i, row: mime_type(row.get(of))
    raise ValueError(f"unknown generator kind {kind!r}")


#: MIME types by file extension (the extensions synthesised file names use).
MIME_TYPES = {"pdf": "application/pdf", "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
              "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", "csv": "text/csv",
              "txt": "text/plain", "png": "image/png", "jpg": "image/jpeg", "json": "application/json",
              "zip": "application/zip", "pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
              "mp4": "video/mp4", "mp3": "audio/mpeg", "dwg": "image/vnd.dwg", "xml": "application/xml"}


def mime_type(file_name: Any) -> str | None:
    if not isinstance(file_name, str) or "." not in file_name:
        return None
    return MIME_TYPES.get(file_name.rsplit(".", 1)[1].lower(), "application/octet-stream")


def parse_when(value: str) -> dt.datetime:
    """An ISO date or ``YYYY-MM-DDTHH:MM:SSZ`` timestamp as a naive UTC datetime."""
    if len(value) == 10:
        return dt.datetime.strptime(value, "%Y-%m-%d")
    return dt.datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ")


def _uniquify(value: Any, attempt: int) -> Any:
    """A deterministic variant of a colliding value (numbers and text stay readable)."""
    if isinstance(value, str):
        return value.replace("@", f"{attempt}@", 1) if "@" in value else f"{value} {attempt + 1}"
    if isinstance(value, int):
        return value + attempt
    return value


def column_generator(g: dict[str, Any], rng: random.Random, now: dt.datetime, locale: str,
                     existing: dict[str, list[Any]]) -> Callable[[int, dict[str, Any]], Any]:
    """Wrap a compiled generator with ``null_p`` and ``unique`` handling."""
    draw = _compile(g, rng, now, locale, existing)
    null_p = g.get("null_p")
    if g.get("unique"):
        seen: set[Any] = set()
        base = draw

        def draw(i: int, row: dict[str, Any]) -> Any:  # noqa: F811 - deliberate wrapper
            value = base(i, row)
            for attempt in range(1, 10_000):
                if value not in seen:
                    break
                # Redraw a few times (keeps codes shaped right), then make the value distinct.
                value = base(i, row) if attempt < 20 else _uniquify(value, attempt)
            seen.add(value)
            return value

    if null_p:
        inner = draw
        return lambda i, row: None if rng.random() < null_p else inner(i, row)
    return draw


def _table_order(spec: dict[str, Any]) -> list[dict[str, Any]]:
    """Tables in foreign-key order, so referenced rows exist before referencing ones."""
    import networkx as nx

    graph = nx.DiGraph()
    by_name = {t["name"]: t for t in spec["tables"]}
    graph.add_nodes_from(by_name)
    for t in spec["tables"]:
        for c in t["columns"]:
            if c.get("references"):
                parent = c["references"].split(".")[0]
                if parent != t["name"]:
                    graph.add_edge(parent, t["name"])
    return [by_name[n] for n in nx.lexicographical_topological_sort(graph)]


def generate(conn: sqlite3.Connection, spec: dict[str, Any]) -> None:
    """Fill an empty schema with the spec's data recipe."""
    recipe = spec["data"]
    if "generator" in recipe:
        get_data_generator(recipe["generator"])(conn, spec)
        return
    now = parse_now(spec["now"])
    locale = recipe.get("locale", "en_US")
    existing: dict[str, list[Any]] = {}
    for table in _table_order(spec):
        plan = recipe["tables"].get(table["name"])
        if plan is None:
            continue
        rng = random.Random(f"{recipe['seed']}:{table['name']}")
        factories = {name: column_generator(g, rng, now, locale, existing) for name, g in plan["columns"].items()}
        pk = next((c["name"] for c in table["columns"] if c.get("primary_key")), None)
        rows = []
        for i in range(plan["rows"]):
            row: dict[str, Any] = {}
            if pk and pk not in factories:
                row[pk] = i + 1
            for name, factory in factories.items():
                row[name] = factory(i, row)
            rows.append(row)
        if rows:
            # executemany, not sqlite_utils.insert_all: the latter JSON-inspects every value and
            # dominated build time (~40% of a synthesised env's build).
            cols = list(rows[0])
            marks = ", ".join("?" * len(cols))
            names = ", ".join(f'"{c}"' for c in cols)
            conn.executemany(f'INSERT INTO "{table["name"]}" ({names}) VALUES ({marks})', [tuple(r.values()) for r in rows])
        for c in table["columns"]:
            existing[f"{table['name']}.{c['name']}"] = [r.get(c["name"]) for r in rows]
