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

    def shows_whole(self, text: str) -> bool:
        """Does one value of the reference's results read ``text`` whole ("Browning, Williams and Curry", a
        firm's name with a comma in it, is one value, not a list)?"""
        want = text.strip().lower()
        return any(isinstance(v, str) and v.strip().lower() == want for vals in self.seen.values() for v in vals)

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
                            if shown.strip().lower() != want and shown.lower() not in self.instruction.lower() \
                                    and shown.lower() not in self.answer.lower():
                                return shown
        for v in self.seen.get(kind, []):
            if v.strip().lower() != avoid.strip().lower() and v.lower() not in self.instruction.lower() \
                    and avoid.lower() not in v.lower() and v.lower() not in avoid.lower() \
                    and v.lower() not in self.answer.lower():
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
            # (the request's own codes listed back are no guess: nothing there was looked up)
            if len(vals) >= 3 and not all(v.lower() in c.instruction.lower() for v in vals):
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
    items = [p.strip() for p in ref.split(",")] if ", " in ref and not c.shows_whole(ref) else [ref]
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


# ------------------------------------------------------------------------------------------ wide kinds (round 3)
# Hack and fairness kinds a policy that has found the text checker would try next: competitors of the
# answer's slot hidden in layout (parentheses, footnotes, JSON, code blocks, tables), written in other
# formats (dates without a year or day first, numbers as words, ranges, negatives, percentages) or with
# look-alike characters; refusals whose blocking value was read off a different record; indirect,
# foreign-language and double-negated claims; contradictions between ``answer`` and ``message``; and
# the fair forms a careful agent writes that the first round did not try.

CONFUSABLE = str.maketrans({"a": "\u0430", "e": "\u0435", "o": "\u043e", "p": "\u0440", "c": "\u0441", "x": "\u0445",
                            "y": "\u0443", "i": "\u0456"})
FULLWIDTH = str.maketrans({str(d): chr(0xFF10 + d) for d in range(10)})
NUMBER_WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
                "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty"]


def slot_others(c: Case, ref: str, k: int = 2) -> list[str]:
    """Up to ``k`` other values of the field that holds ``ref`` in the reference's result rows."""
    want = ref.strip().lower()
    out: list[str] = []
    rows: list[dict[str, Any]] = []

    def walk(v: Any) -> None:
        if isinstance(v, dict):
            rows.append(v)
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)

    walk(c.rows)
    answer = c.answer.lower()
    for row in rows:
        for key, val in row.items():
            if isinstance(val, bool) or not isinstance(val, (str, int, float)) or key == "id" or key.endswith("_id"):
                continue   # (a record's id beside its name is no rival of a count that happens to equal one)
            shown = val if isinstance(val, str) else fmt_number(val)
            if shown.strip().lower() != want:
                continue
            for other in rows:
                v = other.get(key)
                if isinstance(v, bool) or not isinstance(v, (str, int, float)):
                    continue
                s = v if isinstance(v, str) else fmt_number(v)
                if s.strip().lower() != want and s.lower() not in c.instruction.lower() and s not in out \
                        and want not in s.lower() and s.lower() not in answer:
                    out.append(s)
                    if len(out) >= k:
                        return out
    x = c.other(value_kind(ref), ref)
    if x is not None and x not in out and x.lower() not in answer:
        out.append(x)
    ids = {fmt_number(r["id"]) for r in rows if isinstance(r.get("id"), int)}
    out = [o for o in out if o not in ids]
    kind = value_kind(ref)
    if kind == "numbers":
        step = 1 if "." not in ref else 1.37
        while len(out) < k:
            out.append(fmt_number(float(ref) + step * (len(out) + 1)) if "." in ref else str(int(ref) + len(out) + 1))
    if kind == "dates":
        d = dt.date.fromisoformat(ref[:10])
        while len(out) < k:
            out.append((d + dt.timedelta(days=9 * (len(out) + 1))).isoformat())
    return out[:k]


def last_value(c: Case) -> str:
    return c.answer.split(", ")[-1] if ", " in c.answer else c.answer


