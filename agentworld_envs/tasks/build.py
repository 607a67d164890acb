"""Assemble candidates into tasks, gate them, and keep the ones that pass (deterministic per seed)."""

from __future__ import annotations

import random
import time
from collections import Counter
from typing import Any, Iterable

import re

from ..engine import state
from ..engine.actions import format_call
from . import baselines, factors, hard, llm, shapes
from ..engine.spec import canonical_json
from .generate import BYES, HELLOS, Generator, Part, Skip, fmt_value
from .model import EnvModel
from .gate import gate
from .probes import add_counts
from .runner import Runner
from .seal import seal

#: Bump when generation or gating changes, so cached task sets are rebuilt.
GEN_VERSION = "33"   # 33: beside a stated answer, figures listed bare among other figures ("6 7 8") and "the count is 6" are put forward; ids the results listed are ids after the word (the gate's probes run again); 32: the words to the user are read for what they put forward beside a stated answer (a result, a bare list, a hedge, a misglossed record), not for the figures of their working; partial refusals may head their lists (the gate's probes run again); 31: the hard tier at scale (a price rise over 16 to 30 records, a budget filled from 16 to 28, a best fit searched over 17 to 22, caps per group over 16 to 30, a window sweep over a whole status changing 8 to 18, a check of 10 to 13 records' details); 30: a record's figure in brackets after its name or key glosses it in a reply (the gate's probes run again); 29: a window sweep's reply may say how many records it changed and what was already there; 28: a past date of a status lies before today (as the lint reads it); a run of one day reads "is <day>", not "between <day> and <day>"; 27: no task moves a record to a status its dates contradict (an invoice marked overdue before it is due); 26: a fill in order counts each running total and each skip's would-be total as companions of its answer; 25: a price rise's reply may list each raised record's new figure; a field question never asks
# for the field its record is described by; 24: group_fill's wording ("take an approval request", "the combined total charge"), so caches holding 23's do not serve it; 23: hard group_fill (a cap per group of a field, earliest first, what each group already has counting); budget_fill fills from 10 to 16, best_fit searches 11 to 15, verify_batch lists 7 to 9 records (1 to 3 misstated); a price rise leaves records whose business is over alone and says so; a budget spends a record's amount where it has one; 22: a cross sweep asks for the count of "that <parent>"'s records, not "its"; 21: follow-up duties (a closed record's open children are closed too, by the agent: no tool does it) carried out by every reference that closes such a record; hard duty_sweep and verify_batch (a detail per record, one or two misstated) shapes, at most two hard tasks of a family per env (one verify_batch); 20: the hard shapes the tools do not decide get two tries each first; weekend conditions (a weekday worked out per record) in windows, price-rise tiers and budget scopes; adjust_sweep raises 9 to 16 records, budget_fill fills from 8 to 14, best_fit searches 9 to 13 (at least four in, four out); 19: hard adjust_sweep (a two-tier price rise, rounded, capped; a total) budget_fill (earliest first within a budget) and best_fit (the one set that uses most of a budget) shapes; 18: "those checked in in-home estimates" reads "those in home estimates in status checked in"; 17: window_sweep spans (two dates of a record N days apart), sums never across currencies, a hard program does not stand in for the standard one; 16: hard window_sweep shape (date windows relative to today, a figure's bound, a total), tried first; 15: seeded rows agree with their lifecycle (no stamps before work starts, parents started by due dates, e-mails of their holders); 14: hard rule_batch shape; natural-message fairness probes (records named, rule conditions, done parts named); 13: inserted rows match up to renamed ids, refusal evidence off the refused record, bare values of any kind compete, yearless dates and weekdays compete; 12: partial refusals may state the other parts went through; 11: hard tier (10) + the submit contract (outcome, evidence, composed text), one reason per task (9)
TARGET = 12
#: Hard-tier tasks each env aims for (kept first, so the top of the difficulty range is always filled).
HARD_TARGET = 4
#: Tries a hard shape gets before the round robin reaches it: the shapes whose decisions the tools do not
#: make for the agent (a follow-up duty only the policy states, a window worked out from today's date, a
#: figure the agent computes, an order under a budget) go first and twice, a detail to check against each
#: record and the chains next; the batches whose refusals a tool's error would give away fill what is left.
HARD_HEAD_START = {"hard_duty": 2, "hard_window": 2, "hard_adjust": 2, "hard_budget": 2, "hard_best": 2, "hard_group": 2,
                   "hard_verify": 1, "hard_cross": 1, "hard_chain": 1}
