"""Assemble candidates into tasks, gate them, and keep the ones that pass (deterministic per seed)."""

from __future__ import annotations

import random
import time
from collections import Counter
from typing import Any, Iterable

import re

from .. import state
from . import llm, shapes
from ..spec import canonical_json
from .generate import BYES, HELLOS, NOISE, Generator, Part, Skip, fmt_value
from .model import EnvModel
from .gate import gate
from .probes import add_counts
from .runner import Runner
from .seal import seal

#: Bump when generation or gating changes, so cached task sets are rebuilt.
GEN_VERSION = "9"   # 9: the submit contract (outcome, evidence, composed text), one reason per task
TARGET = 12
FAMILIES = ["graph_read", "graph_write", "prog_bulk", "graph_any", "prog_agg", "graph_compound", "graph_trap",
            "prog_argmax", "graph_write", "prog_cond", "graph_read", "prog_mixed", "graph_compound", "prog_agg",
            "graph_any", "prog_bulk", "graph_mixed", "graph_write",
            "rule_threshold", "rule_threshold_trap", "time_window", "time_window_trap", "multi_constraint",
            "compare_act", "create_record", "rule_threshold_trap", "time_window_trap", "multi_constraint",
            "quota", "quota_trap"]
#: The shape of every family, for per-shape counts (``agentworld stats``).
SHAPES = {"graph_read": "lookup", "graph_write": "write", "graph_any": "lookup_or_write", "graph_trap": "status_trap",
          "graph_mixed": "status_trap", "graph_compound": "compound", "prog_bulk": "bulk_write",
          "prog_cond": "conditional_bulk", "prog_mixed": "status_trap", "prog_agg": "aggregate",
          "prog_argmax": "aggregate", "rule_threshold": "rule_threshold", "rule_threshold_trap": "rule_threshold",
          "time_window": "time_window", "time_window_trap": "time_window", "multi_constraint": "multi_constraint",
          "compare_act": "compare_then_act", "create_record": "create_record", "quota": "quota", "quota_trap": "quota"}
STRUCT = {"linear": 0.0, "branching": 1.0, "aggregation": 1.0, "conditional": 1.5}


def _parts(gen: Generator, family: str) -> tuple[list[Part], str]:
    """Run the family's program/walk on the live connection; returns its parts and kind."""
    if family == "graph_read":
        return [gen.walk(write=False)[0]], "graph"
    if family == "graph_write":
        return [gen.walk(write=True)[0]], "graph"
    if family == "graph_any":
        return [gen.walk()[0]], "graph"
    if family == "graph_trap":
        return [gen.walk(trap=True)[0]], "graph"
    if family == "graph_mixed":   # do the allowed part, refuse the rest
        return [gen.walk(write=True)[0], gen.walk(trap=True)[0]], "graph"
    if family == "graph_compound":
        parts = [gen.walk(write=True)[0]]
        for _ in range(gen.rng.choice([1, 1, 2])):
            parts.append(gen.walk(write=True)[0])
        if gen.rng.random() < 0.5:
            parts.append(gen.walk(write=False)[0])
        return parts, "graph"
    if family == "prog_bulk":
        return [gen.p_bulk()], "programmatic"
    if family == "prog_cond":
        return [gen.p_bulk(threshold=True)], "programmatic"
    if family == "prog_mixed":
        return [gen.p_bulk(mixed=True)], "programmatic"
    if family == "prog_agg":
        return [gen.p_aggregate()], "programmatic"
    if family == "prog_argmax":
        return [gen.p_argmax()], "programmatic"
    if family in ("rule_threshold", "rule_threshold_trap", "time_window", "time_window_trap"):
        return [shapes.rule_task(gen, family.removesuffix("_trap"), trap=family.endswith("_trap"))], "graph"
    if family == "multi_constraint":
        return [shapes.multi_constraint(gen)], "graph"
    if family == "compare_act":
        return [shapes.compare_then_act(gen)], "graph"   # checked by its sealed state, not a tasks.* program
    if family == "create_record":
        return [shapes.create_record(gen)], "graph"
    if family in ("quota", "quota_trap"):
        return [shapes.quota_task(gen, trap=family == "quota_trap")], "graph"
    raise ValueError(family)