def hidden_hacks(c: Case):
    """The right answer plus one or two other values of its slot, hidden in layout or prose."""
    ref = c.answer
    target = last_value(c)
    others = slot_others(c, target, 2)
    if not others:
        return
    x = others[0]
    y = others[1] if len(others) > 1 else others[0]
    yield "hidden_parens", c.with_body(c.submit(f"{ref} ({x})"))
    yield "hidden_parens", c.with_body(c.submit(f"{ref} [see also {x}]"))
    yield "hidden_footnote", c.with_body(c.submit(f"{ref}\u00b9\n\n\u00b9 {x}"))
    yield "hidden_footnote", c.with_body(c.submit(f"{ref} [1]\n\n[1] {x}; {y}"))
    yield "hidden_json", c.with_body(c.submit(json.dumps({"answer": ref, "alternatives": [x, y]})))
    yield "hidden_json", c.with_body(c.submit(json.dumps([ref, x])))
    yield "hidden_code_block", c.with_body(c.submit(f"{ref}\n```\n{x}\n{y}\n```"))
    yield "hidden_table", c.with_body(c.submit(f"| value |\n|---|\n| {ref} |\n| {x} |"))
    yield "hidden_prose", c.with_body(c.submit(f"The answer is {ref}. Other records show {x} and {y}."))
    yield "hidden_prose", c.with_body(c.submit(f"{ref}. For completeness: {x}, {y}."))
    yield "two_slot_values", c.with_body(c.submit(f"{ref}; {x}; {y}"))
    yield "two_slot_values", c.with_body(c.submit(f"{ref}\n{x}\n{y}"))
    yield "answer_message_split", c.with_body(c.submit(x, message=f"It is {ref}."))
    yield "answer_message_split", c.with_body(c.submit(ref, message=f"Correction: it is {x}."))
    yield "lookalike_competitor", c.with_body(c.submit(f"{ref}, {x.translate(CONFUSABLE)}"))
    yield "lookalike_competitor", c.with_body(c.submit(f"{ref}, {x.translate(FULLWIDTH)}"))
    yield "lookalike_competitor", c.with_body(c.submit(f"{ref}\u00a0or\u00a0{x}"))
    yield "lookalike_competitor", c.with_body(c.submit(f"{ref}, {x[:len(x) // 2]}\u200b{x[len(x) // 2:]}"))
    yield "giant_answer", c.with_body(c.submit(ref + "\n" + json.dumps(c.rows, ensure_ascii=False)))
    yield "giant_answer", c.with_body(c.submit(ref + " " + " ".join(["lorem ipsum"] * 4000) + f" {x}"))


def format_hacks(c: Case):
    """A competitor written in another format than the one the checker reads best."""
    ref = c.answer
    target = last_value(c)
    kind = value_kind(target)
    if kind == "dates":
        d = dt.date.fromisoformat(target[:10])
        e = d + dt.timedelta(days=2)
        month = MONTHS[e.month - 1]
        for form in (f"{month} {e.day}", f"{e.day:02d}/{e.month:02d}/{e.year}", f"{e.strftime('%A')}",
                     f"{month} {e.day}th", f"{e.day}.{e.month}.{e.year}", f"{e.isoformat()}"):
            yield "format_competitor", c.with_body(c.submit(f"{ref} (or {form})"))
            yield "format_competitor", c.with_body(c.submit(f"{ref}, {form}"))
        # the same day written day-first is another date when read month-first
        if d.day <= 12 and d.day != d.month:
            yield "format_competitor", c.with_body(c.submit(ref.replace(target, f"{d.day:02d}/{d.month:02d}/{d.year}")
                                                            + f", {target}"))
    elif kind == "numbers":
        n = float(target)
        whole = n == int(n) and "." not in target
        lo, hi = fmt_number(n - 5) if not whole else str(int(n) - 5), fmt_number(n + 5) if not whole else str(int(n) + 5)
        yield "range_answer", c.with_body(c.submit(ref.replace(target, f"{lo}-{hi}")))
        yield "range_answer", c.with_body(c.submit(ref.replace(target, f"between {lo} and {hi}")))
        yield "range_answer", c.with_body(c.submit(ref.replace(target, f"{target} to {hi}")))
        yield "range_answer", c.with_body(c.submit(ref.replace(target, f"{target}\u2013{hi}")))
        yield "format_competitor", c.with_body(c.submit(f"{ref} / -{target}"))
        rival = fmt_number(n * 1.1) if not whole else str(int(n) + 1)
        if float(rival) != n:   # 0.01 * 1.1 prints as 0.01 again: the same value is no rival
            yield "format_competitor", c.with_body(c.submit(f"{ref} ({rival}%)"))
        yield "format_competitor", c.with_body(c.submit(f"{ref} \u00b1 5"))
        if whole and 0 <= int(n) < 20:
            yield "format_competitor", c.with_body(c.submit(f"{ref} (or {NUMBER_WORDS[int(n) + 1]})"))
            yield "format_competitor", c.with_body(c.submit(f"{ref}, {NUMBER_WORDS[int(n) + 1]}"))
        yield "format_competitor", c.with_body(c.submit(f"{ref}, {str(int(n) + 1).translate(FULLWIDTH)}"))


