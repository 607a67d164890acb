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

import bisect
import calendar
import datetime as dt
import functools
import math
import random
import re
import sqlite3
import string
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ..util.registry import Registry
from .textgen import text_drawer


DataGenerator = Callable[[sqlite3.Connection, dict[str, Any]], None]
#: Python data generators of hand-built domains: ``fn(conn, spec)``.
DATA_GENERATORS: Registry[DataGenerator] = Registry("data generator")
data_generator = DATA_GENERATORS.register
get_data_generator = DATA_GENERATORS.get


#: Faker providers whose value belongs to one holder (an account's IBAN, a vehicle's plate, a person's phone):
#: two rows sharing one reads as fraud or a data error, so they are dealt out of a pool without repeats.
OWN_PROVIDERS = frozenset({"iban", "bban", "license_plate", "phone_number", "msisdn", "ssn", "vin", "isbn13",
                           "isbn10", "ean13", "credit_card_number", "passport_number"})

#: Faker data some locales build as ``list(set(...))`` (it_IT's cities), whose order follows the process's hash
#: seed: sorted on the instance before any draw, so a pool is the same in every process.
_SET_BUILT = ("cities",)


@functools.lru_cache(maxsize=512)
def faker_pool(locale: str, provider: str, size: int = 512, seed: int = 0) -> tuple[Any, ...]:
    """``size`` values of one Faker provider, drawn deterministically."""
    from faker import Faker

    fake = Faker(locale)
    fake.seed_instance(seed)
    for prov in fake.providers:
        for name in _SET_BUILT:
            data = getattr(prov, name, None)
            if isinstance(data, list):
                setattr(prov, name, sorted(data))
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
    if kind == "ref" and "room" in g:
        # a record with room left in its schedule: a filter on the pick, fed what was picked
        counts: dict[Any, int] = {}
        inner = _compile({**g, "room": {**g["room"], "counts": counts}, "gen": "roomy_ref"}, rng, now, locale, existing)

        def draw_counted(i: int, row: dict[str, Any]) -> Any:
            pick = inner(i, row)
            if pick is not None:
                counts[pick] = counts.get(pick, 0) + 1
            return pick

        return draw_counted
    if kind in ("ref", "roomy_ref"):
        pool = existing[g["ref"]]
        if not pool:
            return lambda i, row: None
        ok = None
        if "made_by" in g:
            pool = _made_by(g, existing, now) or pool
            ok = _made_by_row(g, existing)
        if kind == "roomy_ref":
            roomy = _has_room(g, existing)
            ok = roomy if ok is None else (lambda key, row, a=ok, b=roomy: a(key, row) and b(key, row))
        if "live_parent" in g:
            # only records put out (no bid on a draft lot), where there are any
            pool = _released(g, existing, pool)
        if "in_term" in g:
            term = _in_term(g, existing, now)
            ok = term if ok is None else (lambda key, row, a=ok, b=term: a(key, row) and b(key, row))
        if "quota" in g or "same" in g or "open_parent" in g or "open_through" in g or "alive_after" in g \
                or "started_parent" in g:
            return _constrained_ref(g, rng, pool, existing, ok)
        if "not_after" in g:
            return _started_ref(g, rng, pool, existing, ok)
        if ok is not None:
            fits = ok

            def draw_made_by(i: int, row: dict[str, Any]) -> Any:
                for _ in range(8):
                    pick = rng.choice(pool)
                    if fits(pick, row):
                        return pick
                return rng.choice([o for o in pool if fits(o, row)] or pool)

            return draw_made_by
        if g.get("cover"):
            # every record pointed at at least once while rows last (each order has a line), then at random
            dealt = rng.sample(pool, len(pool))
            return lambda i, row: dealt[i] if i < len(dealt) else rng.choice(pool)
        return lambda i, row: rng.choice(pool)
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
        if g["provider"] in OWN_PROVIDERS:      # one holder's number: dealt out, never shared by two rows
            own = list(dict.fromkeys(faker_pool(g.get("locale", locale), g["provider"], max(g.get("pool", 512), 4096))))
            dealt = rng.sample(own, len(own))
            return lambda i, row: dealt[i % len(dealt)]
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
        floors = list(g.get("at_least", ()))
        fallback = _compile({"gen": g.get("kind", "datetime"), "days": g.get("else_days", [-365, 0])}, rng, now, locale, existing)

        whole = g.get("whole_days", False)
        # a status passed through before the change (an alert triggered, then resolved) came about with the
        # records the row belongs to: not before they were made (``parents``), nor after one was shut (``until``)
        made_of, shut_of = _parents_made(g.get("parents", ()), existing), _parents_shut(g.get("until", ()), existing)

        def draw_after(i: int, row: dict[str, Any]) -> Any:
            base = row.get(of)
            if base is None:
                return fallback(i, row)
            start = parse_when(base)
            # whole days: a hire returned at the time of day it was picked up runs exactly k days
            when = start + (_DAY * rng.randint(int(lo), int(hi)) if whole else dt.timedelta(seconds=rng.randint(lo_s, hi_s)))
            # never before the row's own earlier dates (``at_least``): triggered after it was created
            made = [parse_when(row[c]) for c in floors if row.get(c) and parse_when(row[c]) <= start]
            parent_made = made_of(row)
            made += [parent_made] if parent_made is not None and parent_made <= start else []
            when = max([when, *made])
            shut = shut_of(row)
            if shut is not None and when.date() > shut.date():
                top = min(start, dt.datetime.combine(shut.date(), dt.time(23, 59)))
                floor = max(made, default=top - _DAY * 30)
                if floor <= top:
                    when = _between(rng, max(floor, top - _DAY * 30), top)
            if cap and when > now and start <= now:
                # Never after now, unless the date it follows is still ahead (order first).
                when = start + (_DAY * rng.randint(1, max(1, (now - start) // _DAY)) if whole
                                else (now - start) * rng.random())
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
    if kind == "per_day":
        # A rate per day times the days from one date to another, a started day counting whole.
        rate, start, end = g["of"]

        def per_day(i: int, row: dict[str, Any]) -> Any:
            if row.get(rate) is None or not row.get(start) or not row.get(end):
                return None
            return round(row[rate] * charged_days(row[start], row[end]), 2)

        return per_day
    if kind == "annuity":
        # What repays a loan's principal at its rate over its term, in equal monthly payments.
        principal, rate, months = g["of"]

        def annuity(i: int, row: dict[str, Any]) -> Any:
            p, r, n = row.get(principal), row.get(rate), row.get(months)
            if not isinstance(p, (int, float)) or not isinstance(r, (int, float)) or not isinstance(n, int) or n < 1:
                return None
            return monthly_payment(p, r, n)

        return annuity
    if kind in ("sum", "product"):
        of, factor, less = list(g["of"]), g.get("factor", 1), g.get("less_percent")
        minus, spread = list(g.get("less", ())), g.get("spread")

        def combine(i: int, row: dict[str, Any]) -> Any:
            vals = [row.get(c) or 0 for c in of]
            out = vals[0]
            for v in vals[1:]:
                out = out + v if kind == "sum" else out * v
            if less:   # less a percentage the row gives (a line's discount)
                out *= 1 - (row.get(less) or 0) / 100
            if spread:   # a share that differs from row to row (tax withheld from one payslip's gross)
                out *= rng.uniform(*spread)
            out -= sum(row.get(c) or 0 for c in minus)   # less what the row takes off (a payslip's net)
            return round(out * factor, 2) if kind == "product" else round(out, 2)

        return combine
    if kind == "mime_of":
        of = g["of"]
        return lambda i, row: mime_type(row.get(of))
    # World coherence: values that must agree with the world's clock, a cap, a payment's status or
    # another record (see agentworld_envs.synthesis.semantics, which writes these generators).
    if kind == "clock":
        return _clock_drawer(g, rng, now, locale, existing)
    if kind == "changed":
        return _changed_drawer(g, rng, now, existing)
    if kind == "recent":
        return _recent_drawer(g, rng, now, locale, existing)
    if kind == "terms":
        return _terms_drawer(g, rng, now, locale, existing)
    if kind == "at_most":
        inner, of, lo = _compile(g["inner"], rng, now, locale, existing), g["of"], g.get("min", 0)

        def draw_at_most(i: int, row: dict[str, Any]) -> Any:
            value, cap = inner(i, row), row.get(g["of"])
            if value is None or cap is None or value <= cap:
                return value
            if isinstance(value, int) and isinstance(cap, int):
                return rng.randint(min(lo, cap), cap)
            return round(rng.uniform(min(lo, cap), cap), 2)

        return draw_at_most
    if kind == "at_least":
        inner, of = _compile(g["inner"], rng, now, locale, existing), g["of"]

        def draw_at_least(i: int, row: dict[str, Any]) -> Any:
            value, floor = inner(i, row), row.get(of)
            if value is None or floor is None or value >= floor:
                return value
            if isinstance(value, int) and isinstance(floor, int):
                return rng.randint(floor, max(floor, floor + floor // 2))
            return round(rng.uniform(floor, floor * 1.5 if floor > 0 else floor + 1), 2)

        return draw_at_least
    if kind == "paid":
        of, column = g["of"], g["column"]
        full, partial = set(g.get("full", ())), set(g.get("partial", ()))

        def draw_paid(i: int, row: dict[str, Any]) -> Any:
            due = row.get(of)
            if due is None:
                return None
            state = row.get(column)
            if state in full:
                return due
            if state in partial and due >= 0.02:
                return min(round(due * rng.uniform(0.1, 0.9), 2), round(due - 0.01, 2)) or 0.01
            return 0.0 if state in g.get("none", ()) else min(round(due * rng.uniform(0, 0.9), 2), due)

        return draw_paid
    if kind == "after_parents":
        # Made (or happened) no earlier than the records it belongs to were made, and never after now: no
        # text to a lead before the lead existed.
        inner, as_date, span = _compile(g["inner"], rng, now, locale, existing), g.get("kind") == "date", g.get("span", 30)
        made_of = _parents_made(g["parents"], existing)
        # each record's shut day on its own: where the earliest leaves no room, the next one is kept to and the
        # row lets go of the record shut earlier (``cut_shut_links``), never of them all
        shuts_of = [_parents_shut([u], existing) for u in g.get("until", ())]
        follows = sorted(sources(g["inner"]))   # same-row dates the inner date comes after (an incident's)
        latest = now + dt.timedelta(days=g.get("latest", 0)) - dt.timedelta(minutes=1)

        def draw_made(i: int, row: dict[str, Any]) -> Any:
            value = inner(i, row)
            base = made_of(row)
            if value is None:
                return value
            when = parse_when(value)
            if base is not None and not ((when.date() >= base.date()) if as_date else when > base):
                lo = dt.datetime.combine(base.date(), dt.time()) if as_date else base + dt.timedelta(minutes=1)
                if lo <= latest:   # else made after the latest this date may be: the reference chose another record
                    value = _fmt(_between(rng, lo, min(lo + _DAY * span, latest)), as_date)
                    when = parse_when(value)
            for shut in sorted(s for s in (f(row) for f in shuts_of) if s is not None):
                if when.date() <= shut.date():
                    break
                # made no later than the day the record it belongs to was shut (and never before its making)
                hi = dt.datetime.combine(shut.date(), dt.time(23, 59)) if as_date else max(
                    shut, min(dt.datetime.combine(shut.date(), dt.time(23, 59)), base or shut))   # that day, after its floor
                lo = max([hi - _DAY * span, *([base] if base else []), *_row_dates(row, follows)])
                if lo <= hi:
                    value = _fmt(_between(rng, lo, hi), as_date)
                    break
            return value

        return draw_made
    if kind == "not_before":
        # Not before a date of the record it belongs to (a rent payment is not due before its lease starts),
        # on the same side of today as drawn where the two allow it.
        inner, via, as_date = _compile(g["inner"], rng, now, locale, existing), g["via"], g.get("kind") == "date"
        where, source, span = _id_index(existing, g["table"]), existing.get(f"{g['table']}.{g['field']}", []), g.get("span", 30)
        today = now.replace(hour=0, minute=0, second=0)

        def draw_not_before(i: int, row: dict[str, Any]) -> Any:
            value = inner(i, row)
            at = where.get(row.get(via))
            base = source[at] if at is not None else None
            if value is None or not base or value[:10] >= base[:10]:
                return value
            lo, when = parse_when(base[:10]) + _DAY, parse_when(value)
            hi = lo + _DAY * span
            if when < today and lo < today - _DAY:
                hi = min(hi, today - _DAY)
            elif when >= today + _DAY:
                lo = max(lo, today + _DAY * 2)
                hi = max(hi, lo + _DAY * span)
            return _fmt(_between(rng, lo, hi), as_date)

        return draw_not_before
    if kind == "within":
        # Never above (``side: max``) or below (``min``) a figure of the record it points at: a dispute of a
        # payment is about no more than it; a booking's total costs at least one of what it books.
        inner, via, most = _compile(g["inner"], rng, now, locale, existing), g["via"], g.get("side") == "max"
        where, source = _id_index(existing, g["table"]), existing.get(f"{g['table']}.{g['field']}", [])

        def draw_within(i: int, row: dict[str, Any]) -> Any:
            value = inner(i, row)
            at = where.get(row.get(via))
            bound = source[at] if at is not None else None
            if not isinstance(value, (int, float)) or not isinstance(bound, (int, float)):
                return value
            if most and value > bound:
                return rng.randint(min(1, bound), bound) if isinstance(value, int) and isinstance(bound, int) \
                    else round(rng.uniform(bound * 0.2, bound), 2)
            if not most and value < bound:
                return rng.randint(bound, bound * 3) if isinstance(value, int) and isinstance(bound, int) \
                    else round(bound * rng.choice((1, 1, 2, 3, 4)), 2)
            return value

        return draw_within
    if kind == "differs":
        # Not the value of ``apart_from`` (a route's other end): redrawn until it differs.
        inner, other = _compile(g["inner"], rng, now, locale, existing), g["apart_from"]

        def draw_differs(i: int, row: dict[str, Any]) -> Any:
            value = inner(i, row)
            for _ in range(50):
                if value is None or value != row.get(other):
                    break
                value = inner(i, row)
            return value

        return draw_differs
    if kind == "accrued":
        # No more than ``per_day`` a day since ``since`` (a player's hours since joining): above that, a share of it.
        inner, since, per_day = _compile(g["inner"], rng, now, locale, existing), g["since"], g["per_day"]

        def draw_accrued(i: int, row: dict[str, Any]) -> Any:
            value = inner(i, row)
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not row.get(since):
                return value
            return _within(value, per_day * max(0.0, (now - parse_when(row[since])) / _DAY), rng, 2)

        return draw_accrued
    if kind == "floored":
        # Never before another date of the row (``floor``): registered no earlier than born.
        inner, floor, as_date = _compile(g["inner"], rng, now, locale, existing), g["floor"], g.get("kind") == "date"

        def draw_floored(i: int, row: dict[str, Any]) -> Any:
            value, base = inner(i, row), row.get(floor)
            if not value or not base or str(value)[:10] >= str(base)[:10]:
                return value
            lo = parse_when(base)
            return _fmt(_between(rng, lo, max(lo, now - dt.timedelta(minutes=1))), as_date)

        return draw_floored
    if kind == "period_end":
        # A live subscription's current period ends at its first renewal after now: the start plus whole billing
        # periods. Other statuses keep the inner date.
        inner, start, period, column, live = _compile(g["inner"], rng, now, locale, existing), g["start"], g["period"], \
            g["column"], set(g["live"])

        def draw_period_end(i: int, row: dict[str, Any]) -> Any:
            value = inner(i, row)
            step = BILLING_PERIODS.get(str(row.get(period)))
            if row.get(column) not in live or step is None or not row.get(start):
                return value
            begun, k = parse_when(row[start]), 1
            while (end := _plus_months(begun, step[0] * k) + _DAY * (step[1] * k)) <= now:
                k += 1
            return _fmt(end, g.get("kind") == "date")

        return draw_period_end
    if kind == "minutes_between":
        # Whole minutes from one timestamp of the row to another (an incident's length, declared to resolved).
        start, end = g["start"], g["end"]

        def draw_minutes(i: int, row: dict[str, Any]) -> Any:
            if not row.get(start) or not row.get(end):
                return None
            return max(0, round((parse_when(row[end]) - parse_when(row[start])).total_seconds() / 60))

        return draw_minutes
    if kind == "per_year":
        # No more than ``per_year`` a year since the model year (a car's kilometres): above that, a share of it.
        inner, year, per_year = _compile(g["inner"], rng, now, locale, existing), g["year"], g["per_year"]

        def draw_per_year(i: int, row: dict[str, Any]) -> Any:
            value, built = inner(i, row), row.get(year)
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not isinstance(built, int):
                return value
            return _within(value, per_year * years_in_use(built, now), rng, 1)

        return draw_per_year
    if kind == "spent_since":
        # Signed up long enough ago to have spent what the row says at ``per_day`` a day at most.
        inner, of, per_day, as_date = _compile(g["inner"], rng, now, locale, existing), g["of"], g["per_day"], \
            g.get("kind") == "date"

        def draw_spent_since(i: int, row: dict[str, Any]) -> Any:
            value, spent = inner(i, row), row.get(of)
            if not value or not isinstance(spent, (int, float)) or isinstance(spent, bool) or spent <= 0:
                return value
            latest = now - _DAY * (spent / per_day + 1)
            if parse_when(value) <= latest:
                return value
            return _fmt(latest - _DAY * rng.uniform(0, 60), as_date)

        return draw_spent_since
    if kind == "soon":
        # In a status under way, expected within ``days[status]`` days of today at the latest (it may be late):
        # a parcel out for delivery arrives tomorrow, not in two months. Never before the same-row dates it follows.
        inner, column, days, as_date = _compile(g["inner"], rng, now, locale, existing), g["column"], g["days"], \
            g.get("kind") == "date"
        follows = sorted(sources(g["inner"]) | set(g.get("after", ())))
        start_of_today = now.replace(hour=0, minute=0, second=0)

        def draw_soon(i: int, row: dict[str, Any]) -> Any:
            value = inner(i, row)
            ahead = days.get(row.get(column))
            if value is None or ahead is None:
                return value
            hi = start_of_today + _DAY * (ahead + 1) - dt.timedelta(minutes=1)
            if parse_when(value) <= hi:
                return value
            step = _DAY if as_date else dt.timedelta(hours=1)   # strictly after what it follows
            lo = max([start_of_today - _DAY * 2, *(d + step for d in _row_dates(row, follows))])
            return value if lo > hi else _fmt(_between(rng, lo, hi), as_date)   # (what it follows comes later)

        return draw_soon
    if kind == "elapsed":
        # The time from a date of the record the row points at to a date of the row (a review's hours from its pull
        # request's opening to its submission), in ``unit``; the default generator where either is missing.
        default, via, of = _compile(g["default"], rng, now, locale, existing), g["via"], g["of"]
        where, source = _id_index(existing, g["table"]), existing.get(f"{g['table']}.{g['field']}", [])
        per = {"hours": 3600.0, "minutes": 60.0, "days": 86400.0}[g["unit"]]

        def draw_elapsed(i: int, row: dict[str, Any]) -> Any:
            at = where.get(row.get(via))
            since, until = (source[at] if at is not None else None), row.get(of)
            if not since or not until:
                return default(i, row)
            seconds = (parse_when(until) - parse_when(since)).total_seconds()
            return round(max(0.0, seconds) / per, g.get("decimals", 1))

        return draw_elapsed
    if kind == "band":
        # Where a figure lies against a range keyed by another column (a lab value against its analyte's reference
        # range): the label below, within (ends included) or above it; the default generator for a key with none.
        default, ranges, (below, within, above) = _compile(g["default"], rng, now, locale, existing), g["ranges"], g["labels"]

        def draw_band(i: int, row: dict[str, Any]) -> Any:
            band, value = ranges.get(row.get(g["column"])), row.get(g["of"])
            if band is None or not isinstance(value, (int, float)):
                return default(i, row)
            return below if value < band[0] else above if value > band[1] else within

        return draw_band
    if kind == "rollup":
        # Drawn as its inner value; ``roll_up`` sets it to the sum of the record's lines once they are drawn.
        return _compile(g["inner"], rng, now, locale, existing)
    if kind == "part_of":
        # Drawn as its inner value; ``fit_parts`` scales a whole's parts down once the table is drawn.
        return _compile(g["inner"], rng, now, locale, existing)
    if kind == "email_of":
        inner, of = _compile(g["inner"], rng, now, locale, existing), list(g["of"])

        def draw_email(i: int, row: dict[str, Any]) -> Any:
            drawn = inner(i, row)
            name = " ".join(str(row[c]) for c in of if row.get(c))
            local = email_local_part(name, rng)
            if not local or not isinstance(drawn, str) or "@" not in drawn:
                return drawn
            return f"{local}@{drawn.split('@', 1)[1]}"

        return draw_email
    if kind == "ordinal":
        return _ordinal_drawer(g, rng, existing)
    if kind == "amortized":
        return _amortized_drawer(g, rng, now, locale, existing)
    if kind == "lookup_row":
        of, as_date = g["of"], g.get("kind") == "date"
        return lambda i, row: row.get(of)[:10] if as_date and row.get(of) else row.get(of)
    if kind == "lookup":
        via, source = g["via"], f"{g['table']}.{g['field']}"
        fallback = _compile(g["else"], rng, now, locale, existing) if g.get("else") else (lambda i, row: None)
        where = _id_index(existing, g["table"])

        def draw_lookup(i: int, row: dict[str, Any]) -> Any:
            at = where.get(row.get(via))
            value = existing[source][at] if at is not None else None
            return fallback(i, row) if value is None else value

        return draw_lookup
    raise ValueError(f"unknown generator kind {kind!r}")


def _has_room(g: dict[str, Any], existing: dict[str, list[Any]]) -> Callable[[Any, dict[str, Any]], bool]:
    """``"room": {"field": F}``: whether a record has room left in its schedule: fewer rows have been drawn for it
    (``counts``, kept by the caller) than its ``F`` (a loan's term in months)."""
    table = g["ref"].split(".")[0]
    length = dict(zip(existing[f"{table}.id"], existing[f"{table}.{g['room']['field']}"]))
    counts = g["room"]["counts"]
    return lambda key, row: isinstance(length.get(key), int) and counts.get(key, 0) < length[key]


def amortized_split(principal: float, annual_rate: float, payment: float, number: int) -> tuple[float, float]:
    """``(interest, principal)`` of instalment ``number`` of a loan repaid by ``payment`` a month: the interest on
    what is left after the instalments before it (at ``annual_rate``, read as :func:`monthly_payment` reads it),
    and the rest of the payment, never more than is left."""
    r = (annual_rate / 100 if annual_rate > 1 else annual_rate) / 12
    grown = (1 + r) ** (number - 1)
    left = max(0.0, principal * grown - payment * (grown - 1) / r if r else principal - payment * (number - 1))
    interest = round(left * r, 2)
    return interest, round(max(0.0, min(payment - interest, left)), 2)


def _amortized_drawer(g: dict[str, Any], rng: random.Random, now: dt.datetime, locale: str,
                      existing: dict[str, list[Any]]) -> Callable[[int, dict[str, Any]], Any]:
    """``{"gen": "amortized", "via": FK, "table": T, "number": COL, "part": "interest_portion" |
    "principal_portion", "inner": GEN}``: the part of its loan's monthly payment instalment ``COL`` pays
    (:func:`amortized_split` of the loan's principal, rate and payment); the inner value where the row has no
    number (a payment ahead of schedule) or the loan lacks a term."""
    inner = _compile(g["inner"], rng, now, locale, existing)
    where, t = _id_index(existing, g["table"]), g["table"]
    terms = [existing.get(f"{t}.{c}", []) for c in ("principal", "interest_rate", "monthly_payment")]
    first = g["part"] == "interest_portion"

    def draw(i: int, row: dict[str, Any]) -> Any:
        value = inner(i, row)   # drawn either way: the rows after it draw as they did
        at, number = where.get(row.get(g["via"])), row.get(g["number"])
        if at is None or not isinstance(number, int) or number < 1:
            return value
        principal, rate, payment = (c[at] if at < len(c) else None for c in terms)
        if not all(isinstance(v, (int, float)) for v in (principal, rate, payment)) or principal <= 0 or payment <= 0:
            return value
        return amortized_split(principal, rate, payment, number)[0 if first else 1]

    return draw


def _ordinal_drawer(g: dict[str, Any], rng: random.Random, existing: dict[str, list[Any]]
                    ) -> Callable[[int, dict[str, Any]], Any]:
    """``{"gen": "ordinal", "via": FK, "table": T, "field": F}``: a place in the schedule of the record ``FK``
    names (an instalment's number), from 1 to that record's ``F`` (its term), one not yet taken by a row of the
    same record while any is free; none once all are taken, where the column may be empty."""
    where, source = _id_index(existing, g["table"]), existing[f"{g['table']}.{g['field']}"]
    taken: dict[Any, set[int]] = {}

    def draw(i: int, row: dict[str, Any]) -> Any:
        key = row.get(g["via"])
        at = where.get(key)
        length = source[at] if at is not None else None
        if not isinstance(length, int) or length < 1:
            return None
        used = taken.setdefault(key, set())
        pick = rng.randint(1, length)
        if pick in used and len(used) < length:
            pick = rng.choice([n for n in range(1, length + 1) if n not in used])
        elif pick in used and g.get("nullable", True):
            return None   # a payment beyond the schedule (paid ahead), not a second instalment of one place
        used.add(pick)
        return pick

    return draw


def _constrained_ref(g: dict[str, Any], rng: random.Random, pool: list[Any], existing: dict[str, list[Any]],
                     fits: Callable[[Any, dict[str, Any]], bool] | None = None) -> Callable[[int, dict[str, Any]], Any]:
    """A reference that respects a quota and/or points at a record of the same parent.

    ``"quota": {"column": "status", "in": [...], "cap": N}``: a row in one of those statuses goes to a
    parent holding fewer than N of them (the history obeys the quota rule). ``"same": {"column": COL,
    "via": COL2}``: only a target whose ``COL2`` equals this row's ``COL`` (a card payment of a bidder
    points at that bidder's order). ``"open_parent": {"column": "status", "in": [...], "parent_not_in":
    [...]}``: a row in one of those statuses points at a parent whose status is not in ``parent_not_in`` (a
    booking still confirmed is never under a cancelled flight: cancelling the flight cancels it).
    ``"started_parent"`` (the same form): a row whose work has taken place (in progress, done, attended) points
    at a parent that has started (no done task under a project still in its backlog). ``None`` where no target
    qualifies and the column may be empty.
    """
    quota, same, open_parent = g.get("quota"), g.get("same"), g.get("open_parent")
    alive = _alive_after(g, existing) if "alive_after" in g else None
    closed: set[Any] = set()
    if open_parent:
        table = g["ref"].split(".")[0]
        shut = set(open_parent["parent_not_in"])
        closed = {key for key, st in zip(existing[f"{table}.id"], existing[f"{table}.status"]) if st in shut}
    started_parent, unstarted = g.get("started_parent"), set()
    if started_parent:
        table = g["ref"].split(".")[0]
        before = set(started_parent["parent_not_in"])
        unstarted = {key for key, st in zip(existing[f"{table}.id"], existing[f"{table}.status"]) if st in before}
    # ``"open_through": [{"column", "in", "parent_not_in", "table": T, "field": F}]``: a row in one of those
    # statuses points at a record whose ``F`` (a key to T) names a T not in ``parent_not_in`` (a request still
    # open is for an app whose designer's seat has not ended: the request's designer is the app's)
    through = []
    for c in g.get("open_through", ()):
        table = g["ref"].split(".")[0]
        status_of = dict(zip(existing[f"{c['table']}.id"], existing[f"{c['table']}.status"]))
        shut = set(c["parent_not_in"])
        through.append((c, {key for key, owner in zip(existing[f"{table}.id"], existing[f"{table}.{c['field']}"])
                            if status_of.get(owner) in shut}))
    counts: dict[Any, int] = {}
    held: dict[int, Any] = {}   # the record each row counts against a quota (a row drawn again lets go of it)
    by_parent: dict[Any, list[Any]] = {}
    if same:
        table = g["ref"].split(".")[0]
        released = set(pool) if "live_parent" in g else None   # the same owner's, never one of its drafts
        for key, parent in zip(existing[f"{table}.id"], existing[f"{table}.{same['via']}"]):
            if released is None or key in released:
                by_parent.setdefault(parent, []).append(key)
    nullable = g.get("nullable", True)
    started = g.get("not_after")
    starts = _start_dates(g, existing) if started else {}

    def draw(i: int, row: dict[str, Any]) -> Any:
        if i in held:   # drawn again (an event moved off a record it clashed on): its old record has room again
            counts[held[i]] -= 1
            del held[i]
        options = pool
        if same:
            if row.get(same["column"]) is None:
                return None if nullable else rng.choice(pool)
            options = by_parent.get(row.get(same["column"]), [])
        if started and row.get(started["column"]):
            # Only records already started by this row's date (see _started_ref), where there are any.
            by = str(row[started["column"]])
            options = [o for o in options if _started_by(starts, o, by)] or options
        unfit = options   # before fits: a quota's room comes before a fit
        if fits is not None:
            options = [o for o in options if fits(o, row)] or options
        if alive is not None:
            # none alive when this row's other records came about: better none than one shut before them
            kept = [o for o in options if alive(o, row)]
            if not kept and g.get("null_p"):
                return None
            options = kept or [o for o in pool if alive(o, row)] or options
        if closed and row.get(open_parent["column"]) in open_parent["in"]:
            options = [o for o in options if o not in closed]
            unfit = [o for o in unfit if o not in closed]
            if not options:
                return None if g.get("null_p") else rng.choice([o for o in pool if o not in closed] or pool)
        if unstarted and row.get(started_parent["column"]) in started_parent["in"]:
            options = [o for o in options if o not in unstarted]
            unfit = [o for o in unfit if o not in unstarted]
            if not options:
                if g.get("null_p"):
                    return None
                # one that has started and was not shut before the row came about, else one that has started
                begun = [o for o in pool if o not in unstarted | closed]
                return rng.choice([o for o in begun if alive is None or alive(o, row)] or begun or pool)
        preferred = options
        for c, shut_through in through:
            if shut_through and row.get(c["column"]) in c["in"]:
                options = [o for o in options if o not in shut_through] or options
        counted = quota and row.get(quota["column"]) in quota["in"]
        if counted:
            choice = None
            for _ in range(8):
                pick = rng.choice(options) if options else None
                if pick is not None and counts.get(pick, 0) < quota["cap"]:
                    choice = pick
                    break
            if choice is None:
                free = [o for o in options if counts.get(o, 0) < quota["cap"]]
                free = free or [o for o in preferred if counts.get(o, 0) < quota["cap"]] \
                    or [o for o in unfit if counts.get(o, 0) < quota["cap"]]   # the quota first
                choice = rng.choice(free) if free else None
            if choice is not None:
                counts[choice] = counts.get(choice, 0) + 1
                held[i] = choice
                return choice
            if nullable:
                return None
            # no room anywhere: still never open under a shut record, nor worked under one not started
            shut_now = closed if open_parent and row.get(open_parent["column"]) in open_parent["in"] else set()
            if unstarted and row.get(started_parent["column"]) in started_parent["in"]:
                shut_now = shut_now | unstarted
            return rng.choice([o for o in pool if o not in shut_now] or pool)
        if not options:
            if nullable:
                return None
            # no record of the same parent, and one must be named: one that belongs to no parent does not
            # belong to another
            return rng.choice(by_parent.get(None) or pool)
        return rng.choice(options)

    return draw


def _started_ref(g: dict[str, Any], rng: random.Random, pool: list[Any], existing: dict[str, list[Any]],
                 fits: Callable[[Any, dict[str, Any]], bool] | None = None) -> Callable[[int, dict[str, Any]], Any]:
    """A reference to a record that had started by a date of this row: ``"not_after": {"column": COL,
    "field": START}`` (a rent payment due on COL belongs to a lease whose START is not later). Where none
    qualifies: no record if the reference may be empty, else the one that started first."""
    column, nullable = g["not_after"]["column"], bool(g.get("null_p"))
    starts = _start_dates(g, existing)
    released = set(pool) if "live_parent" in g else None   # never a fallback to a draft
    ordered = sorted((str(v)[:10], k) for k, v in starts.items() if v and (released is None or k in released))
    dates = [d for d, _ in ordered]

    def draw(i: int, row: dict[str, Any]) -> Any:
        by = row.get(column)
        if not by:
            return rng.choice(pool)
        for _ in range(8):
            pick = rng.choice(pool)
            if _started_by(starts, pick, by) and (fits is None or fits(pick, row)):
                return pick
        if fits is not None:
            both = [o for o in pool if _started_by(starts, o, by) and fits(o, row)]
            if both:
                return rng.choice(both)
        n = bisect.bisect_right(dates, by[:10])
        if n:
            return ordered[rng.randrange(n)][1]
        # none had started by then: no link where the row may have none, else the first to start
        return None if nullable or not ordered else ordered[0][1]

    return draw


def _made_days(g: dict[str, Any], existing: dict[str, list[Any]]) -> tuple[list[Any], dict[Any, str]]:
    """``made_by``'s ``{"fields": [COL, ...], "through": {"field": FK, "table": T}, "own": [COL, ...]}``: the keys
    the reference may name, and the day each was made (the latest of its COLs; through ``FK``, its record's, and
    of its own ``own`` COLs), where known."""
    spec = g["made_by"]
    table = g["ref"].split(".")[0]
    keys = existing[f"{table}.id"]
    if "through" in spec:
        made_table, at = spec["through"]["table"], _id_index(existing, spec["through"]["table"])
        rows = [at.get(v) for v in existing.get(f"{table}.{spec['through']['field']}", [None] * len(keys))]
    else:
        made_table, rows = table, list(range(len(keys)))
    columns = [existing.get(f"{made_table}.{f}", ()) for f in spec["fields"]]
    # ``"in": {COL: [statuses]}``: a COL that counts only where the record is in one of them (a charge's last
    # change where it is captured)
    only = [set(spec.get("in", {}).get(f, ())) for f in spec["fields"]]
    status = existing.get(f"{made_table}.status", ())
    own = [existing.get(f"{table}.{f}", ()) for f in spec.get("own", ())]   # (with ``through``: its own making too)
    made: dict[Any, str] = {}
    for i, (key, n) in enumerate(zip(keys, rows)):
        days = [str(c[n])[:10] for c, o in zip(columns, only) if n is not None and n < len(c) and c[n]
                and (not o or n < len(status) and status[n] in o)]
        days += [str(c[i])[:10] for c in own if i < len(c) and c[i]]
        if days:
            made[key] = max(days)
    return keys, made


def _made_by(g: dict[str, Any], existing: dict[str, list[Any]], now: dt.datetime) -> list[Any]:
    """``"made_by": {..., "days": D}``: the records the reference may name that were made before the day D
    days from now (see :func:`_made_days`), so what this row records can follow their making."""
    keys, made = _made_days(g, existing)
    cutoff = (now + dt.timedelta(days=g["made_by"]["days"])).date().isoformat()
    return [key for key in keys if key not in made or made[key] < cutoff]


def _made_by_row(g: dict[str, Any], existing: dict[str, list[Any]]) -> Callable[[Any, dict[str, Any]], bool] | None:
    """With ``made_by``'s ``"by": [COL, ...]``: whether a record was made no later than the day of each COL of
    the row (an invoice issued on a day names an importer taken on by then); None without."""
    by = list(g["made_by"].get("by", ()))
    if not by:
        return None
    _, made = _made_days(g, existing)

    def fits(key: Any, row: dict[str, Any]) -> bool:
        day = made.get(key)
        return day is None or all(not row.get(c) or str(row[c])[:10] >= day for c in by)

    return fits


def _alive_after(g: dict[str, Any], existing: dict[str, list[Any]]) -> Callable[[Any, dict[str, Any]], bool]:
    """``"alive_after": {"parents": [{"via": FK, "table": T, "field": COL}], "in": [statuses]}``: whether a
    record was not shut (its status one of ``in``) nor closed (``"closes": COL``) before the latest making of the
    row's other records (a delivery's courier had not left before its customer signed up, so the order fits
    between the two)."""
    spec = g["alive_after"]
    table = g["ref"].split(".")[0]
    shut = set(spec["in"])
    shut_on = {key: str(day)[:10] for key, st, day in zip(existing[f"{table}.id"], existing.get(f"{table}.status", ()),
                                                          existing.get(f"{table}.status_changed_at", ())) if st in shut and day}
    made_of = _parents_made(spec["parents"], existing)
    # ``"made": COL, "before_shut": [...]`` (as ``until``): a record made no later than the day the row's other
    # records were shut (an approval requested before its page was archived)
    made_on = dict(zip(existing[f"{table}.id"], existing.get(f"{table}.{spec['made']}", ()))) if spec.get("made") else {}
    shut_of = _parents_shut(spec.get("before_shut", ()), existing)
    by = list(spec.get("by", ()))   # the row's own dates of making, drawn before the key
    # ``"closes": COL``: the day the record stops taking rows, whatever its status (a survey's closing day)
    closes_on = {key: str(day)[:10] for key, day in zip(existing[f"{table}.id"],
                                                        existing.get(f"{table}.{spec['closes']}", ())) if day} \
        if spec.get("closes") else {}

    def fits(key: Any, row: dict[str, Any]) -> bool:
        made, day = made_of(row), shut_on.get(key)
        if made is not None and any(d is not None and d < made.date().isoformat() for d in (day, closes_on.get(key))):
            return False
        if day is not None and any(row.get(c) and str(row[c])[:10] > day for c in by):
            return False
        closed, born = shut_of(row), made_on.get(key)
        return closed is None or not born or str(born)[:10] <= closed.date().isoformat()

    return fits


def _in_term(g: dict[str, Any], existing: dict[str, list[Any]], now: dt.datetime) -> Callable[[Any, dict[str, Any]], bool]:
    """``"in_term": {"end": COL, "column": "status", "windows": {STATE: DAYS}}``: whether a record's term (ending on
    its ``COL``) had not ended before the last ``DAYS`` days, for a row in ``STATE`` whose date lies in them (a claim
    under review for an incident of the last 90 days is on a policy in force then)."""
    spec = g["in_term"]
    table = g["ref"].split(".")[0]
    ends = dict(zip(existing[f"{table}.id"], existing.get(f"{table}.{spec['end']}", ())))
    opens = {state: (now.date() + dt.timedelta(days=days)).isoformat() for state, days in spec["windows"].items()}

    def fits(key: Any, row: dict[str, Any]) -> bool:
        first, end = opens.get(row.get(spec["column"])), ends.get(key)
        return first is None or not end or str(end)[:10] >= first

    return fits


def _released(g: dict[str, Any], existing: dict[str, list[Any]], pool: list[Any]) -> list[Any]:
    """``"live_parent": {"parent_not_in": [...]}``: the keys of ``pool`` whose record's status is not one it has
    never been put out in (a draft, unpublished); all of ``pool`` where none is."""
    table = g["ref"].split(".")[0]
    unreleased = set(g["live_parent"]["parent_not_in"])
    out = {k for k, st in zip(existing[f"{table}.id"], existing.get(f"{table}.status", ())) if st not in unreleased}
    return [k for k in pool if k in out] or pool


def _start_dates(g: dict[str, Any], existing: dict[str, list[Any]]) -> dict[Any, Any]:
    """``"not_after"``'s start date of every record the reference may name, by id."""
    table = g["ref"].split(".")[0]
    return dict(zip(existing[f"{table}.id"], existing.get(f"{table}.{g['not_after']['field']}", ())))


def _started_by(starts: dict[Any, Any], key: Any, by: str) -> bool:
    """Whether record ``key`` has no start date or had started by the date ``by`` (days compared)."""
    return not starts.get(key) or str(starts[key])[:10] <= by[:10]


def _id_index(existing: dict[str, list[Any]], table: str) -> dict[Any, int]:
    """A generated table's primary key → its row position."""
    return {v: n for n, v in enumerate(existing.get(f"{table}.id", ()))}


_DAY = dt.timedelta(days=1)


#: A billing period's length as (months, days), by the name a subscription gives it.
BILLING_PERIODS = {"weekly": (0, 7), "biweekly": (0, 14), "monthly": (1, 0), "quarterly": (3, 0), "semiannual": (6, 0),
                   "semi_annual": (6, 0), "annual": (12, 0), "annually": (12, 0), "yearly": (12, 0)}


def _within(value: float, cap: float, rng: random.Random, decimals: int) -> float:
    """``value`` where it is at most ``cap``; above it, a share of the cap (what accrues over time: a player's hours,
    a car's kilometres), a whole number where ``value`` is one."""
    if value <= cap:
        return value
    share = rng.uniform(0.1, 1.0) * cap
    return int(share) if isinstance(value, int) else round(share, decimals)


def _plus_months(when: dt.datetime, months: int) -> dt.datetime:
    """``when`` moved on by whole calendar months (the 31st to the month's last day where it has fewer)."""
    y, m = divmod(when.month - 1 + months, 12)
    year, month = when.year + y, m + 1
    return when.replace(year=year, month=month, day=min(when.day, calendar.monthrange(year, month)[1]))


def period_after(day: str, period: str) -> str:
    """The date one billing ``period`` (:data:`BILLING_PERIODS`) after ``day`` (ISO dates)."""
    months, days = BILLING_PERIODS[period]
    return (_plus_months(parse_when(day), months) + _DAY * days).date().isoformat()


def years_in_use(model_year: float, now: dt.datetime) -> float:
    """Years a vehicle of ``model_year`` has been on the road by ``now``: from the middle of the year before it
    (next year's models sell from the summer), and at least a quarter of a year."""
    return max(0.25, now.year + (now.timetuple().tm_yday - 1) / 365.25 - model_year + 0.5)


def _fmt(when: dt.datetime, as_date: bool) -> str:
    return when.date().isoformat() if as_date else when.strftime("%Y-%m-%dT%H:%M:%SZ")


def _between(rng: random.Random, lo: dt.datetime, hi: dt.datetime) -> dt.datetime:
    if hi <= lo:
        return lo
    return lo + dt.timedelta(seconds=rng.randint(0, int((hi - lo).total_seconds())))


def _clock_drawer(g: dict[str, Any], rng: random.Random, now: dt.datetime, locale: str,
                  existing: dict[str, list[Any]]) -> Callable[[int, dict[str, Any]], Any]:
    """A date that agrees with its record's status and the world's clock.

    ``{"gen": "clock", "inner": GEN, "column": "status", "past": [...], "future": [...], "floor": COL,
    "kind": "date" | "datetime", "span": DAYS, "lasts": COL, "ended": [...]}``: a record in a ``past`` status
    has the date at least a day before now (a finished session took place), one in an ``ended`` status its
    ``lasts`` days (a stay's nights) earlier still; one in a ``future`` status at least a day after (a
    scheduled one has not); never before ``floor`` (the earlier date of the same record). Today itself
    is neither, so a date-only reading agrees too.
    """
    inner = _compile(g["inner"], rng, now, locale, existing)
    column, past, future = g.get("column", "status"), set(g.get("past", ())), set(g.get("future", ()))
    floor_col, as_date, span = g.get("floor"), g.get("kind") == "date", dt.timedelta(days=g.get("span", 90))
    start_of_today = now.replace(hour=0, minute=0, second=0)

    whole = g.get("whole_days", False)

    def snap(value: str, drawn: dt.datetime | None, floor: dt.datetime | None, lo: dt.datetime, hi: dt.datetime) -> str:
        """A redrawn end of a hire, moved to whole days after its start within [lo, hi] where any fits, as
        near the days first drawn as the clock allows (a hire still out runs to tomorrow, not three months)."""
        if not whole or floor is None:
            return value
        first, last = max(1, -((floor - lo) // _DAY)), (hi - floor) // _DAY
        if first > last:
            return value
        days = min(max(round(((drawn or parse_when(value)) - floor) / _DAY), first), last)
        return _fmt(floor + _DAY * days, as_date)

    def draw(i: int, row: dict[str, Any]) -> Any:
        value = inner(i, row)
        state = row.get(column)
        if state not in past and state not in future:
            return value
        floor = parse_when(row[floor_col]) if floor_col and row.get(floor_col) else None
        when = parse_when(value) if value else None
        if state in past:
            hi = start_of_today - (_DAY * g.get("gap", 1) if as_date else dt.timedelta(seconds=1) + _DAY * (g.get("gap", 1) - 1))
            nights = row.get(g["lasts"]) if state in g.get("ended", ()) else None
            if isinstance(nights, int) and nights > 0:
                hi -= _DAY * nights   # a stay that has ended began its nights before that
            step = _DAY if as_date else dt.timedelta(hours=1)
            if when is not None and when <= hi and (floor is None or when >= floor + step):
                return value
            lo = max(floor + step, hi - span) if floor is not None else hi - span
            return snap(_fmt(_between(rng, min(lo, hi), hi), as_date), when, floor, min(lo, hi), hi)
        lo = start_of_today + _DAY
        if floor is not None:
            lo = max(lo, floor + (_DAY if as_date else dt.timedelta(hours=1)))
        if when is not None and when >= lo:
            return value
        return snap(_fmt(_between(rng, lo, lo + span), as_date), when, floor, lo, lo + span)

    return draw


def _terms_drawer(g: dict[str, Any], rng: random.Random, now: dt.datetime, locale: str,
                  existing: dict[str, list[Any]]) -> Callable[[int, dict[str, Any]], Any]:
    """Payment terms whose due date agrees with the record's status on the world's clock.

    ``{"gen": "terms", "inner": CHOICE, "of": ISSUED, "column": "status", "days": {TERMS: DAYS}, "past": [...],
    "future": [...]}``: among the inner choice's terms, those that make ``ISSUED`` + ``DAYS`` fall before today
    for a ``past`` status (overdue) or after it for a ``future`` one (sent, not yet due), by the inner weights;
    the inner draw where the record has no issue date or no terms fit.
    """
    inner = _compile(g["inner"], rng, now, locale, existing)
    values, weights = list(g["inner"]["values"]), g["inner"].get("weights") or [1] * len(g["inner"]["values"])
    days, column, of = g["days"], g.get("column", "status"), g["of"]
    past, future, today = set(g.get("past", ())), set(g.get("future", ())), now.date()

    def draw(i: int, row: dict[str, Any]) -> Any:
        value = inner(i, row)
        state, issued = row.get(column), row.get(of)
        if not issued or (state not in past and state not in future):
            return value
        start = parse_when(issued).date()
        fits = [(v, w) for v, w in zip(values, weights)
                if (start + dt.timedelta(days=days[v]) < today if state in past else start + dt.timedelta(days=days[v]) > today)]
        if not fits or value in {v for v, _ in fits}:
            return value
        return rng.choices([v for v, _ in fits], weights=[w for _, w in fits])[0]

    return draw


def _recent_drawer(g: dict[str, Any], rng: random.Random, now: dt.datetime, locale: str,
                   existing: dict[str, list[Any]]) -> Callable[[int, dict[str, Any]], Any]:
    """A date of a record in a passing status, no older than the status lasts.

    ``{"gen": "recent", "inner": GEN, "column": "status", "kind": "date" | "datetime", "after": [COL, ...],
    "windows": {STATE: {"days": [LO, HI]} | {"minutes": M}}}``: in a status of ``windows`` the date lies
    from day ``LO`` to day ``HI`` relative to today (an order still processing was placed in the last
    weeks), or in the last ``M`` minutes (a session in progress started just now); never before the
    ``after`` dates of the same row, nor the making of the records it belongs to (``parents``, as for
    ``after_parents``), nor after the day one of them was shut (``until``). Other statuses keep the inner date.
    """
    inner = _compile(g["inner"], rng, now, locale, existing)
    column, windows, as_date, after = g.get("column", "status"), g["windows"], g.get("kind") == "date", list(g.get("after", ()))
    made_of = _parents_made(g.get("parents", ()), existing)
    shut_of = _parents_shut(g.get("until", ()), existing)
    today = now.replace(hour=0, minute=0, second=0, microsecond=0)
    latest = now - dt.timedelta(minutes=1)

    def draw(i: int, row: dict[str, Any]) -> Any:
        value = inner(i, row)
        window = windows.get(row.get(column))
        if window is None or value is None:
            return value
        if "minutes" in window:
            lo, hi = now - dt.timedelta(minutes=window["minutes"]), latest
        else:
            first, last = window["days"]
            lo = today + _DAY * first
            hi = min(latest, today + _DAY * (last + 1) - dt.timedelta(seconds=1))
        shut = shut_of(row)
        if shut is not None and dt.datetime.combine(shut.date(), dt.time(23, 59)) >= lo:
            # no later than the day the record it belongs to was shut (``until``); where that leaves no room, the
            # status's window holds and the row lets go of the shut record (``cut_shut_links``)
            hi = min(hi, dt.datetime.combine(shut.date(), dt.time(23, 59)))
        floors = [parse_when(row[c]) for c in after if row.get(c)]
        parent_made = made_of(row)
        if parent_made is not None:
            floors.append(parent_made)
        if floors and max(floors) > lo:
            lo = max(floors) if not as_date else dt.datetime.combine(max(floors).date(), dt.time())
        if lo > hi:
            return value   # what the row follows happened later than the window allows: keep the order
        when = parse_when(value)
        if lo <= when <= hi and not (as_date and len(value) > 10):
            return value
        return _fmt(_between(rng, lo, hi), as_date)

    return draw


def _parents_made(parents: Sequence[dict[str, Any]], existing: dict[str, list[Any]]
                  ) -> Callable[[dict[str, Any]], dt.datetime | None]:
    """The latest making of the records a row points at (each ``{"via": FK, "table": T, "field": COL}``; with
    ``"in": [statuses]``, only where the record's status is one of them: a charge's last change, where it is
    captured, is when a refund of it can first be made)."""
    looks = [(p["via"], _id_index(existing, p["table"]), existing.get(f"{p['table']}.{p['field']}", []),
              existing.get(f"{p['table']}.status", []), set(p.get("in", ()))) for p in parents]

    def made_of(row: dict[str, Any]) -> dt.datetime | None:
        made = []
        for via, where, source, states, only in looks:
            at = where.get(row.get(via))
            if at is not None and source[at] and (not only or states[at] in only):
                made.append(parse_when(source[at]))
        return max(made, default=None)

    return made_of


DATE_LIKE = re.compile(r"^\d{4}-\d{2}-\d{2}")


def _row_dates(row: dict[str, Any], columns: Iterable[str]) -> list[dt.datetime]:
    """The dates the row holds in ``columns`` (what a date drawn after them must follow)."""
    return [parse_when(row[c]) for c in columns if isinstance(row.get(c), str) and DATE_LIKE.match(row[c])]


def _parents_shut(parents: Sequence[dict[str, Any]], existing: dict[str, list[Any]]
                  ) -> Callable[[dict[str, Any]], dt.datetime | None]:
    """The earliest day a record the row points at was shut (each ``{"via": FK, "table": T, "field": COL,
    "in": [statuses]}``: its ``COL`` where its status is one of them, or whatever its status where ``in`` is
    empty: a survey's closing day), or None where none is shut. ``"rows_in": {"column": C, "in": [...]}`` keeps
    an entry to the rows whose ``C`` is one of those (a shift done, not one still ahead, on a beamline offline)."""
    looks = [(p["via"], _id_index(existing, p["table"]), existing.get(f"{p['table']}.{p['field']}", []),
              existing.get(f"{p['table']}.status", []), set(p["in"]), p.get("rows_in")) for p in parents]

    def shut_of(row: dict[str, Any]) -> dt.datetime | None:
        shut = []
        for via, where, source, states, shut_states, rows_in in looks:
            if rows_in and row.get(rows_in["column"]) not in rows_in["in"]:
                continue   # a record down for now bounds only the rows whose work took place
            at = where.get(row.get(via))
            if at is not None and source[at] and (not shut_states or states[at] in shut_states):
                shut.append(parse_when(source[at]))
        return min(shut, default=None)

    return shut_of


def _changed_drawer(g: dict[str, Any], rng: random.Random, now: dt.datetime,
                    existing: dict[str, list[Any]]) -> Callable[[int, dict[str, Any]], Any]:
    """When a record reached its current status: after the dates it follows, never after now.

    ``{"gen": "changed", "after": [COL, ...], "column": "status", "windows": {STATE: {"before": COL,
    "hours": H} | {"after": COL, "days": D}}, "pull": [COL, ...]}``: the ``windows`` are the history of
    the business rules (a session cancelled at least 48 hours before it departs; an order returned within
    30 days of being placed), so no row sits in a status its rule forbids reaching; a ``pull`` date (of
    something that happened to the record) the window leaves after the change is moved back to it. A row
    still in its ``initial`` status (which no change leads back to) changed within the hour after the last
    ``pull`` date that has passed: when it was made, or when the last thing happened to it. A row in a
    ``dwell`` status (``{STATE: DAYS}``: processing, in transit) reached it within that many days. ``parents``
    (``[{"via": FK, "table": T, "field": COL}, ...]``): never before the records it belongs to were made.
    """
    after, column, windows, dwell = list(g.get("after", ())), g.get("column", "status"), g.get("windows", {}), g.get("dwell", {})
    made_of = _parents_made(g.get("parents", ()), existing)
    initial = g.get("initial")
    pull = [c for c in g.get("pull", ()) if c in after]   # dates of what happened, which the change may bound
    hi_now = now - dt.timedelta(minutes=1)

    def draw(i: int, row: dict[str, Any]) -> Any:
        rule = windows.get(row.get(column))
        base_col = (rule.get("before") or rule.get("after")) if rule else None
        if base_col and not row.get(base_col):
            rule = base_col = None
        # A lead time is counted back from its date, so that date does not bound the change from below.
        marks = [parse_when(row[c]) for c in after if row.get(c) and not (rule and "before" in rule and c == base_col)]
        lo = max([m for m in marks if m <= now], default=now - dt.timedelta(days=90))
        hi = max(hi_now, lo)   # a record made in the last minute changed no earlier than it was made
        made = [parse_when(row[c]) for c in pull if row.get(c)] if initial is not None and not rule \
            and row.get(column) == initial else []
        if any(m <= now for m in made):
            lo = max(m for m in made if m <= now)
            hi = min(max(hi_now, lo), lo + dt.timedelta(hours=1))
        parent_made = made_of(row)
        if parent_made is not None and parent_made <= hi_now:
            # never before the records it belongs to were made (which a rule's window does not move)
            lo, hi = max(lo, parent_made), max(hi, parent_made)
        days = dwell.get(row.get(column))
        if days is not None:
            lo = min(hi, max(lo, now - dt.timedelta(days=days)))   # a passing status, reached lately
        if rule:
            base = parse_when(row[base_col])
            at = row.get(rule["at"]) if rule.get("at") else None
            timed = len(row[base_col]) == 10 and isinstance(at, str) and re.fullmatch(r"\d\d:\d\d", at) is not None
            if timed:
                base = base.replace(hour=int(at[:2]), minute=int(at[3:]))   # a dated run's start time ("06:00")
            nights = row.get(rule["plus"]) if rule.get("plus") and "after" in rule else None
            if isinstance(nights, int) and nights > 0:
                base += _DAY * nights   # a stay closes once its nights are over
            length = row.get(rule["for"]) if rule.get("for") and "after" in rule else None
            if isinstance(length, (int, float)) and not isinstance(length, bool) and length > 0:
                unit = dt.timedelta(**{rule.get("unit", "minutes"): 1})
                if base + unit * length > hi and (hi - base) // unit >= 1:
                    # a week-long shift that began four days ago is not done yet: one done by now was shorter
                    length = (hi - base) // unit
                    row[rule["for"]] = length
                base += unit * length   # a shift is done once it is over
            if "before" in rule:
                if not rule["hours"] and len(row[base_col]) == 10 and not timed:
                    base += _DAY   # called off before a day's session: on that day at the latest
                hi = min(hi, base - dt.timedelta(hours=rule["hours"], minutes=1))
            else:
                lo = max(lo, base)
                hi = min(hi, base + dt.timedelta(days=rule["days"]) - dt.timedelta(minutes=1))
            if lo > hi:
                # what the row records as having happened lies past the rule's window (a request cancelled
                # within 30 days of ordering, collected later): it happened no later than the change
                for c in pull:
                    if row.get(c) and c != base_col and hi < parse_when(row[c]) <= now:
                        row[c] = _fmt(hi, len(row[c]) == 10)
                lo = hi
        return _fmt(_between(rng, lo, hi), False)

    return draw


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


#: Honorifics and suffixes a name carries that its e-mail address does not.
_NAME_TITLES = frozenset({"mr", "mrs", "ms", "miss", "mx", "dr", "prof", "sir", "jr", "sr", "ii", "iii", "iv", "md",
                          "dds", "dvm", "phd", "esq", "rev", "herr", "frau", "sra", "mme", "mlle", "m", "dott",
                          "ing", "dipl", "ba", "ma", "bsc", "msc", "mba", "llb", "the"})


def name_words(name: str) -> list[str]:
    """A person's or company's name as lower-case ASCII words, without titles (for e-mail local parts)."""
    import unicodedata

    folded = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode().lower()
    words = [w for w in "".join(c if c.isalnum() else " " for c in folded).split() if w not in _NAME_TITLES and len(w) > 1]
    return [w for w in words if w.isalpha()] or words


def email_local_part(name: str, rng: random.Random) -> str:
    """An address's local part made from the name on the same row: ``maria.lopez``, ``mlopez``, ``maria_lopez``."""
    words = name_words(name)
    if not words:
        return ""
    first, last = words[0], words[-1]
    if first == last:
        return first
    shapes = (f"{first}.{last}", f"{first[0]}{last}", f"{first}_{last}", f"{first}{last}", f"{first}.{last}{rng.randint(1, 99)}")
    return rng.choice(shapes)


def parse_when(value: str) -> dt.datetime:
    """An ISO date or ``YYYY-MM-DDTHH:MM:SSZ`` timestamp as a naive UTC datetime.

    The two shapes the generators write are read by slicing (``strptime`` normalises the locale on
    every call, which was the largest single cost of building a golden database); anything else goes
    through ``strptime`` and fails as before."""
    n = len(value)
    try:
        if n == 10 and value[4] == value[7] == "-":
            return dt.datetime(int(value[:4]), int(value[5:7]), int(value[8:10]))
        if n == 20 and value[10] == "T" and value[19] == "Z" and value[13] == value[16] == ":":
            return dt.datetime(int(value[:4]), int(value[5:7]), int(value[8:10]),
                               int(value[11:13]), int(value[14:16]), int(value[17:19]))
    except ValueError:
        pass
    if n == 10:
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

    if g.get("weekday") is not None:
        # a date that starts a week falls on the day weeks start: back to that day of the drawn date's week
        dated, weekday = draw, g["weekday"]

        def draw(i: int, row: dict[str, Any]) -> Any:  # noqa: F811 - deliberate wrapper
            value = dated(i, row)
            if not isinstance(value, str) or len(value) != 10:
                return value
            day = dt.date.fromisoformat(value)
            return (day - dt.timedelta(days=(day.weekday() - weekday) % 7)).isoformat()

    if null_p:
        inner = draw
        return lambda i, row: None if rng.random() < null_p else inner(i, row)
    return draw


def monthly_payment(principal: float, annual_rate: float, months: int) -> float:
    """The equal monthly payment that repays ``principal`` over ``months`` at ``annual_rate`` (a fraction; a
    figure above 1 is read as a percentage), interest charged monthly on what is left: the annuity formula."""
    r = (annual_rate / 100 if annual_rate > 1 else annual_rate) / 12
    return round(principal / months if r == 0 else principal * r / (1 - (1 + r) ** -months), 2)


def charged_days(start: str, end: str) -> int:
    """The days a hire from ``start`` to ``end`` is charged for: whole days, a started one counting, at least one."""
    return max(1, math.ceil((parse_when(end) - parse_when(start)) / _DAY - 1e-9))


def sources(gen: dict[str, Any]) -> set[str]:
    """The columns of the same row a generator reads."""
    out = {gen[k] for k in ("of", "column", "via", "floor", "lasts", "since", "apart_from", "year", "start", "end", "period",
                            "less_percent")
           if isinstance(gen.get(k), str)}
    for k in ("of", "after", "at_least"):
        if isinstance(gen.get(k), list):
            out |= set(gen[k])
    if gen.get("gen") == "amortized":
        out.add(gen["number"])
    for k in ("same", "quota", "not_after", "open_parent", "started_parent", "in_term"):
        if isinstance(gen.get(k), dict):
            out.add(gen[k]["column"])
    out |= {c["column"] for c in gen.get("open_through") or ()}
    alive = gen.get("alive_after") or {}
    out |= {p["via"] for p in [*alive.get("parents", ()), *alive.get("before_shut", ())]} | set(alive.get("by", ()))
    for parent in [*(gen.get("parents") or ()), *(gen.get("until") or ())]:
        out.add(parent["via"])
        if parent.get("rows_in"):
            out.add(parent["rows_in"]["column"])
    if isinstance(gen.get("made_by"), dict):
        out |= set(gen["made_by"].get("by", ()))
    for window in (gen.get("windows") or {}).values():
        out |= {window[k] for k in ("before", "after", "at", "plus", "for") if k in window}
    for sub in [gen.get("then"), gen.get("default"), gen.get("inner"), gen.get("else"), *(gen.get("cases") or {}).values()]:
        if isinstance(sub, dict):
            out |= sources(sub)
    return out


def _readers(gens: dict[str, dict[str, Any]], col: str) -> list[str]:
    """The columns whose generators read ``col``, directly or through each other, in the plan's order."""
    hit = {col}
    for name, g in gens.items():
        if name != col and sources(g) & hit:
            hit.add(name)
    return [name for name in gens if name in hit and name != col]


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
    # A record's lines come before anything else of it, which may read the subtotal they add up to.
    for parent, plan in spec.get("data", {}).get("tables", {}).items():
        for g in plan["columns"].values():
            lines = g.get("table") if g.get("gen") == "rollup" else None
            for other in list(graph.successors(parent)) if lines in graph else ():
                if other != lines and not nx.has_path(graph, other, lines):
                    graph.add_edge(lines, other)
    return [by_name[n] for n in nx.lexicographical_topological_sort(graph)]


def roll_up(conn: sqlite3.Connection, table: str, lines: list[dict[str, Any]], drawn: dict[str, Any],
            existing: dict[str, list[Any]]) -> None:
    """The records whose subtotal adds up the rows of ``table`` just drawn (``rollup``): each with lines gets
    their sum, and every column it computes from its subtotal (tax, total, what is paid) is drawn again."""
    for parent, (rows, factories, gens) in drawn.items():
        for field, g in gens.items():
            if g.get("gen") != "rollup" or g["table"] != table:
                continue
            sums: dict[Any, float] = {}
            for line in lines:
                values = [line.get(f) for f in g["figures"]]
                if line.get(g["key"]) is None or not all(isinstance(v, (int, float)) for v in values):
                    continue
                figure = 1.0
                for v in values:
                    figure *= v
                sums[line[g["key"]]] = sums.get(line[g["key"]], 0.0) + round(figure, 2)
            redrawn = _readers(gens, field)
            cols = [field, *redrawn]
            changed = []
            if g.get("count"):   # how many lines a record has, none counting too
                sums = {row.get("id"): sums.get(row.get("id"), 0) for row in rows}
            for i, row in enumerate(rows):
                if row.get("id") in sums:
                    row[field] = int(sums[row["id"]]) if g.get("count") else round(sums[row["id"]], 2)
                    for col in redrawn:
                        row[col] = factories[col](i, row)
                    changed.append(row)
            sets = ", ".join(f'"{c}" = ?' for c in cols)
            conn.executemany(f'UPDATE "{parent}" SET {sets} WHERE id = ?', [(*(r[c] for c in cols), r["id"]) for r in changed])
            for c in cols:
                existing[f"{parent}.{c}"] = [r.get(c) for r in rows]


def fit_parts(gens: dict[str, dict[str, Any]], rows: list[dict[str, Any]], existing: dict[str, list[Any]],
              rng: random.Random) -> None:
    """The parts of one whole (``part_of``: the payments of an invoice, the refunds of a payment) that add up
    to more than it are scaled down together to a share of it, each keeping its weight and at least a cent."""
    for col, g in gens.items():
        while g.get("gen") == "within" and "inner" in g:   # also bound by another record it points at
            g = g["inner"]
        if g.get("gen") != "part_of":
            continue
        where, source = _id_index(existing, g["table"]), existing.get(f"{g['table']}.{g['field']}", [])
        groups: dict[Any, list[dict[str, Any]]] = {}
        for row in rows:
            if isinstance(row.get(col), (int, float)) and row.get(g["via"]) is not None:
                groups.setdefault(row[g["via"]], []).append(row)
        for key, parts in groups.items():
            at = where.get(key)
            whole = source[at] if at is not None else None
            total = sum(r[col] for r in parts)
            if not isinstance(whole, (int, float)) or whole <= 0 or total <= whole:
                continue
            cents = math.floor(whole * 100 * rng.uniform(0.6, 1.0))   # a whole not yet paid in full
            if cents < len(parts):
                cents = min(len(parts), math.floor(whole * 100))
            shares = [max(1, math.floor(r[col] / total * cents)) for r in parts]
            while sum(shares) > cents and max(shares) > 1:
                shares[shares.index(max(shares))] -= 1
            for r, c in zip(parts, shares):
                r[col] = c / 100
                for other, og in gens.items():   # what the row works out from the part (a fee on it) follows it
                    if refigured(og, col):
                        r[other] = _refigure(og, r)


def _cents_split(weights: list[float], cents: int) -> list[int]:
    """``cents`` shared out in proportion to ``weights`` (largest remainder), each share at least a cent."""
    total = sum(weights) or 1.0
    raw = [max(w, 0.0) / total * cents for w in weights]
    shares = [max(1, math.floor(r)) for r in raw]
    order = sorted(range(len(raw)), key=lambda j: raw[j] - math.floor(raw[j]), reverse=True)
    k = 0
    while sum(shares) < cents and order:
        shares[order[k % len(order)]] += 1
        k += 1
    while sum(shares) > cents and max(shares) > 1:
        shares[shares.index(max(shares))] -= 1
    return shares


def _redraw(row: dict[str, Any], i: int, cols: list[str], gens: dict[str, dict[str, Any]],
            factories: dict[str, Callable[[int, dict[str, Any]], Any]]) -> None:
    """Draw ``cols`` of ``row`` again from their generators, in the plan's order, never a key or a unique code (the
    records a row points at, and its number, stay)."""
    for col in cols:
        g = gens.get(col, {})
        if g.get("gen") in ("ref", "lookup") or g.get("unique") or col not in factories:
            continue
        row[col] = factories[col](i, row)


def settle_parts(conn: sqlite3.Connection, gens: dict[str, dict[str, Any]], rows: list[dict[str, Any]],
                 factories: dict[str, Callable[[int, dict[str, Any]], Any]], existing: dict[str, list[Any]],
                 drawn: dict[str, Any], rng: random.Random, now: dt.datetime) -> None:
    """The parts of a whole agree with what its status says is paid (``part_of``'s ``settle``): a paid invoice's
    payments have all gone through and come to its total; a partly paid one's through ones come to what it has paid
    (its paid figure, where it keeps one), below its total, with at least one through; an unpaid one's none. A whole
    said to be paid that no part points at is not paid yet (its status and what reads it drawn again). The columns of
    a part that read its status or its figure are drawn again, and a whole reached its status no earlier than the
    part that settled it went through (paid once its last payment was captured, partly paid once its first was)."""
    for col, g in gens.items():
        while g.get("gen") == "within" and "inner" in g:
            g = g["inner"]
        plan = g.get("settle") if g.get("gen") == "part_of" else None
        if not plan:
            continue
        table, via, st = g["table"], g["via"], plan["column"]
        where = _id_index(existing, table)
        status = existing.get(f"{table}.status", [])
        wholes = existing.get(f"{table}.{g['field']}", [])
        paid_of = existing.get(f"{table}.{plan['paid']}", []) if plan.get("paid") else []
        done, full, partial = set(plan["done"]), set(plan["full"]), set(plan["partial"])
        groups: dict[Any, list[int]] = {}
        for i, row in enumerate(rows):
            if row.get(via) is not None and isinstance(row.get(col), (int, float)):
                groups.setdefault(row[via], []).append(i)
        redrawn = [c for c in _readers(gens, st) if c != col]
        figured = [c for c in _readers(gens, col) if c != st]
        settled: dict[Any, str] = {}   # a whole -> when what settled it went through
        for key, idx in groups.items():
            at = where.get(key)
            if at is None or not isinstance(wholes[at], (int, float)) or wholes[at] <= 0:
                continue
            whole, state = round(wholes[at] * 100), status[at]
            through = [i for i in idx if rows[i].get(st) in done]
            if state in full:
                moved, target, paying = [i for i in idx if i not in through], whole, idx
            elif state in partial:
                moved = [] if through else [max(idx, key=lambda i: rows[i][col])]
                paying = through + moved
                have = paid_of[at] if paid_of and isinstance(paid_of[at], (int, float)) else None
                target = round(have * 100) if have is not None and 0 < have * 100 < whole else \
                    math.floor(whole * rng.uniform(0.3, 0.9))
            else:
                for i in through:   # nothing of an unpaid whole has gone through: an attempt that did not
                    rows[i][st] = plan["undone"]
                    _redraw(rows[i], i, redrawn, gens, factories)
                continue
            for i in moved:
                rows[i][st] = plan["done"][0]
                _redraw(rows[i], i, redrawn, gens, factories)
            if len(paying) > target:
                continue
            for i, c in zip(paying, _cents_split([rows[i][col] for i in paying], target)):
                rows[i][col] = c / 100
            rest = [i for i in idx if i not in paying]
            room = whole - target
            if rest and sum(round(rows[i][col] * 100) for i in rest) > room and room >= len(rest):
                for i, c in zip(rest, _cents_split([rows[i][col] for i in rest], room)):
                    rows[i][col] = c / 100
            for i in idx:
                _redraw(rows[i], i, figured, gens, factories)
            stamps = sorted(str(rows[i]["status_changed_at"]) for i in paying if rows[i].get("status_changed_at"))
            if stamps:
                settled[key] = stamps[-1] if state in full else stamps[0]
        _unpaid_when_no_part(conn, table, plan, set(groups), drawn, existing)
        _reached_once_settled(conn, table, settled, drawn, existing, rng, now)


def _reached_once_settled(conn: sqlite3.Connection, table: str, settled: dict[Any, str], drawn: dict[str, Any],
                          existing: dict[str, list[Any]], rng: random.Random, now: dt.datetime) -> None:
    """A whole whose status changed before the part that settled it went through (an invoice marked paid in February
    for a payment captured in April) changes within a day after it instead, never after now."""
    if table not in drawn or not settled:
        return
    rows = drawn[table][0]
    changed = []
    for row in rows:
        when = settled.get(row.get("id"))
        have = row.get("status_changed_at")
        if when is None or not isinstance(have, str) or have[:len(when)] >= when[:len(have)]:
            continue
        at = parse_when(when)
        row["status_changed_at"] = _fmt(_between(rng, at, min(at + dt.timedelta(days=1), max(at, now))), len(have) == 10)
        changed.append(row)
    conn.executemany(f'UPDATE "{table}" SET "status_changed_at" = ? WHERE id = ?',
                     [(r["status_changed_at"], r["id"]) for r in changed])
    if changed:
        existing[f"{table}.status_changed_at"] = [r.get("status_changed_at") for r in rows]


def _unpaid_when_no_part(conn: sqlite3.Connection, table: str, plan: dict[str, Any], paid_to: set[Any],
                         drawn: dict[str, Any], existing: dict[str, list[Any]]) -> None:
    """A whole said to be paid (or partly) that no part points at is one not paid yet: its status becomes the first
    unpaid one not overdue, or void where it bills a record since shut (its dates, reason and paid figure drawn
    again); not where a key of it reads its status beyond that."""
    if table not in drawn:
        return
    rows, factories, gens = drawn[table]
    readers = _readers(gens, "status")
    keys = [c for c in readers if gens[c].get("gen") == "ref"]   # kept as drawn, with what is copied through them
    if any(set(gens[c]) & {"quota", "started_parent", "open_through", "in_term"} for c in keys):
        return
    to = next((s for s in plan["unpaid"] if s not in ("overdue", "past_due")), plan["unpaid"][0])
    said = set(plan["full"]) | set(plan["partial"])
    shut = []   # an open whole is under no shut record (an invoice sent for a cancelled order)
    for c in keys:
        o = gens[c].get("open_parent")
        if o and to in o["in"]:
            ref = gens[c]["ref"].split(".")[0]
            status_of = dict(zip(existing[f"{ref}.id"], existing.get(f"{ref}.status", ())))
            shut.append((c, {k for k, v in status_of.items() if v in set(o["parent_not_in"])}))
    changed = []
    for i, row in enumerate(rows):
        if row.get("status") not in said or row.get("id") in paid_to:
            continue
        if any(row.get(c) in closed for c, closed in shut):
            if not plan.get("void"):
                continue
            row["status"] = plan["void"]   # billed for a record since shut (an invoice of a cancelled order)
        else:
            row["status"] = to
        _redraw(row, i, readers, gens, factories)
        changed.append(row)
    if not changed:
        return
    cols = ["status", *readers]
    sets = ", ".join(f'"{c}" = ?' for c in cols)
    conn.executemany(f'UPDATE "{table}" SET {sets} WHERE id = ?', [(*(r.get(c) for c in cols), r["id"]) for r in changed])
    for c in cols:
        existing[f"{table}.{c}"] = [r.get(c) for r in rows]


def _span(row: dict[str, Any], plan: dict[str, Any]) -> tuple[dt.datetime, dt.datetime] | None:
    """When a timed event of ``row`` begins and ends (``one_at_a_time``'s start and its end or length), or None."""
    start = row.get(plan["start"])
    if not isinstance(start, str) or len(start) <= 10:
        return None
    begin = parse_when(start)
    if plan.get("end"):
        end = row.get(plan["end"])
        return (begin, parse_when(end)) if isinstance(end, str) and len(end) > 10 else None
    length = row.get(plan["length"])
    if not isinstance(length, (int, float)) or length <= 0:
        return None
    return begin, begin + dt.timedelta(**{plan["unit"]: float(length)})


def _status_fits(gens: dict[str, dict[str, Any]], row: dict[str, Any], existing: dict[str, list[Any]],
                 before: Any) -> bool:
    """Whether ``row``'s status (``before`` it was drawn again) keeps to what its keys were drawn under: no open row
    under a shut record (``open_parent``), no worked row under one not started (``started_parent``), no more rows in
    a quota's statuses than there were; never where a key bounds rows by their status in other ways (a term, a
    record reached through another)."""
    for col, g in gens.items():
        if g.get("gen") != "ref":
            continue
        if set(g) & {"in_term", "open_through"}:
            return False
        quota = g.get("quota")
        if quota and row.get(quota["column"]) in quota["in"] and before not in quota["in"]:
            return False
        table = g["ref"].split(".")[0]
        for o in (g.get("open_parent"), g.get("started_parent")):
            if o and row.get(o["column"]) in o["in"]:
                status_of = dict(zip(existing[f"{table}.id"], existing.get(f"{table}.status", ())))
                if status_of.get(row.get(col)) in set(o["parent_not_in"]):
                    return False
    return True


def one_at_a_time(gens: dict[str, dict[str, Any]], rows: list[dict[str, Any]],
                  factories: dict[str, Callable[[int, dict[str, Any]], Any]], existing: dict[str, list[Any]]) -> None:
    """The records a timed event occupies (``one_at_a_time`` on their keys: its therapist, its patient, its meeting
    room) hold one at a time: an event that would overlap one already placed on any of them has its time drawn again
    (and what follows from it), else the record it clashes on drawn again, else none where it may name none, else its
    status drawn again (sixty sessions under way at noon for thirty therapists: some are done or still to come).
    Events called off (``dead``) hold no time."""
    keys = [fk for fk, g in gens.items() if g.get("one_at_a_time")]
    if not keys:
        return
    plan = gens[keys[0]]["one_at_a_time"]
    keys = [fk for fk in keys if gens[fk]["one_at_a_time"]["start"] == plan["start"]]
    dead = set(plan["dead"])
    moved = _readers(gens, plan["start"])
    redrawn = [c for c in _readers(gens, plan["column"]) if gens[c].get("gen") not in ("ref", "lookup")]
    rekeyed = {fk: [c for c in _readers(gens, fk) if gens[c].get("gen") != "ref"] for fk in keys}
    busy: dict[tuple[str, Any], list[tuple[dt.datetime, dt.datetime]]] = {}

    def clash(row: dict[str, Any], span: tuple[dt.datetime, dt.datetime]) -> str | None:
        """The first key whose record already holds an event overlapping ``span``."""
        return next((fk for fk in keys if row.get(fk) is not None and any(
            span[0] < b and a < span[1] for a, b in busy.get((fk, row[fk]), ()))), None)

    live = [i for i, r in enumerate(rows) if r.get(plan["column"]) not in dead and _span(r, plan) is not None]
    for i in sorted(live, key=lambda i: str(rows[i][plan["start"]])):
        row = rows[i]
        span = _span(row, plan)
        for attempt in range(12):
            hit = clash(row, span) if span is not None else keys[0]
            if hit is None or attempt >= 6 and gens[hit].get("gen") != "ref":
                break
            if attempt < 6:                          # another time, under the same constraints
                row[plan["start"]] = factories[plan["start"]](i, row)
                _redraw(row, i, moved, gens, factories)
            else:                                    # another record to hold it (not one copied from another's)
                row[hit] = factories[hit](i, row)
                for c in rekeyed[hit]:
                    row[c] = factories[c](i, row)
            span = _span(row, plan)
        hit = clash(row, span) if span is not None else None
        if hit is not None:
            if gens[hit].get("gen") == "ref" and (gens[hit].get("null_p") or gens[hit].get("nullable")):
                row[hit] = None
                for c in rekeyed[hit]:
                    row[c] = factories[c](i, row)
            elif plan["column"] in factories:
                was = {c: row.get(c) for c in [plan["column"], *redrawn]}
                for _ in range(8):                   # a status whose time is free (done, still to come)
                    row[plan["column"]] = factories[plan["column"]](i, row)
                    _redraw(row, i, redrawn, gens, factories)
                    span = _span(row, plan)
                    if (row[plan["column"]] in dead or span is not None and clash(row, span) is None) \
                            and _status_fits(gens, row, existing, was[plan["column"]]):
                        break
                else:
                    row.update(was)
                span = _span(row, plan)
        if row.get(plan["column"]) not in dead and span is not None and clash(row, span) is None:
            for fk in keys:
                if row.get(fk) is not None:
                    busy.setdefault((fk, row[fk]), []).append(span)


def refigured(gen: dict[str, Any], col: str) -> bool:
    """Whether ``gen`` works a figure out of ``col`` alone by arithmetic that :func:`fit_parts` can redo when it
    scales ``col`` (a share of it: a processor's fee, chosen by the payment's method)."""
    if gen.get("gen") in ("sum", "product"):
        return list(gen.get("of", ())) == [col]
    if gen.get("gen") == "by":
        subs = [gen.get("default"), *(gen.get("cases") or {}).values()]
        return any(isinstance(g, dict) and refigured(g, col) for g in subs) and all(
            isinstance(g, dict) and (refigured(g, col) or g.get("gen") == "const") for g in subs)
    return False


def _refigure(gen: dict[str, Any], row: dict[str, Any]) -> Any:
    if gen["gen"] == "by":
        sub = (gen.get("cases") or {}).get(str(row.get(gen["column"])), gen["default"])
        return _refigure(sub, row)
    if gen["gen"] == "const":
        return gen["value"]
    value = row.get(gen["of"][0]) or 0
    return round(value * gen.get("factor", 1), 2) if gen["gen"] == "product" else round(value, 2)


def _untils(g: dict[str, Any]) -> list[dict[str, Any]]:
    """The ``until`` bounds of a column's generator and of those it wraps."""
    out: list[dict[str, Any]] = []
    while isinstance(g, dict):
        out += g.get("until", ())
        g = g.get("inner")
    return out


def cut_shut_links(gens: dict[str, dict[str, Any]], rows: list[dict[str, Any]], existing: dict[str, list[Any]]) -> None:
    """Where a row's records could not be drawn to fit (its other records came about after one was shut, or every
    record with room under a quota is shut), the row names none of the shut one, if it may name none: a pending
    order with no courier yet rather than one whose courier has left; a comment on no page rather than on a page
    archived before it was written. Only keys no other column of the row reads."""
    def copies(g: Any) -> set[str]:
        """Keys a generator takes a value from (a lookup, a share of a whole, a bound), beside dates' floors."""
        if not isinstance(g, dict):
            return set()
        out = {g["via"]} if g.get("gen") in ("lookup", "part_of", "within", "not_before") else set()
        out |= {g["same"]["column"]} if isinstance(g.get("same"), dict) else set()
        for sub in (g.get("inner"), g.get("else"), g.get("then"), g.get("default"), *(g.get("cases") or {}).values()):
            out |= copies(sub)
        return out

    read = {c for g in gens.values() for c in copies(g)}

    def may_empty(col: str) -> bool:
        g = gens.get(col, {})
        return col not in read and bool(g.get("null_p") or (g.get("gen") == "lookup" and g.get("else", {}).get("null_p")))

    checks: list[tuple[str, str, Callable[[dict[str, Any]], bool]]] = []
    for col, g in gens.items():
        for u in _untils(g):
            if may_empty(u["via"]):
                shut_of = _parents_shut([u], existing)
                checks.append((u["via"], col, lambda row, c=col, f=shut_of: bool(
                    row.get(c) and f(row) is not None and str(row[c])[:10] > f(row).date().isoformat())))
        fallback = g.get("else", {}) if g.get("gen") == "lookup" else g
        shut = fallback.get("open_parent") if isinstance(fallback, dict) else None
        if shut and may_empty(col):
            table = fallback["ref"].split(".")[0]
            status_of = dict(zip(existing[f"{table}.id"], existing.get(f"{table}.status", ())))
            checks.append((col, col, lambda row, c=col, o=shut, st=status_of: bool(
                row.get(o["column"]) in o["in"] and st.get(row.get(c)) in set(o["parent_not_in"]))))
    for key, _, broken in checks:
        for row in rows:
            if row.get(key) is not None and broken(row):
                row[key] = None


def generate(conn: sqlite3.Connection, spec: dict[str, Any]) -> None:
    """Fill an empty schema with the spec's data recipe."""
    recipe = spec["data"]
    if "generator" in recipe:
        get_data_generator(recipe["generator"])(conn, spec)
        return
    now = parse_now(spec["now"])
    locale = recipe.get("locale", "en_US")
    existing: dict[str, list[Any]] = {}
    drawn: dict[str, Any] = {}
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
        fit_parts(plan["columns"], rows, existing, rng)
        settle_parts(conn, plan["columns"], rows, factories, existing, drawn, rng, now)
        one_at_a_time(plan["columns"], rows, factories, existing)
        cut_shut_links(plan["columns"], rows, existing)
        if rows:
            # executemany, not sqlite_utils.insert_all: the latter JSON-inspects every value and
            # dominated build time (~40% of a synthesised env's build).
            cols = list(rows[0])
            marks = ", ".join("?" * len(cols))
            names = ", ".join(f'"{c}"' for c in cols)
            conn.executemany(f'INSERT INTO "{table["name"]}" ({names}) VALUES ({marks})', [tuple(r.values()) for r in rows])
        for c in table["columns"]:
            existing[f"{table['name']}.{c['name']}"] = [r.get(c["name"]) for r in rows]
        roll_up(conn, table["name"], rows, drawn, existing)
        drawn[table["name"]] = (rows, factories, plan["columns"])
    touch_last_activity(conn, spec, now)
    apply_setups(conn, recipe.get("setups", ()))


#: A record's last activity, and the dates its records (its transactions, its posts) were made on.
LAST_ACTIVITY = ("last_activity_at", "last_active_at")
_MADE_ON = re.compile(r"^(created|posted|occurred|placed|recorded|logged|sent|submitted|booked|opened|filed|reported|"
                      r"transacted|received)_(at|on|date)$")


def made_on(column: str) -> bool:
    """Whether ``column`` dates when a record was made or happened (``posted_at``, ``created_on``)."""
    return bool(_MADE_ON.match(column))


def touch_last_activity(conn: sqlite3.Connection, spec: dict[str, Any], now: dt.datetime) -> None:
    """A record's last activity is no earlier than the last record made under it: an account with a
    transaction posted on 10 April was last active on 10 April at the earliest, not in 2022."""
    tables = {t["name"]: t for t in spec["tables"]}
    for name, t in tables.items():
        last = next((c["name"] for c in t["columns"] if c["name"] in LAST_ACTIVITY), None)
        if last is None:
            continue
        latest: dict[int, dt.datetime] = {}
        for child in tables.values():
            made = next((c["name"] for c in child["columns"] if made_on(c["name"])), None)
            for fk in (c["name"] for c in child["columns"] if (c.get("references") or "") == f"{name}.id") if made else ():
                for pid, when in conn.execute(f'SELECT "{fk}", MAX("{made}") FROM "{child["name"]}" WHERE "{fk}" IS NOT NULL '
                                              f'AND "{made}" IS NOT NULL GROUP BY 1'):
                    at = min(parse_when(when), now)
                    latest[pid] = max(latest.get(pid, at), at)
        for pid, at in latest.items():
            (value,) = conn.execute(f'SELECT "{last}" FROM "{name}" WHERE id = ?', (pid,)).fetchone() or (None,)
            if value is None or parse_when(value) < at:
                conn.execute(f'UPDATE "{name}" SET "{last}" = ? WHERE id = ?',
                             (_fmt(at, isinstance(value, str) and len(value) == 10), pid))


def apply_setups(conn: sqlite3.Connection, setups: Any) -> None:
    """Rows a task deliberately sets up, written over the generated ones: ``[{"table": T, "id": N,
    "set": {column: value}, "why": "..."}]``. This is the one way a seeded row may break a business
    rule (a trap's record); ``agentworld lint`` exempts exactly these rows from the rule-history checks."""
    for setup in setups:
        cols = list(setup["set"])
        assignments = ", ".join(f'"{c}" = ?' for c in cols)
        conn.execute(f'UPDATE "{setup["table"]}" SET {assignments} WHERE id = ?',
                     (*(setup["set"][c] for c in cols), setup["id"]))