HARD_FAMILIES = ["hard_verify", "hard_duty", "hard_window", "hard_adjust", "hard_budget", "hard_best", "hard_group", "hard_cross", "hard_chain",
                 "hard_hidden", "hard_batch", "hard_rule_batch"]
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
          "compare_act": "compare_then_act", "create_record": "create_record", "quota": "quota", "quota_trap": "quota",
          "hard_cross": "cross_sweep", "hard_chain": "chain_sweep", "hard_hidden": "hidden_sweep",
          "hard_batch": "hidden_batch", "hard_rule_batch": "rule_batch", "hard_window": "window_sweep",
          "hard_adjust": "adjust_sweep", "hard_budget": "budget_fill",
          "hard_best": "best_fit", "hard_group": "group_fill", "hard_duty": "duty_sweep", "hard_verify": "verify_batch"}
#: Compound requests: how two parts are joined (the second part's first letter is lowered where it reads on).
JOIN_TWO = ["{} Also, {}", "{} And {}", "{} After that, {}", "{}\n{}", "{} Separately, {}"]


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
    if family == "hard_cross":
        return [hard.cross_sweep(gen)], "graph"
    if family == "hard_chain":
        return [hard.chain_sweep(gen)], "graph"
    if family == "hard_hidden":
        return [hard.hidden_sweep(gen)], "programmatic"
    if family == "hard_batch":
        return [hard.hidden_batch(gen)], "graph"
    if family == "hard_rule_batch":
        return [hard.rule_batch(gen)], "graph"
    if family == "hard_window":
        return [hard.window_sweep(gen)], "programmatic"
    if family == "hard_adjust":
        return [hard.adjust_sweep(gen)], "programmatic"
    if family == "hard_budget":
        return [hard.budget_fill(gen)], "programmatic"
    if family == "hard_best":
        return [hard.budget_fill(gen, best=True)], "programmatic"
    if family == "hard_group":
        return [hard.group_fill(gen)], "programmatic"
    if family == "hard_duty":
        return [hard.duty_sweep(gen)], "graph"
    if family == "hard_verify":
        return [hard.verify_batch(gen)], "graph"
    raise ValueError(family)


#: Openings whose capital stays when a sentence is joined on ("Hi, I'd like …", never "Hi, i'd like …").
_FIRST_PERSON = ("I ", "I'm ", "I'd ", "I've ", "I'll ")


def _lower_first(text: str) -> str:
    return text if text.startswith(_FIRST_PERSON) or text[1:2].isupper() else text[0].lower() + text[1:]


def _join(gen: Generator, texts: list[str]) -> str:
    if len(texts) == 1:
        return texts[0]
    if len(texts) == 2:
        form = gen.rng.choice(JOIN_TWO)
        second = texts[1] if form.startswith("{}\n") or form.endswith(": {}") else _lower_first(texts[1])
        return form.format(texts[0], second)
    return "\n".join(f"{i + 1}. {t}" for i, t in enumerate(texts))