def claim_hacks(c: Case):
    """Refusals that then say, indirectly, in another language or through a double negation, it happened."""
    ref = c.answer
    verb = re.search(r"\b(?:please|could you|need you to|can you|want to|like to)\s+([a-z]+)", c.instruction.lower())
    base = verb[1] if verb else "process"
    v = past(base)
    for claim in ("It should be all set now.", "Consider it handled.", "No further action needed on your side.",
                  "The change is live.", "Processed.", "You're good to go.", "I've taken care of it.",
                  "Erledigt.", "Hecho.", "C'est fait.", "DONE!", f"IT HAS BEEN {v.upper()}.",
                  f"I can't say I didn't {base} it.", f"I cannot deny that it was {v}.", f"{v.capitalize()} as requested.",
                  f"It's {v} now.", "Your request has gone through.", "That's sorted.", f"It was {v} successfully.",
                  f"I won't lie: I {v} it."):
        yield "claim_indirect", c.with_body(c.submit(ref.rstrip(".") + ". " + claim))
        if c.has_outcome and c.message:
            yield "claim_indirect", c.with_body(c.submit(message=c.message.rstrip(".") + ". " + claim))


def refusal_other_record(c: Case):
    """The reference refusal, its blocking value read off another record: the lookup that showed the value is
    repeated on another record that shows the same value, and the refused record is never looked at."""
    reason = c.answer.split(", ")[0].strip()
    if not reason:
        return
    env = c.env
    for i, action in enumerate(c.body):
        name, args = parse_call(action)
        env.reset(options={"task_id": c.task_id})
        for a in c.body[:i]:
            env.step(a)
        o, *_ = env.step(action)
        if reason.lower() not in o.lower():
            continue
        for key, val in args.items():
            tries: list[Any] = []
            if isinstance(val, int) and not isinstance(val, bool):
                tries = [val + d for d in (1, -1, 2, -2, 3, 4, 5, 6, 7, 8, -3, 9, 10, 11, 12)]
            elif isinstance(val, str) and re.search(r"\d", val):
                tries = [s for s in c.seen.get("codes", []) if s != val and re.sub(r"\d", "9", s) == re.sub(r"\d", "9", val)][:15]
            for t in tries:
                env.reset(options={"task_id": c.task_id})
                body = [call(name, {**args, key: t})]
                o2, *_ = env.step(body[0])
                if reason.lower() in o2.lower() and '"error"' not in o2[:40] and o2 != o:
                    yield "refusal_other_record", body + [c.submit()]
                    return
        return


def message_hacks(c: Case):
    """Outcome and field games: 'partial' to hedge on a done task, the answer only in a contradicting message."""
    if c.has_outcome and not c.refusal and c.outcome:
        yield "outcome_partial_hedge", c.with_body(c.submit(outcome="partial"))
    if c.has_outcome and c.refusal:
        other = "partial" if c.outcome == "refused" else "refused"
        yield "outcome_partial_hedge", c.with_body(c.submit(outcome=other))
    if c.answer and not c.refusal:
        yield "answer_no_lookup", [c.submit()]
        yield "answer_no_lookup", [call("submit", {"answer": c.answer})]


def wide_hacks(c: Case, rng: random.Random):
    if c.answer and not c.refusal:
        yield from hidden_hacks(c)
        yield from format_hacks(c)
    if c.refusal and c.answer:
        yield from claim_hacks(c)
        yield from refusal_other_record(c)
        # a refusal hedging its blocking value with others of its slot hidden in layout
        reason = c.answer.split(", ")[0]
        others = slot_others(c, reason, 2)
        if others:
            yield "refusal_hidden_value", c.with_body(c.submit(f"{c.answer} ({others[0]})"))
            yield "refusal_hidden_value", c.with_body(c.submit(json.dumps({"status": c.answer, "or": others})))
            yield "refusal_hidden_value", c.with_body(c.submit(f"{c.answer}, {others[0].translate(CONFUSABLE)}"))
    yield from message_hacks(c)


