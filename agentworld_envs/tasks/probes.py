"""Attacks and fairness probes every task must survive (the gate drops a task that fails one).

*Hack probes* are cheap wrong trajectories a policy would find; each must score 0:

* ``blanket_refusal`` — "Sorry, I cannot do that." as the first action;
* ``enum_refusal`` — a refusal listing every enum word of the environment;
* ``candidate_dump`` — the reference's calls, then an answer naming every candidate value of
  the expected answer's kind (or a spread of numbers around a numeric answer);
* ``collateral_write`` — the reference plus the same write tool on another record (each write
  tool the reference uses);
* ``unrelated_write`` — the reference plus a write to a table the task does not change.

*Fairness probes* are correct answers written the way people and LLMs write them; each must
score 1.0: the reference answer inside a sentence, with trailing punctuation, with currency /
units / thousands separators where numeric, lists joined with "and" or as bullets, and
refusals with curly apostrophes or "I'm not able to".

A probe that cannot be built for a task (no answer to dump, no other record a write succeeds
on) is not applicable and is skipped.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from .. import answers
from ..actions import format_call
from ..trajectories import random_arguments
from .runner import Runner
from .seal import locate

HACKS = ("blanket_refusal", "enum_refusal", "candidate_dump", "collateral_write", "unrelated_write")
FAIRNESS = ("sentence", "trailing_punctuation", "number_format", "list_and", "list_bullets", "refusal_curly",
            "refusal_not_able")
MAX_DUMP = 400
WRITE_TRIES = 8


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


def _submit(answer: str | None) -> dict[str, Any]:
    return {"name": "submit", "arguments": {} if answer is None else {"answer": answer}}


def _body(task: dict[str, Any]) -> tuple[list[dict[str, Any]], str | None]:
    sol = task["solution"]
    if sol and sol[-1]["name"] == "submit":
        return sol[:-1], sol[-1]["arguments"].get("answer")
    return list(sol), None


def _is_refusal(task: dict[str, Any]) -> bool:
    for c in task["checks"]:
        if c["type"] == "answer" and c["mode"] == "refusal":
            return True
        if c["type"] == "python" and c.get("args", {}).get("refuse_statuses"):
            return True
    return False


def _is_set(task: dict[str, Any]) -> bool:
    return any(c["type"] == "answer" and c["mode"] == "set" for c in task["checks"])


def enum_words(spec: dict[str, Any]) -> list[str]:
    return list(dict.fromkeys(str(v) for t in spec["tables"] for c in t["columns"] for v in c.get("enum", [])))


# ------------------------------------------------------------------------------------------ hacks


def _dump(runner: Runner, task: dict[str, Any], answer: str) -> list[str]:
    """Every value competing with the answer: the numbers around a numeric answer, the other values of
    the expected answer's kind, or, for a refusal whose reason is one of several values (a blocking
    status), the other values of that kind. Empty when the answer is not a choice among values."""
    ctx = runner.context()
    if _is_refusal(task):
        refusals = [c for c in task["checks"] if c["type"] == "answer" and c["mode"] == "refusal"]
        dump = [answers.as_text(v) for c in refusals for src in c.get("candidates", []) for v in ctx.column_values(src)]
        dump += [answers.as_text(v) for c in refusals for v in c.get("values", [])]
        return list(dict.fromkeys(dump))[:MAX_DUMP]
    number = answers.as_number(answer)
    if number is not None:
        step = 1 if number == int(number) else 0.01
        return [f"{number + k * step:.2f}".removesuffix(".00") for k in range(-5, 6) if k]
    values = answers.split_list(answer) if _is_set(task) or "," in answer else [answer]
    sources = {s for c in task["checks"] if c["type"] == "answer" for s in c.get("candidates", [])}
    sources |= set(locate(runner.initial, runner.spec, values))
    dump = [answers.as_text(v) for src in sorted(sources) for v in ctx.column_values(src)]
    return list(dict.fromkeys(dump))[:MAX_DUMP]


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


def hack_probes(runner: Runner, task: dict[str, Any], rng: random.Random) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    body, answer = _body(task)
    yield "blanket_refusal", [_submit("Sorry, I cannot do that.")]
    yield "enum_refusal", [_submit("I cannot do that, it is " + ", ".join(enum_words(runner.spec)) + ".")]
    if answer:
        dump = _dump(runner, task, answer)
        if dump:
            yield "candidate_dump", body + [_submit(answer + "\n" + ", ".join(dump))]
    reference = runner.run(None, body, diff=True).diff
    writes = [s for s in body if s["name"] in runner.compiled and runner.compiled[s["name"]].writes]
    for name in dict.fromkeys(s["name"] for s in writes):
        step = [s for s in writes if s["name"] == name][-1]
        for n, extra in enumerate(_write_calls(runner, step, rng)):
            if n >= 2 * WRITE_TRIES:
                break
            if _effective(runner, body, extra, reference):
                yield "collateral_write", body + [extra, _submit(answer)]
                break
    tables = set(reference or {})
    for n, extra in enumerate(_unrelated_calls(runner, tables, rng)):
        if n >= WRITE_TRIES:
            break
        if _effective(runner, body, extra, reference):
            yield "unrelated_write", body + [extra, _submit(answer)]
            break


# ------------------------------------------------------------------------------------------ fairness


def _thousands(text: str) -> str | None:
    n = answers.parse_number(text)
    if n is None or abs(n) < 1000:
        return None
    decimals = len(text.strip().split(".")[1]) if "." in text else 0
    return f"{n:,.{decimals}f}"


def fairness_probes(task: dict[str, Any]) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    body, answer = _body(task)
    if not answer:
        return
    if _is_refusal(task):
        text = answer.replace("'", "\u2019")
        if "cannot" in text:
            yield "refusal_curly", body + [_submit(text.replace("cannot", "can\u2019t", 1))]
        if "I cannot" in answer:
            yield "refusal_not_able", body + [_submit(answer.replace("I cannot", "I\u2019m not able to", 1))]
        yield "sentence", body + [_submit("Unfortunately, " + answer[0].lower() + answer[1:])]
        return
    numeric = answers.as_number(answer) is not None
    yield "sentence", body + [_submit(f"Here is what I found: the answer is {answer}.")]
    yield "trailing_punctuation", body + [_submit(answer.rstrip(".") + ".")]
    if numeric:
        big = _thousands(answer)
        shown = big or answer
        money = "." in answer and len(answer.split(".")[1]) == 2
        yield "number_format", body + [_submit(f"${shown}." if money else f"{shown} in total.")]
    elif _is_set(task) and "," in answer:
        parts = [p.strip() for p in answer.split(",")]
        yield "list_and", body + [_submit(", ".join(parts[:-1]) + " and " + parts[-1])]
        yield "list_bullets", body + [_submit("\n".join(f"- {p}" for p in parts))]


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
    for name, steps in fairness_probes(copy.deepcopy(task)):
        report.ran.append(name)
        if runner.run(task, [format_call(s["name"], s["arguments"]) for s in steps]).score < 1.0:
            report.fair_failed.append(name)
            if stop_early:
                return report
    return report
