"""Black-box reward probe: hack and fairness trajectories played through ``gym.make`` on real tasks.

    python scripts/probe_rewards.py --envs 24 --seed 7            # retail-v0 + 24 sampled envs
    python scripts/probe_rewards.py --envs 24 --json probe.json   # per-kind counts and failing examples

Only public interfaces are used: ``gym.make``, ``reset(options={"task_id"})``, ``step``,
``solution_actions()``, the observation (policy and task) and ``info["tools"]``. Each trajectory
starts from the reference solution and changes what a policy would change:

* **hack kinds** (must never score 1.0): dumps of the values seen in the reference's tool results,
  by kind (every value, numbers, dates, codes, category words, names, one result row, a run of
  integers); hedges with "or", "maybe", "possibly", "either" (dates in every accepted format);
  negations; a competitor of the answer's kind; refusals that claim the action happened; refusals
  from the policy's rule text with no lookup; the reference refusal with no lookup; the outcome
  flipped; a wrong instruction-given text or a composed text "x" in a write; non-string answers,
  extra submit arguments and a right answer submitted after a wrong one;
* **fairness kinds** (must score 1.0): the reference answer in a sentence, as a Markdown bullet,
  numbered, bold, in a code span, under a bold heading, with incidental counts and ids, in every
  accepted date format, with currency and thousands separators, lists joined with "and",
  refusals with curly apostrophes / "I'm not able to" / a true fact added, a confirmation message
  on a write, names with titles.

It prints the pass rate of every kind (``hack``: share scoring 1.0 — should be 0; ``fair``:
share scoring 1.0 — should be 1) and exits 1 when a hack ever passes or a fairness kind is
below 98 %.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import re
import sys
from collections import defaultdict
from typing import Any

import gymnasium as gym

import agentworld_envs  # noqa: F401  (registers the envs)
import env_registry

MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December"]
ISO_DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2}))?(?:Z|[+-]\d{2}:?\d{2})?)?$")
TITLES = ("Dr.", "Prof.", "Ing.", "Mr.", "Mrs.", "Ms.", "Mag.", "Dipl.", "B.Sc.", "M.Sc.", "PhD", "MBA")


# ------------------------------------------------------------------------------------------ helpers

def call(name: str, arguments: dict[str, Any]) -> str:
    return "<tool_call>" + json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False) + "</tool_call>"


def parse_call(action: str) -> tuple[str, dict[str, Any]]:
    body = action.split("<tool_call>", 1)[1].rsplit("</tool_call>", 1)[0]
    obj = json.loads(body)
    return obj["name"], obj.get("arguments", {})


def play(env, task_id: str, actions: list[str]) -> float:
    env.reset(options={"task_id": task_id})
    for a in actions:
        _, reward, term, trunc, _ = env.step(a)
        if term or trunc:
            return float(reward)
    return 0.0


def flatten(obj: Any, out: list[Any]) -> None:
    if isinstance(obj, dict):
        for v in obj.values():
            flatten(v, out)
    elif isinstance(obj, list):
        for v in obj:
            flatten(v, out)
    elif isinstance(obj, bool) or obj is None:
        return
    else:
        out.append(obj)


def kind_of(v: Any) -> str | None:
    if isinstance(v, (int, float)):
        return "numbers"
    if not isinstance(v, str) or not v.strip() or len(v) > 60:
        return None
    if ISO_DATE.match(v):
        return "dates"
    if "@" in v:
        return "codes"
    if re.search(r"\d", v):
        return "codes"
    if re.fullmatch(r"[a-z][a-z_ -]{1,24}", v) and len(v.split()) <= 3:
        return "words"
    if len(v.split()) >= 2 and v[:1].isupper():
        return "names"
    return None


def fmt_number(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.2f}"
    return str(v)


def date_forms(text: str) -> list[str]:
    """``text`` (an ISO date or date-time) in every accepted written form."""
    m = ISO_DATE.match(text.strip())
    if not m:
        return []
    d = dt.date(int(m[1]), int(m[2]), int(m[3]))
    month = MONTHS[d.month - 1]
    forms = [d.isoformat(), f"{month} {d.day}, {d.year}", f"{d.day} {month} {d.year}", f"{month[:3]} {d.day}, {d.year}",
             f"{d.month:02d}/{d.day:02d}/{d.year}", f"{d.strftime('%A')}, {month} {d.day}, {d.year}"]
    if m[4]:
        forms.append(f"{d.isoformat()} {m[4]}:{m[5]}")
    return forms


def past(verb: str) -> str:
    if re.fullmatch(r"[a-z]*[^aeiou][aeiou][bdgmnprt]", verb) and len(verb) <= 4:
        return verb + verb[-1] + "ed"
    if verb.endswith("e"):
        return verb + "d"
    if verb.endswith("y") and verb[-2:-1] not in "aeiou":
        return verb[:-1] + "ied"
    return verb + "ed"


class Case:
    """One task: its reference, the values its reference saw, and the submit arguments to vary."""

    def __init__(self, env, task_id: str, obs: str, info: dict[str, Any], legacy: bool = False):
        self.env, self.task_id, self.obs, self.info = env, task_id, obs, info
        actions = env.unwrapped.solution_actions()
        self.body = actions[:-1]
        name, self.args = parse_call(actions[-1])
        assert name == "submit"
        if legacy and "outcome" in self.args:   # the old contract: one free-text answer, no outcome
            text = self.args.get("message") if self.args.get("outcome") != "done" else self.args.get("answer")
            self.args = {} if text is None else {"answer": text}
        self.answer: str = self.args.get("answer") or ""
        self.message: str = self.args.get("message") or ""
        self.outcome = self.args.get("outcome")
        self.has_outcome = not legacy and any(t["function"]["name"] == "submit" and "outcome" in
                                              t["function"]["parameters"].get("properties", {}) for t in info["tools"])
        self.instruction: str = info["instruction"]
        self.refusal = self.outcome in ("refused", "partial") or (self.outcome is None and bool(info.get("needs_policy"))
                                                                  and bool(self.answer))
        self.seen: dict[str, list[str]] = defaultdict(list)
        self.rows: list[dict[str, Any]] = []
        self.writes: list[int] = []
        self.list_totals: list[int] = []
        env.reset(options={"task_id": task_id})
        for i, a in enumerate(self.body):
            o, _, _, _, inf = env.step(a)
            try:
                res = json.loads(o)
            except ValueError:
                continue
            if isinstance(res, dict) and isinstance(res.get("results"), list):
                self.rows += [r for r in res["results"] if isinstance(r, dict)]
                if isinstance(res.get("total"), int):
                    self.list_totals.append(res["total"])
            elif isinstance(res, dict) and "error" not in res:
                self.rows.append(res)
            flat: list[Any] = []
            flatten(res, flat)
            for v in flat:
                k = kind_of(v)
                if k:
                    shown = fmt_number(v) if k == "numbers" else v
                    if shown not in self.seen[k]:
                        self.seen[k].append(shown)
            if inf.get("error") is None and self._writes(a, res):
                self.writes.append(i)

    @staticmethod
    def _writes(action: str, res: Any) -> bool:
        name, _ = parse_call(action)
        return bool(re.match(r"(?:cancel|create|add|update|set|mark|close|open|resolve|pause|approve|reject|"
                             r"deactivate|discontinue|return|exchange|modify|place|issue|record|assign|start|"
                             r"complete|schedule|ship|deliver|archive|flag)", name))

    # -------------------------------------------------------------- trajectories
    def submit(self, answer: Any = None, *, message: str | None = None, outcome: Any = "keep", extra: dict | None = None,
               drop_answer: bool = False) -> str:
        args = dict(self.args)
        if answer is not None:
            args["answer"] = answer
        if drop_answer:
            args.pop("answer", None)
        if message is not None:
            args["message"] = message
        if outcome != "keep":
            if outcome is None:
                args.pop("outcome", None)
            else:
                args["outcome"] = outcome
        if extra:
            args.update(extra)
        return call("submit", args)

    def with_body(self, *submits: str) -> list[str]:
        return self.body + list(submits)

    def value_kind(self) -> str:
        return value_kind(self.answer)

    def other(self, kind: str, avoid: str) -> str | None:
        """Another value of the slot of ``avoid``: the same field of another result row when one holds
        ``avoid``, else another seen value of ``kind`` (never the answer, never in the instruction)."""
        want = avoid.strip().lower()
        for row in self.rows:
            for key, val in row.items():
                if isinstance(val, (str, int, float)) and not isinstance(val, bool) and \
                        (fmt_number(val) if not isinstance(val, str) else val).strip().lower() == want:
                    for other in self.rows:
                        v = other.get(key)
                        if isinstance(v, (str, int, float)) and not isinstance(v, bool):
                            shown = fmt_number(v) if not isinstance(v, str) else v
                            if shown.strip().lower() != want and shown.lower() not in self.instruction.lower():
                                return shown
        for v in self.seen.get(kind, []):
            if v.strip().lower() != avoid.strip().lower() and v.lower() not in self.instruction.lower() \
                    and avoid.lower() not in v.lower() and v.lower() not in avoid.lower():
                return v
        return None


def value_kind(text: str) -> str:
    a = text.strip()
    if ISO_DATE.match(a):
        return "dates"
    if re.fullmatch(r"-?\d{1,8}(?:\.\d+)?", a):
        return "numbers"
    if re.search(r"\d", a) or "@" in a:
        return "codes"
    if re.fullmatch(r"[a-z][a-z_ -]{1,24}", a):
        return "words"
    return "names"


# ------------------------------------------------------------------------------------------ hack kinds

def hacks(c: Case, rng: random.Random):
    ref = c.answer
    if ref:
        everything = [v for k in ("numbers", "dates", "codes", "words", "names") for v in c.seen.get(k, [])]
        dumps = {"dump_all": everything, "dump_numbers": c.seen.get("numbers", []), "dump_dates": c.seen.get("dates", []),
                 "dump_codes": c.seen.get("codes", []), "dump_words": c.seen.get("words", []),
                 "dump_names": c.seen.get("names", [])}
        for kind, vals in dumps.items():
            vals = [v for v in vals if v.lower() not in ref.lower()][:600]
            if len(vals) >= 3:
                yield kind, c.with_body(c.submit(ref + "\n" + ", ".join(vals)))
        row = next((r for r in c.rows if len(r) >= 4), None)
        if row is not None:
            flat: list[Any] = []
            flatten(row, flat)
            vals = [fmt_number(v) if not isinstance(v, str) else v for v in flat if str(v).lower() not in ref.lower()]
            vals = [v for v in vals if len(v) <= 40][:6]
            if len(vals) >= 3:
                yield "dump_row", c.with_body(c.submit(ref + ", " + ", ".join(vals)))
        yield "dump_int_range", c.with_body(c.submit(ref + " " + " ".join(str(i) for i in range(200))))
    if c.refusal:
        yield from refusal_hacks(c)
    elif ref:
        yield from value_hacks(c)
    yield from write_hacks(c)
    # schema and episode hacks
    value = ref or "done"
    num = re.fullmatch(r"-?\d+(?:\.\d+)?", value.strip())
    yield "non_string_answer", c.with_body(c.submit(float(value) if num else {"value": value}))
    yield "non_string_answer", c.with_body(c.submit([value]))
    yield "extra_argument", c.with_body(c.submit(extra={"confidence": 1.0}))
    yield "second_submit", [c.submit("I am not sure.", outcome="done" if c.has_outcome else "keep", message="")] + \
        c.with_body(c.submit())
    yield "blanket_refusal", [c.submit("Sorry, I cannot do that.", outcome="refused" if c.has_outcome else "keep",
                                       message="")]
    if c.has_outcome:
        if c.refusal:
            yield "outcome_flip", c.with_body(c.submit(outcome="done"))
        elif ref:
            yield "outcome_flip", c.with_body(c.submit(outcome="refused"))


def value_hacks(c: Case):
    ref = c.answer.split(", ")[-1] if ", " in c.answer else c.answer
    kind = value_kind(ref)
    x = c.other(kind, ref)
    if x is None and kind == "numbers":
        x = fmt_number(float(ref) + 1 if "." in ref else int(ref) + 1)
    if x is None and kind == "dates":
        x = "2016-07-19"
    if x is not None:
        forms_ref = date_forms(ref) if kind == "dates" else [ref]
        forms_x = date_forms(x) if kind == "dates" else [x]
        for fr, fx in zip(forms_ref, forms_x):
            for pattern in ("{a} (or maybe {b})", "either {a} or {b}", "{a} (or possibly {b})", "{a}, maybe {b}",
                            "{a} or {b}", "{a}/{b}", "Possibly {a}, possibly {b}."):
                    yield "hedge", c.with_body(c.submit(c.answer.replace(ref, pattern.format(a=fr, b=fx))))
        yield "competitor", c.with_body(c.submit(f"{c.answer} and {x}"))
        yield "competitor_in_message", c.with_body(c.submit(message=f"It is {x}."))
        yield "competitor_in_message", c.with_body(c.submit(message=f"It might also be {x}."))
        yield "competitor", c.with_body(c.submit(f"{c.answer}, {x}"))
        yield "competitor", c.with_body(c.submit(f"It is {c.answer}. It could also be {x}."))
    for fr in (date_forms(ref) if kind == "dates" else [ref]):
        for pattern in ("It is not {a}.", "Not {a}.", "{a} is not correct.", "It isn't {a}.", "Definitely not {a}."):
            yield "negation", c.with_body(c.submit(c.answer.replace(ref, pattern.format(a=fr))))


def refusal_hacks(c: Case):
    ref = c.answer
    text = ref + (" " + c.message if c.message else "")
    verb = re.search(r"\b(?:please|could you|need you to|can you|want to|like to)\s+([a-z]+)", c.instruction.lower())
    v = past(verb[1]) if verb else "processed"
    sep = "" if ref.rstrip()[-1:] in ".!?" else "."
    for claim in (" Update: I went ahead and did it anyway - it's done.", f" It has been {v}.", f" I have {v} it.",
                  " Done.", f" Actually, I {v} it anyway.", " It's been taken care of."):
        yield "claim_after_refusal", c.with_body(c.submit(ref + sep + claim))
        if c.has_outcome:
            base = c.message or ref
            yield "claim_after_refusal", c.with_body(c.submit(message=base + ("" if base.rstrip()[-1:] in ".!?" else ".")
                                                              + claim))
    # the policy's rule text, no lookup
    policy = c.obs.split("# Task", 1)[0]
    rules = [s.strip(" -") for s in re.split(r"(?<=[.])\s+|\n", policy)
             if re.search(r"\b(?:only|never|at most|at least|within|cannot|may not|must)\b", s, re.I) and len(s) < 300]
    words = {w for w in re.findall(r"[a-z]{4,}", c.instruction.lower())}
    relevant = [r for r in rules if words & set(re.findall(r"[a-z]{4,}", r.lower()))][:3] or rules[:2]
    outcome = c.outcome if c.has_outcome else "keep"
    for r in relevant:
        yield "rule_text_refusal", [c.submit(f"I cannot do that. The policy says: {r}", outcome=outcome, message="")]
        yield "rule_text_refusal", [c.submit(f"I can't {verb[1] if verb else 'do'} it: {r}", outcome=outcome, message="")]
    yield "refusal_no_lookup", [c.submit()]
    # hedge the reason: a seen value of the reason's kind, "(or possibly X)"
    for kind in ("words", "numbers", "dates"):
        reason = next((s for s in c.seen.get(kind, []) if s and re.search(r"(?<![\w.])" + re.escape(s) + r"(?![\w])", text)
                       and s.lower() not in c.instruction.lower()), None)
        if reason is None:
            continue
        x = c.other(kind, reason)
        if x is None:
            continue
        where = re.compile(r"(?<![\w.])" + re.escape(reason) + r"(?![\w])")
        for pattern in (" (or possibly {b})", " or maybe {b}", ", either that or {b}"):
            replacement = (reason + pattern.format(b=x)).replace("\\", "\\\\")
            hedged = where.sub(replacement, ref, count=1)
            if hedged != ref:
                yield "refusal_hedge", c.with_body(c.submit(hedged))
            elif c.message:
                yield "refusal_hedge", c.with_body(c.submit(message=where.sub(replacement, c.message, count=1)))
        yield "refusal_competitor", c.with_body(c.submit(ref + f" It is {x}."))


def write_hacks(c: Case):
    for i in c.writes:
        name, args = parse_call(c.body[i])
        for key, val in args.items():
            if not isinstance(val, str) or len(val) < 3:
                continue
            given = val.lower().strip(" .") in c.instruction.lower()
            free_text = " " in val.strip()
            if given and free_text:
                body = list(c.body)
                body[i] = call(name, {**args, key: "per manager approval" if val != "per manager approval" else "duplicate entry"})
                yield "wrong_instruction_text", body + [c.submit()]
            elif free_text and not given:
                body = list(c.body)
                body[i] = call(name, {**args, key: "x"})
                yield "composed_text_x", body + [c.submit()]


# ------------------------------------------------------------------------------------------ fairness kinds

def thousands(ref: str) -> str | None:
    try:
        n = float(ref)
    except ValueError:
        return None
    decimals = len(ref.split(".")[1]) if "." in ref else 0
    return f"{n:,.{decimals}f}"


def fairness(c: Case):
    ref = c.answer
    if c.refusal:
        if not ref:
            return
        t = ref.replace("'", "\u2019")
        yield "refusal_curly", c.with_body(c.submit(t.replace("cannot", "can\u2019t", 1)))
        if "I cannot" in ref:
            yield "refusal_not_able", c.with_body(c.submit(ref.replace("I cannot", "I\u2019m not able to", 1)))
        yield "refusal_sentence", c.with_body(c.submit("Unfortunately, " + ref[0].lower() + ref[1:]))
        yield "refusal_true_fact", c.with_body(c.submit(ref.rstrip(".") + ". His other two requests are already done."))
        yield "refusal_bullet", c.with_body(c.submit("- " + ref))
        if c.has_outcome and c.message:   # the old contract: no outcome, the explanation as the answer
            yield "legacy_contract", c.with_body(call("submit", {"answer": c.message}))
        return
    if not ref:
        yield "write_confirmation", c.with_body(c.submit(message="All set: I made the requested change."))
        yield "write_confirmation", c.with_body(c.submit("Done."))
        return
    kind = c.value_kind()
    items = [p.strip() for p in ref.split(",")] if ", " in ref else [ref]
    yield "sentence", c.with_body(c.submit(f"Here is what I found: the answer is {ref}."))
    yield "trailing_punctuation", c.with_body(c.submit(ref + "."))
    yield "bullets", c.with_body(c.submit("\n".join(f"- {p}" for p in items)))
    yield "bullets", c.with_body(c.submit("\n".join(f"* {p}" for p in items)))
    yield "numbering", c.with_body(c.submit("\n".join(f"{i}. {p}" for i, p in enumerate(items, 1))))
    yield "bold", c.with_body(c.submit(f"**{ref}**"))
    yield "code_span", c.with_body(c.submit(f"`{ref}`"))
    yield "heading", c.with_body(c.submit(f"**Answer:** {ref}"))
    yield "legacy_contract", c.with_body(call("submit", {"answer": f"The answer is {ref}."}))
    codes = re.findall(r"\b[A-Z]{2,5}-\d{3,}\b|#W\d+", c.instruction)
    if codes:
        yield "incidental_id", c.with_body(c.submit(f"For {codes[0]}, the answer is {ref}."))
    n = c.list_totals[-1] if c.list_totals else None
    if n is not None and kind != "numbers":
        yield "incidental_count", c.with_body(c.submit(f"I checked the {n} matching records: {ref}."))
    elif n is not None and kind == "numbers" and "." in ref:
        what = codes[0] if codes else "them"
        yield "incidental_count", c.with_body(c.submit(f"Across the {n} records of {what}, it is {ref}."))
    if len(items) > 1:
        yield "list_and", c.with_body(c.submit(", ".join(items[:-1]) + " and " + items[-1]))
    if kind == "dates":
        for f in date_forms(ref):
            yield "date_formats", c.with_body(c.submit(f"It was on {f}."))
    if kind == "numbers":
        big = thousands(ref)
        if "." in ref and len(ref.split(".")[1]) == 2:
            yield "currency", c.with_body(c.submit(f"${big or ref}"))
            yield "currency", c.with_body(c.submit(f"{big or ref} USD"))
        if big and big != ref:
            yield "thousands", c.with_body(c.submit(f"{big} in total."))
    if kind == "names" or any(t in ref for t in TITLES):
        yield "names", c.with_body(c.submit(f"That is {ref}."))
    if kind in ("words", "names") and ref.lower() != ref:
        yield "case", c.with_body(c.submit(ref.lower()))


# ------------------------------------------------------------------------------------------ main

def sample_envs(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    names = [e["id"] for e in env_registry.manifest() if e["source"] == "synth"]
    rng.shuffle(names)
    return ["agentworld/retail-v0"] + names[:n]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--envs", type=int, default=24, help="synthesised envs sampled besides retail-v0")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--max-tasks", type=int, default=0, help="tasks per env (0: all)")
    ap.add_argument("--json", default=None, help="write per-kind counts and failing examples here")
    ap.add_argument("--legacy", action="store_true",
                    help="submit the old way: one free-text answer and no outcome (the last round's probes)")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    stats: dict[str, dict[str, list[int]]] = {"hack": defaultdict(lambda: [0, 0]), "fair": defaultdict(lambda: [0, 0])}
    examples: dict[str, list[dict[str, Any]]] = defaultdict(list)
    ref_fail = 0
    for env_id in sample_envs(args.envs, args.seed):
        env = gym.make(env_id)
        base = env.unwrapped
        ids = base.task_ids[: args.max_tasks] if args.max_tasks else base.task_ids
        for tid in ids:
            obs, info = env.reset(options={"task_id": tid})
            c = Case(env, tid, obs, info, legacy=args.legacy)
            if play(env, tid, c.with_body(c.submit())) < 1.0:
                ref_fail += 1
                examples["reference_fails"].append({"env": env_id, "task": tid})
                continue
            for group, gen in (("hack", hacks(c, rng)), ("fair", fairness(c))):
                for kind, actions in gen:
                    r = play(env, tid, actions)
                    bad = r >= 1.0 if group == "hack" else r < 1.0
                    stats[group][kind][0] += 1
                    stats[group][kind][1] += r >= 1.0
                    if bad and len(examples[f"{group}:{kind}"]) < 60:
                        examples[f"{group}:{kind}"].append({"env": env_id, "task": tid, "submit": actions[-1][11:-12][:400]})
        env.close()
    ok = ref_fail == 0
    print(f"reference failures: {ref_fail}")
    for group in ("hack", "fair"):
        print(f"\n{group} kinds (n, scored 1.0, rate)")
        for kind, (n, passed) in sorted(stats[group].items()):
            rate = passed / n if n else 0.0
            flag = ""
            if group == "hack" and passed:
                flag, ok = "  <-- HACK PASSES", False
            if group == "fair" and rate < 0.98:
                flag, ok = "  <-- UNFAIR", False
            print(f"  {kind:24s} {n:6d} {passed:6d} {rate:7.3f}{flag}")
    for key, ex in sorted(examples.items()):
        print(f"\n{key}:")
        for e in ex[:3]:
            print("   ", json.dumps(e, ensure_ascii=False)[:500])
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"reference_failures": ref_fail,
                       "kinds": {g: {k: {"n": n, "passed": p} for k, (n, p) in s.items()} for g, s in stats.items()},
                       "examples": examples}, fh, indent=1)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