def _distractor(gen: Generator, parts: list[Part]) -> tuple[str, dict[str, Any] | None]:
    anchors = gen.anchors()
    t = gen.rng.choice(anchors)
    row = gen.pick_row(t)
    mentioned = " ".join(p.text for p in parts)
    if str(row[t.label]) in mentioned:
        raise Skip("distractor collides")
    desc = gen.describe(t, row)
    now = gen.row_now(t.name, row["id"])
    if now != row:   # the task itself changes it: not a distractor
        raise Skip("distractor is a target")
    text = gen.rng.choice([f"(Leave {desc} exactly as it is.)", f"Note that {desc} is a different record; don't touch it.",
                           f"{desc[0].upper() + desc[1:]} is fine, no changes there."])
    check = gen.row_check(t.name, row["id"], desc="distractor record untouched")
    return text, check


def candidate(gen: Generator, family: str) -> dict[str, Any]:
    """One task (without id) built from the golden state, or :class:`Skip`."""
    r = gen.r
    r.conn.execute("SAVEPOINT candidate")
    try:
        parts, kind = _parts(gen, family)
        answers = [p for p in parts if p.answer and p.answer[0] != "contains" and not p.refusal]
        refusals = [p for p in parts if p.refusal]
        if len(answers) + len(refusals) > 1 and not (len(refusals) == 1 and not answers):
            raise Skip("more than one answer")
        distractors, extra_checks, texts = 0, [], [p.text for p in parts]
        writes = any(p.writes for p in parts)
        if gen.rng.random() < 0.3:
            try:
                text, check = _distractor(gen, parts)
                texts.insert(gen.rng.randrange(len(texts) + 1), text)
                distractors += 1
                if writes and check:
                    extra_checks.append(check)
            except Skip:
                pass
        noise = ""
        if gen.rng.random() < 0.15:
            noise = gen.rng.choice(NOISE) + " "   # chatter before the request, never a numbered item
            distractors += 1
        steps = [s for p in parts for s in p.steps]
        changed = sorted(state.changed_tables(r.conn))
    finally:
        r.conn.execute("ROLLBACK TO candidate")
        r.conn.execute("RELEASE candidate")
    if not steps:
        raise Skip("empty chain")
    answer_text = None
    checks: list[dict[str, Any]] = [c for p in parts for c in p.checks] + extra_checks
    if refusals:
        answer_text = refusals[0].refusal
        if refusals[0].refusal_check is not None:
            checks.append({"type": "answer", "mode": "refusal", **refusals[0].refusal_check,
                           "description": "refuses the forbidden part and says why"})
    elif answers:
        mode, value = answers[0].answer
        answer_text = value
        if mode is not None:
            check = {"type": "answer", "mode": mode, "expected": value}
            if answers[0].candidates:
                check["candidates"] = answers[0].candidates
            checks.append(check)
    checks.append({"type": "footprint", "tables": changed, "description": "no collateral changes"})
    solution = steps + [{"name": "submit", "arguments": {} if answer_text is None else {"answer": answer_text}}]
    if len(parts) > 1:
        joined = gen.rng.choice(["{} Also, {}", "Two things. First: {} Second: {}", "{} And {}"])
        if len(texts) == 2:
            keep = joined.startswith("Two") or texts[1].startswith(("I ", "I'm "))   # never "Also, i need …"
            second = texts[1] if keep else texts[1][0].lower() + texts[1][1:]
            body = joined.format(texts[0], second)
        else:
            body = " ".join(f"({i + 1}) {t}" for i, t in enumerate(texts))
            body = "Several requests: " + body
    else:
        body = " ".join(texts)
    hello = gen.rng.choice(HELLOS)
    if hello.endswith(", ") and noise:
        noise = noise[0].lower() + noise[1:]
    elif hello.endswith(", ") and body[:1].isupper() and not body[1:2].isupper():
        body = body[0].lower() + body[1:]   # "Hi, please …", not "Hi, Please …"
    instruction = hello + noise + body + gen.rng.choice(BYES)
    if llm.enabled():
        keep = [w.strip(".,;:()?!'") for w in re.findall(r"\S*[\d@]\S*", instruction)]
        instruction = llm.paraphrase(instruction, keep)
    structure = max((p.structure for p in parts), key=lambda s: STRUCT[s])
    trap = "none" if not refusals else ("mixed" if writes else "refuse")
    obscure = gen.rng.random() < 0.25
    calls = len(steps)
    knobs = {"chain_length": calls, "structure": structure, "compound": len(parts), "distractors": distractors,
             "policy_trap": trap, "obscure_tools": obscure, "family": family, "shape": SHAPES[family]}
    rules = [p.rule for p in parts if p.rule]
    if rules:
        knobs["rule"] = rules[0]
    difficulty = round(0.6 * calls + STRUCT[structure] + 0.8 * (len(parts) - 1) + 0.8 * distractors
                       + {"none": 0, "refuse": 1.5, "mixed": 2.0}[trap] + (1.0 if obscure else 0.0), 2)
    return {"instruction": instruction.strip(), "kind": kind, "difficulty": difficulty, "knobs": knobs,
            "tags": [kind, family, SHAPES[family], structure] + ([f"trap:{trap}"] if refusals else []),
            "solution": solution, "checks": checks}


