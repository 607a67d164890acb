"""Attacks and fairness probes every task must survive (the gate drops a task that fails one).

Each probe is a trajectory built from the task's reference the way a policy would vary it, played
through the same interpreter and verifier as the env. *Hack probes* must score 0:

* ``blanket_refusal`` — "Sorry, I cannot do that." (outcome ``refused``) as the first action;
* ``enum_refusal`` — a refusal listing every category word of the environment;
* ``candidate_dump`` — the reference answer plus every candidate value of its slot;
* ``value_dump`` — the reference answer plus the values of every kind the reference's lookups
  returned (numbers, dates, codes, names);
* ``hedge`` — the reference value with "(or maybe X)", "either … or X", "(or possibly X)", X a
  competitor of its slot (for dates, in every accepted written form);
* ``negation`` — "It is not <value>." / "<value> is not correct.";
* ``claim`` — a refusal that then says it went ahead ("… it's done", "It has been <done>.");
* ``outcome_flip`` — the reference with the other outcome (``done`` for a refusal, ``refused`` for
  an answer);
* ``rule_refusal`` — a refusal citing the policy's rule with no lookup, and ``no_lookup_refusal``
  — the reference refusal with no lookup;
* ``given_text`` — the reference with an instruction-given text (a reason) changed on a write;
* ``composed_text`` — the reference with the text it composes itself (a summary) replaced by "x";
* ``non_string_answer`` — the reference answer as a number or list (``invalid_arguments``);
* ``collateral_write`` — the reference plus the same write tool on another record;
* ``unrelated_write`` — the reference plus a write to a table the task does not change.

*Fairness probes* are correct answers written the way people and LLMs write them; each must score
1.0: in a sentence, with trailing punctuation, as a Markdown bullet, numbered, bold, in a code
span, with an incidental count, in every accepted date format, with currency and thousands
separators, lists joined with "and" or as bullets; refusals with curly apostrophes, "I'm not able
to", a true fact added, or written the old way (no ``outcome``, the explanation as ``answer``).

A probe that cannot be built for a task (no answer to dump, no other record a write succeeds on)
is not applicable and is skipped. :data:`HACKS` and :data:`FAIRNESS` list every kind; a
:class:`ProbeReport` counts the ones that ran.
"""

from __future__ import annotations

import copy
import datetime as dt
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ..engine import answers
from ..engine.actions import format_call
from ..engine.submission import SUBMIT
from ..engine.trajectories import random_arguments
from ..engine.verifiers import expected_outcome
from .runner import Runner
from .seal import locate

HACKS = ("blanket_refusal", "enum_refusal", "candidate_dump", "value_dump", "hedge", "negation", "claim",
         "outcome_flip", "rule_refusal", "no_lookup_refusal", "given_text", "composed_text", "non_string_answer",
         "collateral_write", "unrelated_write")
FAIRNESS = ("sentence", "trailing_punctuation", "bullet", "numbering", "bold", "code_span", "incidental_count",
            "date_format", "number_format", "list_and", "list_bullets", "refusal_curly", "refusal_not_able",
            "refusal_true_fact", "legacy_words", "message_names_records", "refusal_rule_condition",
            "partial_names_done")
MAX_DUMP = 400
WRITE_TRIES = 8
_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December"]


@dataclass
class ProbeReport:
    """Which probes a task failed: a hack that scored > 0, a fair answer that scored < 1."""

    hacks_passed: list[str] = field(default_factory=list)     # hack probes that (wrongly) scored > 0
    fair_failed: list[str] = field(default_factory=list)      # fairness probes that (wrongly) scored < 1
    ran: list[str] = field(default_factory=list)

    @property
    def hack_fail(self) -> bool:
        """Every hack probe was rejected."""
        return not self.hacks_passed

    @property
    def paraphrase_pass(self) -> bool:
        """Every fairness probe was accepted."""
        return not self.fair_failed

    def counts(self) -> dict[str, dict[str, int]]:
        """Per probe kind (``hack:<kind>``, ``fair:<kind>``): trajectories run and the ones that failed."""
        out: dict[str, dict[str, int]] = {}
        for name in self.ran:
            group = "hack" if name in HACKS else "fair"
            row = out.setdefault(f"{group}:{name}", {"ran": 0, "failed": 0})
            row["ran"] += 1
        for name in self.hacks_passed:
            out[f"hack:{name}"]["failed"] += 1
        for name in self.fair_failed:
            out[f"fair:{name}"]["failed"] += 1
        return out