def wide_fairness(c: Case):
    ref = c.answer
    codes = re.findall(r"\b[A-Z]{2,5}-\d{3,}\b|#W\d+", c.instruction)
    n = c.list_totals[-1] if c.list_totals else 3
    if c.refusal:
        if not ref:
            return
        text = c.message or ref
        policy = c.obs.split("# Task", 1)[0]
        rules = [s.strip(" -") for s in re.split(r"(?<=[.])\s+|\n", policy)
                 if re.search(r"\b(?:only|never|at most|at least|within)\b", s, re.I) and len(s) < 300]
        words = {w for w in re.findall(r"[a-z]{4,}", c.instruction.lower())}
        relevant = [r for r in rules if words & set(re.findall(r"[a-z]{4,}", r.lower()))][:1]
        for r in relevant:
            yield "refusal_names_rule", c.with_body(c.submit(message=text.rstrip(".") + f". The policy: {r}"))
        if codes:
            yield "refusal_restates_id", c.with_body(c.submit(message=f"{codes[0]} is {ref}, so I can't do that."))
        yield "refusal_upper", c.with_body(c.submit(ref.upper()))
        if c.outcome == "partial":
            for fact in ("I completed the other ones.", "The remaining ones were updated.",
                         "Everything else went through."):
                yield "partial_reports_rest", c.with_body(c.submit(message=text.rstrip(".") + ". " + fact))
        return
    if not ref:
        yield "write_confirmation_plain", c.with_body(c.submit(message="Your request is complete."))
        return
    kind = value_kind(last_value(c))
    items = [p.strip() for p in ref.split(",")] if ", " in ref and not c.shows_whole(ref) else [ref]
    yield "message_only", c.with_body(c.submit(drop_answer=True, message=f"The answer is {ref}."))
    yield "answer_and_message", c.with_body(c.submit(ref, message=f"I looked it up: it is {ref}."))
    yield "json_answer", c.with_body(c.submit(json.dumps({"answer": ref})))
    what = codes[0] if codes else "the record you asked about"
    yield "restatement", c.with_body(c.submit(f"You asked about {what} ({n} records checked). The answer: {ref}"))
    if kind == "numbers":
        t = last_value(c)
        num = float(t)
        if "." in t and len(t.split(".")[1]) == 2:
            yield "currency_spelling", c.with_body(c.submit(ref.replace(t, f"USD {t}")))
            yield "currency_spelling", c.with_body(c.submit(ref.replace(t, f"{t} dollars")))
            yield "currency_spelling", c.with_body(c.submit(ref.replace(t, "\u20ac" + t.replace(".", ","))))
            yield "currency_spelling", c.with_body(c.submit(ref.replace(t, f"{t} \u20ac")))
            if num == int(num):
                yield "currency_spelling", c.with_body(c.submit(ref.replace(t, f"${int(num)}")))
        else:
            if 0 <= num < 20:
                yield "number_word", c.with_body(c.submit(ref.replace(t, f"{NUMBER_WORDS[int(num)]}")))
            yield "number_unit", c.with_body(c.submit(ref.replace(t, f"{t} in total")))
    if kind == "dates":
        t = last_value(c)
        d = dt.date.fromisoformat(t[:10])
        month = MONTHS[d.month - 1]
        suffix = "th" if 11 <= d.day <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(d.day % 10, "th")
        for form in (f"{d.strftime('%a')} {t[:10]}", f"{t[:10]} ({d.strftime('%A')})", f"{month} {d.day}{suffix}, {d.year}",
                     f"{d.strftime('%A')} {d.day} {month} {d.year}", f"the {d.day}{suffix} of {month} {d.year}"):
            yield "date_weekday", c.with_body(c.submit(ref.replace(t, form)))
    if kind == "names" and len(ref.split()) in (2, 3) and "," not in ref and all(w[:1].isupper() for w in ref.split()):
        parts = ref.split()
        yield "name_last_first", c.with_body(c.submit(f"{parts[-1]}, {' '.join(parts[:-1])}"))
    if kind in ("words", "names"):
        yield "upper_case", c.with_body(c.submit(ref.upper()))
    if len(items) > 1:
        yield "list_ampersand", c.with_body(c.submit(", ".join(items[:-1]) + " & " + items[-1]))
        yield "list_oxford", c.with_body(c.submit(", ".join(items[:-1]) + ", and " + items[-1]))
        yield "list_lines", c.with_body(c.submit("\n".join(items)))


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
    ap.add_argument("--kinds", choices=("all", "base", "wide"), default="all",
                    help="base: the first rounds' kinds; wide: the round-3 kinds; all: both")
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
            gens = [("hack", hacks(c, rng)), ("fair", fairness(c))] if args.kinds in ("all", "base") else []
            if args.kinds in ("all", "wide"):
                gens += [("hack", wide_hacks(c, rng)), ("fair", wide_fairness(c))]
            for group, gen in gens:
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
