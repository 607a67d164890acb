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

import sqlite_utils

DataGenerator = Callable[[sqlite3.Connection, dict[str, Any]], None]
_GENERATORS: dict[str, DataGenerator] = {}


def data_generator(name: str) -> Callable[[DataGenerator], DataGenerator]:
    """Register a Python data generator for hand-built domains: ``fn(conn, spec)``."""

    def deco(fn: DataGenerator) -> DataGenerator:
        _GENERATORS[name] = fn
        return fn

    return deco


def get_data_generator(name: str) -> DataGenerator:
    if name not in _GENERATORS:
        # Hand-built domains register on import; import lazily to keep start-up cheap.
        from agentworld_envs import domains  # noqa: F401

        domains.load(name)
    return _GENERATORS[name]


@functools.lru_cache(maxsize=512)
def faker_pool(locale: str, provider: str, size: int = 512, seed: int = 0) -> tuple[Any, ...]:
    """``size`` values of one Faker provider, drawn deterministically."""
    from faker import Faker

    fake = Faker(locale)
    fake.seed_instance(seed)
    fn = getattr(fake, provider)
    return tuple(fn() for _ in range(size))


def parse_now(now: str) -> dt.datetime:
    return dt.datetime.strptime(now, "%Y-%m-%dT%H:%M:%SZ")


def _code(rng: random.Random, pattern: str) -> str:
    return "".join(
        rng.choice(string.digits) if ch == "#" else rng.choice(string.ascii_uppercase) if ch == "?" else ch
        for ch in pattern
    )


class ValueFactory:
    """Turns one column generator description into values, row by row."""

    def __init__(self, gen: dict[str, Any], rng: random.Random, now: dt.datetime, locale: str,
                 existing: dict[str, list[Any]]):
        self.gen, self.rng, self.now, self.locale, self.existing = gen, rng, now, locale, existing
        self.seen: set[Any] = set()

    def __call__(self, row_index: int, row: dict[str, Any]) -> Any:
        g, rng = self.gen, self.rng
        if "null_p" in g and rng.random() < g["null_p"]:
            return None
        kind = g["gen"]
        for attempt in range(1000):
            value = self._draw(kind, g, rng, row_index, row, attempt)
            if not g.get("unique") or value not in self.seen:
                self.seen.add(value)
                return value
        raise ValueError(f"could not draw a unique value for {g}")

    def _draw(self, kind: str, g: dict[str, Any], rng: random.Random, i: int, row: dict[str, Any], attempt: int) -> Any:
        if kind == "const":
            return g["value"]
        if kind == "sequence":
            return g.get("start", 1) + i * g.get("step", 1)
        if kind == "int":
            return rng.randint(g["min"], g["max"])
        if kind in ("float", "money"):
            return round(rng.uniform(g["min"], g["max"]), g.get("decimals", 2))
        if kind == "bool":
            return int(rng.random() < g.get("p", 0.5))
        if kind == "choice":
            return rng.choices(g["values"], weights=g.get("weights"))[0]
        if kind == "ref":
            pool = self.existing[g["ref"]]
            return rng.choice(pool) if pool else None
        if kind == "code":
            return _code(rng, g["pattern"])
        if kind == "format":
            # e.g. "{first_name}.{last_name}@{domain}" over already generated columns of this row
            value = g["template"].format(**row, i=i + 1)
            return value if attempt == 0 else f"{value}{attempt}" if "@" not in value else value.replace("@", f"{attempt}@", 1)
        if kind in ("date", "datetime"):
            lo, hi = g.get("days", [-365, 0])
            moment = self.now + dt.timedelta(seconds=rng.randint(int(lo * 86400), int(hi * 86400)))
            if kind == "date":
                return moment.date().isoformat()
            return moment.replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")
        if kind == "faker":
            pool = faker_pool(g.get("locale", self.locale), g["provider"], g.get("pool", 512))
            value = rng.choice(pool)
            if isinstance(value, (dt.date, dt.datetime)):
                value = value.isoformat()
            if attempt and g.get("unique"):
                value = f"{value} {attempt + 1}" if "@" not in str(value) else str(value).replace("@", f"{attempt}@", 1)
            return value
        if kind == "words":
            pool = faker_pool(g.get("locale", "en_US"), "word", 1024)
            lo, hi = g.get("count", [2, 6])
            return " ".join(rng.choice(pool) for _ in range(rng.randint(lo, hi)))
        if kind == "pick":
            # one of a fixed list, each used at most once per table when unique
            values = g["values"]
            return values[i % len(values)] if g.get("cycle") else rng.choice(values)
        raise ValueError(f"unknown generator kind {kind!r}")


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
    db = sqlite_utils.Database(conn)
    existing: dict[str, list[Any]] = {}
    for table in _table_order(spec):
        plan = recipe["tables"].get(table["name"])
        if plan is None:
            continue
        rng = random.Random(f"{recipe['seed']}:{table['name']}")
        factories = {name: ValueFactory(g, rng, now, locale, existing) for name, g in plan["columns"].items()}
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
            db[table["name"]].insert_all(rows, batch_size=500)
        for c in table["columns"]:
            existing[f"{table['name']}.{c['name']}"] = [r.get(c["name"]) for r in rows]