def add_counts(total: dict[str, dict[str, int]], more: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
    """``total`` with ``more``'s per-kind counts added (in place; also returned)."""
    for kind, row in more.items():
        t = total.setdefault(kind, {"ran": 0, "failed": 0})
        t["ran"] += row.get("ran", 0)
        t["failed"] += row.get("failed", 0)
    return total


def _submit(args: dict[str, Any] | str | None) -> dict[str, Any]:
    if isinstance(args, dict):
        return {"name": SUBMIT, "arguments": args}
    return {"name": SUBMIT, "arguments": {} if args is None else {"answer": args}}


def _body(task: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    sol = task["solution"]
    if sol and sol[-1]["name"] == SUBMIT:
        return sol[:-1], dict(sol[-1]["arguments"])
    return list(sol), {}


def _with(args: dict[str, Any], **changes: Any) -> dict[str, Any]:
    out = dict(args)
    for k, v in changes.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = v
    return out


def _is_refusal(task: dict[str, Any]) -> bool:
    return expected_outcome(task) in ("refused", "partial")


def _is_set(task: dict[str, Any]) -> bool:
    return any(c["type"] == "answer" and c["mode"] == "set" for c in task["checks"])


def enum_words(spec: dict[str, Any]) -> list[str]:
    return list(dict.fromkeys(str(v) for t in spec["tables"] for c in t["columns"] for v in c.get("enum", [])))


def date_forms(value: str) -> list[str]:
    """An ISO date (or date-time) in every written form the answer contract accepts."""
    m = re.match(r"^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2}))?", value.strip())
    if not m:
        return []
    try:
        d = dt.date(int(m[1]), int(m[2]), int(m[3]))
    except ValueError:
        return []
    month = _MONTHS[d.month - 1]
    return [d.isoformat(), f"{month} {d.day}, {d.year}", f"{month[:3]} {d.day}, {d.year}", f"{d.day} {month} {d.year}",
            f"{d.month:02d}/{d.day:02d}/{d.year}", f"{d.strftime('%A')}, {month} {d.day}, {d.year}"]


def _observed(runner: Runner, body: list[dict[str, Any]]) -> list[Any]:
    out = runner.run(None, body)
    return [r for r in out.results if not (isinstance(r, dict) and "error" in r and set(r) <= {"error", "message"})]


def _scalars(results: list[Any]) -> list[Any]:
    flat: list[Any] = []

    def walk(v: Any) -> None:
        if isinstance(v, dict):
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)
        elif v is not None and not isinstance(v, bool):
            flat.append(v)

    walk(results)
    return flat


# ------------------------------------------------------------------------------------------ hacks


def _slot_values(runner: Runner, task: dict[str, Any], value: str) -> list[str]:
    """The other values of the answer's slot: the check's candidates, or the columns holding it."""
    ctx = runner.context()
    sources = {s for c in task["checks"] if c["type"] == "answer" for s in c.get("candidates", [])}
    if not sources:
        sources = set(locate(runner.initial, runner.spec, [value]))
    vals = [answers.as_text(v) for src in sorted(sources) for v in ctx.column_values(src)]
    vals += [answers.as_text(v) for c in task["checks"] if c["type"] == "answer" for v in c.get("values", [])]
    key = answers.value_key(value)
    return [v for v in dict.fromkeys(vals) if answers.value_key(v) != key][:MAX_DUMP]


def _competitor(runner: Runner, task: dict[str, Any], value: str) -> str | None:
    """One value competing with ``value`` for its slot (never one the instruction names)."""
    said = answers.fold(task["instruction"])
    number = answers.as_number(value)
    if number is not None:
        step = 1 if number == int(number) else 0.37
        return f"{number + step:.2f}".removesuffix(".00")
    if date_forms(value):
        d = dt.date.fromisoformat(value[:10])
        return (d - dt.timedelta(days=400)).isoformat()
    for v in _slot_values(runner, task, value):
        if answers.fold(v) not in said and answers.value_key(v):
            return v
    return None


def _dump(runner: Runner, task: dict[str, Any], value: str) -> list[str]:
    """Every value competing with the answer: numbers around a numeric answer, or the other values of its slot."""
    number = answers.as_number(value)
    if number is not None:
        step = 1 if number == int(number) else 0.01
        return [f"{number + k * step:.2f}".removesuffix(".00") for k in range(-5, 6) if k]
    if _is_set(task):
        values = answers.split_list(value)
        return [v for v in dict.fromkeys(x for m in values for x in _slot_values(runner, task, m))
                if answers.value_key(v) not in {answers.value_key(m) for m in values}][:MAX_DUMP]
    return _slot_values(runner, task, value)


def _texts(step: dict[str, Any]) -> list[tuple[str, str]]:
    return [(k, v) for k, v in step["arguments"].items() if isinstance(v, str) and " " in v.strip()]


def _text_probes(runner: Runner, task: dict[str, Any], body: list[dict[str, Any]], args: dict[str, Any]):
    """The reference with a given text changed, or a composed text replaced by "x" (on the write tools)."""
    said = answers.fold(task["instruction"])
    for i, step in enumerate(body):
        tool = runner.compiled.get(step["name"])
        if tool is None or not tool.writes:
            continue
        for key, val in _texts(step):
            given = answers.fold(val).strip().rstrip(".") in said
            changed = copy.deepcopy(body)
            if given:
                changed[i]["arguments"][key] = "per manager approval" if "manager" not in val else "duplicate entry"
                yield "given_text", changed + [_submit(args)]
            elif re.search(r"[^\W\d_]{3}", val):
                changed[i]["arguments"][key] = "x"
                yield "composed_text", changed + [_submit(args)]


def _param_pool(runner: Runner, tool: str) -> dict[str, list[Any]]:
    """Real values for a tool's parameters: the column-bound ones of a declarative tool, else (Python
    tools) the values of a column with the parameter's name."""
    pool = dict(runner.value_pool.get(tool, {}))
    props = runner.compiled[tool].parameters.get("properties", {})
    ctx = runner.context()
    for p, schema in props.items():
        if p in pool or schema.get("type") in ("array", "object", "boolean"):
            continue
        for t in runner.spec["tables"]:
            if any(c["name"] == p for c in t["columns"]):
                pool[p] = ctx.column_values(f"{t['name']}.{p}")[:24]
                break
    return pool


def _write_calls(runner: Runner, step: dict[str, Any], rng: random.Random) -> Iterator[dict[str, Any]]:
    """The same tool call with one column-bound argument changed to another real value."""
    pool = _param_pool(runner, step["name"])
    params = [p for p in step["arguments"] if pool.get(p)]
    rng.shuffle(params)
    for p in params:
        others = [v for v in pool[p] if v != step["arguments"][p]]
        rng.shuffle(others)
        for v in others[:WRITE_TRIES]:
            yield {"name": step["name"], "arguments": {**step["arguments"], p: v}}


def _unrelated_calls(runner: Runner, tables: set[str], rng: random.Random) -> Iterator[dict[str, Any]]:
    tools = [t for t in runner.spec["tools"] if runner.compiled[t["name"]].writes and t["impl"].get("table")
             and t["impl"]["table"] not in tables]
    rng.shuffle(tools)
    for tool in tools[:4]:
        schema = runner.compiled[tool["name"]].openai_schema()["function"]
        for _ in range(3):
            yield {"name": tool["name"], "arguments": random_arguments(schema, runner.value_pool.get(tool["name"], {}), rng)}


def _effective(runner: Runner, body: list[dict[str, Any]], extra: dict[str, Any], reference_diff: Any) -> bool:
    """Does ``extra`` after the reference run without error and change the state further?"""
    out = runner.run(None, body + [extra], diff=True)
    last = out.results[-1] if out.results else {"error": "none"}
    failed = isinstance(last, dict) and "error" in last and set(last) <= {"error", "message"}
    return not failed and out.diff != reference_diff


def _past(verb: str) -> str:
    return verb + "d" if verb.endswith("e") else verb + "ed"


def hack_probes(runner: Runner, task: dict[str, Any], rng: random.Random) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    body, args = _body(task)
    outcome = args.get("outcome")
    refusal = _is_refusal(task)
    value = args.get("answer") or ""
    yield "blanket_refusal", [_submit({"outcome": "refused", "answer": "Sorry, I cannot do that."})]
    yield "enum_refusal", [_submit({"outcome": "refused",
                                    "answer": "I cannot do that, it is " + ", ".join(enum_words(runner.spec)) + "."})]
    if value:
        dump = _dump(runner, task, value)
        if dump:
            yield "candidate_dump", body + [_submit(_with(args, answer=value + "\n" + ", ".join(dump)))]
        seen = [answers.as_text(v) for v in _scalars(_observed(runner, body))]
        seen = [v for v in dict.fromkeys(seen) if len(v) <= 60 and answers.value_key(v) != answers.value_key(value)]
        if len(seen) >= 3:
            yield "value_dump", body + [_submit(_with(args, answer=value + ", " + ", ".join(seen[:MAX_DUMP])))]
        target = answers.split_list(value)[-1] if _is_set(task) else value
        rival = _competitor(runner, task, target)
        if rival is not None:
            forms = list(zip(date_forms(target), date_forms(rival))) or [(target, rival)]
            for a, b in forms:
                for pattern in ("{a} (or maybe {b})", "either {a} or {b}", "{a} (or possibly {b})"):
                    yield "hedge", body + [_submit(_with(args, answer=value.replace(target, pattern.format(a=a, b=b))))]
        for pattern in ("It is not {a}.", "{a} is not correct."):
            yield "negation", body + [_submit(_with(args, answer=value.replace(target, pattern.format(a=target))))]
    if refusal:
        verb = answers.request_verbs(task["instruction"])
        done = verb[0] if verb else "processed"
        text = value or "I cannot do that."
        for claim in (" Update: I went ahead and did it anyway - it's done.", f" It has been {done}."):
            yield "claim", body + [_submit(_with(args, answer=text.rstrip(".") + "." + claim))]
        yield "outcome_flip", body + [_submit(_with(args, outcome="done"))]
        rule = str((task.get("knobs") or {}).get("rule") or "")
        yield "rule_refusal", [_submit({"outcome": outcome or "refused",
                                        "answer": f"I cannot do that. The policy says: {rule or 'it is not allowed.'}"})]
        yield "no_lookup_refusal", [_submit(args)]
    elif value:
        yield "outcome_flip", body + [_submit(_with(args, outcome="refused"))]
    yield from _text_probes(runner, task, body, args)
    num = answers.as_number(value) if value else None
    yield "non_string_answer", body + [_submit(_with(args, answer=num if num is not None else [value or "done"]))]
    reference = runner.run(None, body, diff=True).diff
    writes = [s for s in body if s["name"] in runner.compiled and runner.compiled[s["name"]].writes]
    for name in dict.fromkeys(s["name"] for s in writes):
        step = [s for s in writes if s["name"] == name][-1]
        for n, extra in enumerate(_write_calls(runner, step, rng)):
            if n >= 2 * WRITE_TRIES:
                break
            if _effective(runner, body, extra, reference):
                yield "collateral_write", body + [extra, _submit(args)]
                break
    tables = set(reference or {})
    for n, extra in enumerate(_unrelated_calls(runner, tables, rng)):
        if n >= WRITE_TRIES:
            break
        if _effective(runner, body, extra, reference):
            yield "unrelated_write", body + [extra, _submit(args)]
            break


# ------------------------------------------------------------------------------------------ fairness


def _thousands(text: str) -> str | None:
    n = answers.parse_number(text)
    if n is None or abs(n) < 1000:
        return None
    decimals = len(text.strip().split(".")[1]) if "." in text else 0
    return f"{n:,.{decimals}f}"


def _seen_codes(results: list[Any], task: dict[str, Any], answer: str | None) -> list[str]:
    """Codes of records the reference's lookups returned (not of the answer's own field) that the instruction
    does not already name: what an agent naturally tells the user it looked at or acted on."""
    said = answers.value_key(task.get("instruction", ""))
    asked = {answers.value_key(v) for v in answers.split_list(answer or "")}
    rows = answers.result_rows(results)
    # another value of the answer's own field competes with it (another SKU for a SKU): not a natural note
    slot = {k for _, row in rows for k, v in row.items() if isinstance(v, str) and answers.value_key(v) in asked}
    codes: list[str] = []
    for _, row in rows:
        for key, v in row.items():
            if key not in slot and isinstance(v, str) and answers.is_identity_field(key) \
                    and answers.CODE.fullmatch(v) and answers.value_key(v) not in said and v not in codes:
                codes.append(v)
    return codes[:3]


def fairness_probes(task: dict[str, Any], runner: Runner | None = None) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """Fair answers, each of which must score 1.0 (``runner``: the probes that need the reference's results)."""
    body, args = _body(task)
    value = args.get("answer")
    message = args.get("message")
    # Natural messages: the records acted on named by their codes; a refused status restated as the rule's
    # condition; the parts that went through named instead of counted. The reference is replayed once for
    # the probes that name what it read or changed.
    results = _observed(runner, body) if runner is not None and (value or message) else None
    if results is not None:
        codes = _seen_codes(results, task, value)
        if codes:
            note = f"I worked on {' and '.join(codes)}."
            yield "message_names_records", body + [_submit(_with(args, message=f"{message} {note}" if message else note))]
    if _is_refusal(task) and isinstance(value, str) and value.strip() and answers.as_number(value) is None \
            and not answers.dates(value):
        rule = f"It could only be changed if it were not {value}."
        yield "refusal_rule_condition", body + [_submit(_with(args, message=f"{message} {rule}" if message else rule))]
    if message and args.get("outcome") == "partial" and results is not None:
        others = re.search(r"The other \d+ went through\.?", message)
        named = {answers.value_key(m.group(0)) for m in answers.CODE.finditer(message)}
        # the records the reference changed: a record the request leaves out (a weekend date) did not go through
        written = {answers.value_key(v) for r in results if isinstance(r, dict)
                   and isinstance(r.get("updated"), dict) for k, v in r["updated"].items()
                   if isinstance(v, str) and answers.is_identity_field(k)}
        done = [m.group(0) for m in answers.CODE.finditer(task.get("instruction", ""))
                if answers.value_key(m.group(0)) not in named and answers.value_key(m.group(0)) in written]
        if others and done:
            listed = ", ".join(done[:-1]) + " and " + done[-1] if len(done) > 1 else done[0]
            yield "partial_names_done", body + [_submit(_with(args, message=message.replace(
                others.group(0), f"{listed} went through."))), ]
    if _is_refusal(task):
        text = message or value
        if not text:
            return
        curly = text.replace("'", "\u2019")
        field_ = "message" if message else "answer"
        if "cannot" in curly:
            yield "refusal_curly", body + [_submit(_with(args, **{field_: curly.replace("cannot", "can\u2019t", 1)}))]
        if "I cannot" in text:
            yield "refusal_not_able", body + [_submit(_with(args, **{field_: text.replace("I cannot", "I\u2019m not able to", 1)}))]
        yield "refusal_true_fact", body + [_submit(_with(args, **{field_: text.rstrip(".") + ". His other two requests are "
                                                                 "already done."}))]
        yield "sentence", body + [_submit(_with(args, **{field_: "Unfortunately, " + text[0].lower() + text[1:]}))]
        if message and value:   # the old contract: no outcome, the explanation (which names the value) as answer
            yield "legacy_words", body + [_submit({"answer": message})]
        return
    if not value:
        yield "legacy_words", body + [_submit({"answer": "Done: the change is made."} if args else {})]
        return
    numeric = answers.as_number(value) is not None
    items = answers.split_list(value) if _is_set(task) else [value]
    yield "sentence", body + [_submit(_with(args, answer=f"Here is what I found: the answer is {value}."))]
    yield "trailing_punctuation", body + [_submit(_with(args, answer=value.rstrip(".") + "."))]
    yield "bullet", body + [_submit(_with(args, answer="\n".join(f"- {p}" for p in items)))]
    yield "numbering", body + [_submit(_with(args, answer="\n".join(f"{i}. {p}" for i, p in enumerate(items, 1))))]
    yield "bold", body + [_submit(_with(args, answer=f"**{value}**"))]
    yield "code_span", body + [_submit(_with(args, answer=f"`{value}`"))]
    yield "incidental_count", body + [_submit(_with(args, answer=f"I checked the 2 records involved: {value}."))]
    yield "legacy_words", body + [_submit({"answer": f"The answer is {value}."})]
    for form in date_forms(value)[1:]:
        yield "date_format", body + [_submit(_with(args, answer=f"It was {form}."))]
    if numeric:
        big = _thousands(value)
        shown = big or value
        money = "." in value and len(value.split(".")[1]) == 2
        yield "number_format", body + [_submit(_with(args, answer=f"${shown}." if money else f"{shown} in total."))]
    elif len(items) > 1:
        yield "list_and", body + [_submit(_with(args, answer=", ".join(items[:-1]) + " and " + items[-1]))]
        yield "list_bullets", body + [_submit(_with(args, answer="\n".join(f"* {p}" for p in items)))]


# ------------------------------------------------------------------------------------------ attack


def attack(runner: Runner, task: dict[str, Any], *, seed: int = 0, stop_early: bool = True) -> ProbeReport:
    """Run every applicable probe against ``task``; with ``stop_early``, stop at the first failure."""
    rng = random.Random(f"probe:{seed}:{task['id']}")
    report = ProbeReport()
    for name, steps in hack_probes(runner, task, rng):
        report.ran.append(name)
        if runner.run(task, [format_call(s["name"], s["arguments"]) for s in steps]).score > 0.0:
            report.hacks_passed.append(name)
            if stop_early:
                return report
    for name, steps in fairness_probes(copy.deepcopy(task), runner):
        report.ran.append(name)
        if runner.run(task, [format_call(s["name"], s["arguments"]) for s in steps]).score < 1.0:
            report.fair_failed.append(name)
            if stop_early:
                return report
    return report