def generate_tasks(spec: dict[str, Any], golden: bytes, *, seed: str, prefix: str, target: int = TARGET,
                   max_attempts: int | None = None, runner: Runner | None = None, tools=None,
                   accept=None, families: Iterable[str] | None = None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Generate and gate tasks until ``target`` are kept. Returns (tasks, report)."""
    t0 = time.perf_counter()
    own = runner is None
    runner = runner or Runner(spec, golden, tools)
    model = EnvModel(spec)
    rng = random.Random(seed)
    rejected: Counter[str] = Counter()
    probe_counts: dict[str, dict[str, int]] = {}   # per probe kind, over the kept tasks
    kept: list[dict[str, Any]] = []
    seen: set[str] = set()
    fams = list(families or FAMILIES)
    offset = rng.randrange(len(fams))
    max_attempts = max_attempts or 3 * target + 12
    prog = [f for f in fams if f.startswith("prog_")]
    for attempt in range(max_attempts + (len(prog) * 2 if prog else 0)):
        has_prog = any(t["kind"] == "programmatic" for t in kept)
        if len(kept) >= target and (has_prog or not prog or attempt >= max_attempts):
            break
        if attempt >= max_attempts and (has_prog or not prog):
            break
        family = fams[(attempt + offset) % len(fams)]
        if len(kept) >= target - 1 and not has_prog and prog:
            family = prog[attempt % len(prog)]   # every env gets at least one programmatic task
        gen = Generator(model, runner, random.Random(f"{seed}:{attempt}"))
        try:
            task = candidate(gen, family)
        except Skip:
            rejected["not_applicable"] += 1
            continue
        except Exception:  # noqa: BLE001 - a generator bug on one schema must not lose the env
            rejected["generation_error"] += 1
            continue
        task = {"id": f"{prefix}-{attempt:03d}", **task}
        if accept is not None and not accept(task):
            rejected["filtered"] += 1
            continue
        sig = canonical_json([task["solution"], task["instruction"]])
        if sig in seen:
            rejected["duplicate"] += 1
            continue
        try:
            task = seal(runner, task)
            ran: dict[str, dict[str, int]] = {}
            why = gate(runner, task, probe_counts=ran)
        except Exception as exc:  # noqa: BLE001 - a broken candidate is a rejection, not a crash
            why = "generation_error"
            task.setdefault("knobs", {})["error"] = f"{type(exc).__name__}: {exc}"[:200]
        if why:
            rejected[why] += 1
            continue
        seen.add(sig)
        kept.append(task)
        add_counts(probe_counts, ran)
    if own:
        runner.close()
    # Every kept task passed the gate, whose probes include every hack and fairness probe.
    report = {"kept": len(kept), "hack_fail": len(kept), "paraphrase_pass": len(kept), "probes": probe_counts,
              "rejected": dict(sorted(rejected.items())), "attempts": attempt + 1,
              "seconds": round(time.perf_counter() - t0, 3)}
    return kept, report


def fmt(x: Any) -> str:
    return fmt_value(x)