def _with_duties(gen: Generator, steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``steps`` with the follow-up duties each trigger call owed (as the generator carried them out,
    right after it) put in after that call: the policy asks them of the agent, so the reference does them.
    Each trigger counts as a condition the request does not state."""
    out = []
    for step in steps:
        out.append(step)
        if step["name"] in gen.duties:
            owed = gen.followed.get(format_call(step["name"], step["arguments"]))
            if owed is None:
                raise Skip("a trigger call the generator did not make")
            out += owed
            gen.hidden += 1
    return out


def candidate(gen: Generator, family: str) -> dict[str, Any]:
    """One task (without id) built from the golden state, or :class:`Skip`."""
    r = gen.r
    r.drop_prefix()   # the candidate's calls run on the golden state
    r.conn.execute("SAVEPOINT candidate")
    try:
        parts, kind = _parts(gen, family)
        answers = [p for p in parts if p.answer and p.answer[0] != "contains" and not p.refusal]
        refusals = [p for p in parts if p.refusal]
        if len(answers) + len(refusals) > 1 and not (len(refusals) == 1 and not answers):
            raise Skip("more than one answer")
        texts = [p.text for p in parts]
        writes = any(p.writes for p in parts)
        steps = _with_duties(gen, [s for p in parts for s in p.steps])
        if len(steps) > sum(len(p.steps) for p in parts) and answers and family not in HARD_FAMILIES:
            raise Skip("a follow-up duty would move what the answer reads")
        for step in steps:   # no task leaves a record in a status its dates contradict (overdue before it is due)
            impl = gen.m.tools[step["name"]].get("impl") or {}
            if impl.get("kind") == "transition" and \
                    not gen.clock_allows(impl["table"], impl["to"], step["arguments"][impl["key"]["param"]]):
                raise Skip("a change the world's clock contradicts")
        changed = sorted(state.changed_tables(r.conn))
    finally:
        r.conn.execute("ROLLBACK TO candidate")
        r.conn.execute("RELEASE candidate")
    if not steps:
        raise Skip("empty chain")
    answer_text = None
    checks: list[dict[str, Any]] = [c for p in parts for c in p.checks]
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
            if answers[0].companions:
                check["exclude"] = answers[0].companions
            checks.append(check)
    checks.append({"type": "footprint", "tables": changed, "description": "no collateral changes"})
    solution = steps + [{"name": "submit", "arguments": {} if answer_text is None else {"answer": answer_text}}]
    body = _join(gen, texts)
    hello = gen.rng.choice(HELLOS) if "\n" not in body else ""
    if hello.endswith(", ") and body[:1].isupper() and not body[1:2].isupper() and not body.startswith(_FIRST_PERSON):
        body = body[0].lower() + body[1:]   # "Hi, please …", not "Hi, Please …"
    instruction = hello + body + gen.rng.choice(BYES)
    if llm.enabled():
        keep = [w.strip(".,;:()?!'") for w in re.findall(r"\S*[\d@]\S*", instruction)]
        instruction = llm.paraphrase(instruction, keep)
    structure = max((p.structure for p in parts), key=lambda s: STRUCT[s])
    trap = "none" if not refusals else ("mixed" if writes else "refuse")
    tier = "hard" if family in HARD_FAMILIES else "standard"
    knobs = {"chain_length": len(steps), "structure": structure, "compound": len(parts), "policy_trap": trap,
             "hidden": gen.hidden, "family": family, "shape": SHAPES[family], "tier": tier}
    rules = [p.rule for p in parts if p.rule]
    if rules:
        knobs["rule"] = rules[0]
    tags = [kind, family, SHAPES[family], structure] + ([f"trap:{trap}"] if refusals else []) + (["hard"] if tier == "hard" else [])
    return {"instruction": instruction.strip(), "kind": kind, "difficulty": 0.0, "knobs": knobs, "tags": tags,
            "solution": solution, "checks": checks}


STRUCT = {"linear": 0.0, "branching": 1.0, "aggregation": 1.0, "conditional": 1.5}
#: Tasks of one env that may share an instruction skeleton (see :func:`skeleton`).
MAX_PER_SKELETON = 2
#: Hard-tier tasks of one env that may share a family: the tier stays a mix of shapes (a check of the details
#: a request gives fits almost every env, so it takes one place at most).
MAX_PER_HARD_FAMILY = 2
HARD_FAMILY_CAP = {"hard_verify": 1}


def skeleton(task: dict[str, Any]) -> str:
    """The instruction with its values masked (figures, codes, e-mails, quoted text, the reference's
    argument values) and greetings dropped: two tasks with one skeleton read as one template."""
    text = task["instruction"]
    values = {str(v) for s in task["solution"] for v in s["arguments"].values() if isinstance(v, (str, int, float))}
    for v in sorted(values, key=len, reverse=True):
        if len(v) >= 3:
            text = text.replace(v, "#")
    text = re.sub(r'"[^"]*"|\S*[\d@]\S*', "#", text)
    for w in HELLOS + BYES:
        if w.strip():
            text = text.replace(w.strip(), "")
    return " ".join(text.casefold().split())


def rate(runner: Runner, task: dict[str, Any]) -> dict[str, Any]:
    """``task`` with its measured factors and whether each scripted baseline fails it in ``knobs``, and the
    difficulty made from the factors."""
    body = [s for s in task["solution"] if s["name"] != "submit"]
    results = runner.run(None, body).results
    f = factors.measure(runner, task, results)
    knobs = {**task.get("knobs", {}), "factors": f}
    knobs["baselines_failed"] = baselines.play(runner, {**task, "knobs": knobs}, results)
    return {**task, "difficulty": factors.difficulty(f), "knobs": knobs}


def generate_tasks(spec: dict[str, Any], golden: bytes, *, seed: str, prefix: str, target: int = TARGET,
                   max_attempts: int | None = None, runner: Runner | None = None, tools=None,
                   accept=None, families: Iterable[str] | None = None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Generate and gate tasks until ``target`` are kept (hard-tier ones first). Returns (tasks, report)."""
    t0 = time.perf_counter()
    own = runner is None
    runner = runner or Runner(spec, golden, tools)
    model = EnvModel(spec)
    rng = random.Random(seed)
    rejected: Counter[str] = Counter()
    probe_counts: dict[str, dict[str, int]] = {}   # per probe kind, over the kept tasks
    kept: list[dict[str, Any]] = []
    seen: set[str] = set()
    skeletons: Counter[str] = Counter()
    fams = list(families or FAMILIES + HARD_FAMILIES)
    hard_fams = [f for f in fams if f in HARD_FAMILIES]
    fams = [f for f in fams if f not in HARD_FAMILIES] or hard_fams
    offset = rng.randrange(len(fams))
    max_attempts = max_attempts or 3 * target + 12
    prog = [f for f in fams if f.startswith("prog_")]

    def attempt_one(attempt: int, family: str) -> None:
        gen = Generator(model, runner, random.Random(f"{seed}:{attempt}"))
        try:
            task = candidate(gen, family)
        except Skip:
            rejected["not_applicable"] += 1
            return
        except Exception:  # noqa: BLE001 - a generator bug on one schema must not lose the env
            rejected["generation_error"] += 1
            return
        task = {"id": f"{prefix}-{attempt:03d}", **task}
        sig = canonical_json([task["solution"], task["instruction"]])
        start = canonical_json([task["knobs"]["family"], task["solution"][0]])
        skel = skeleton(task)
        same_family = sum(1 for k in kept if k["knobs"]["family"] == family)
        if sig in seen or start in seen or skeletons[skel] >= MAX_PER_SKELETON \
                or (family in HARD_FAMILIES and same_family >= HARD_FAMILY_CAP.get(family, MAX_PER_HARD_FAMILY)):
            rejected["duplicate"] += 1
            return
        try:
            task = rate(runner, seal(runner, task))
            if accept is not None and not accept(task):
                rejected["filtered"] += 1
                return
            if task["knobs"]["tier"] == "hard" and not task["knobs"]["baselines_failed"]["greedy"]:
                rejected["no_headroom"] += 1   # the first plausible record happens to be right: nothing to judge
                return
            ran: dict[str, dict[str, int]] = {}
            why = gate(runner, task, probe_counts=ran)
        except Exception as exc:  # noqa: BLE001 - a broken candidate is a rejection, not a crash
            why = "generation_error"
            task.setdefault("knobs", {})["error"] = f"{type(exc).__name__}: {exc}"[:200]
        if why:
            rejected[why] += 1
            return
        add_counts(probe_counts, ran)
        seen.update((sig, start))
        skeletons[skel] += 1
        kept.append(task)

    attempt = 0
    if hard_fams and fams is not hard_fams:
        hard_goal = min(HARD_TARGET, max(1, target // 3))
        tries: Counter[str] = Counter()
        # a filter (focus tools, a difficulty floor) rejects most candidates: give the shapes more tries
        for attempt in range((4 * hard_goal + 3) * (3 if accept is not None else 1)):
            if len(kept) >= hard_goal:
                break
            # round robin over the shapes: a varied tier, not the one shape that always fits
            family = min(hard_fams, key=lambda f: (tries[f] - HARD_HEAD_START.get(f, 0),
                                                   (hard_fams.index(f) - offset) % len(hard_fams)))
            tries[family] += 1
            attempt_one(900 + attempt, family)
    for attempt in range(max_attempts + (len(prog) * 2 if prog else 0)):
        # a hard-tier program does not stand in for the standard one every env gets
        has_prog = any(t["kind"] == "programmatic" and t["knobs"]["tier"] != "hard" for t in kept)
        if len(kept) >= target and (has_prog or not prog or attempt >= max_attempts):
            break
        if attempt >= max_attempts and (has_prog or not prog):
            break
        family = fams[(attempt + offset) % len(fams)]
        if len(kept) >= target - 1 and not has_prog and prog:
            family = prog[attempt % len(prog)]   # every env gets at least one programmatic task
        attempt_one(attempt, family)
    if own:
        runner.close()
    kept.sort(key=lambda t: t["id"])
    # Every kept task passed the gate, whose probes include every hack and fairness probe.
    report = {"kept": len(kept), "hack_fail": len(kept), "paraphrase_pass": len(kept), "probes": probe_counts,
              "rejected": dict(sorted(rejected.items())), "attempts": attempt + 1,
              "seconds": round(time.perf_counter() - t0, 3)}
    return kept, report


def fmt(x: Any) -> str:
    return fmt_value(x)
