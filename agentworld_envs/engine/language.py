"""English for generated text: verb phrases, participles and how to ask about a column.

Shared by synthesis (tool descriptions, policy sentences), task generation (instructions) and the
linter (which flags the phrasings these helpers exist to avoid), so it imports nothing.
"""

from __future__ import annotations

import re


#: How multi-word workflow verbs take their object ("start maintenance on the logger", not
#: "start maintenance the logger"); ``{x}`` is the object. One-word verbs are "<verb> {x}".
VERB_PHRASES = {
    "bring_online": "bring {x} online", "check_in": "check in {x}", "flag_exception": "flag an exception on {x}",
    "give_notice": "give notice on {x}", "make_offer": "make an offer for {x}", "pick_up": "pick up {x}",
    "record_partial_payment": "record a partial payment on {x}", "request_changes": "request changes on {x}",
    "request_info": "request more information on {x}", "request_review": "request a review of {x}",
    "return_to_draft": "return {x} to draft", "return_to_sender": "return {x} to the sender",
    "send_back": "send {x} back", "set_pending": "set {x} back to pending", "start_maintenance": "start maintenance on {x}",
    "start_review": "start the review of {x}", "submit_for_review": "submit {x} for review",
    "mark_delivered": "mark {x} as delivered", "mark_failed": "mark {x} as failed", "mark_no_show": "mark {x} as a no-show",
    "mark_offline": "mark {x} as offline", "mark_overdue": "mark {x} as overdue", "mark_paid": "mark {x} as paid",
    "mark_passed": "mark {x} as passed", "mark_past_due": "mark {x} as past due",
}


def verb_phrase(verb: str, obj: str) -> str:
    """The imperative for a workflow verb applied to ``obj`` ("mark_paid" → "mark the invoice as paid")."""
    if verb in VERB_PHRASES:
        return VERB_PHRASES[verb].format(x=obj)
    if verb.startswith("mark_"):
        return f"mark {obj} as {verb[5:].replace('_', ' ')}"
    head, _, rest = verb.partition("_")
    return f"{head} {obj} {rest.replace('_', ' ')}".strip() if rest else f"{verb} {obj}"


_IRREGULAR = {"send": "sent", "hold": "held", "pay": "paid", "give": "given", "make": "made", "bring": "brought",
              "set": "set", "put": "put", "run": "run", "freeze": "frozen", "begin": "begun", "take": "taken",
              "withdraw": "withdrawn", "draw": "drawn", "write": "written", "choose": "chosen", "undo": "undone",
              "redo": "redone", "rewrite": "rewritten", "sell": "sold", "lend": "lent", "spend": "spent"}


#: Simple past forms that differ from the participle (give: gave / given).
_SIMPLE_PAST = {"give": "gave", "freeze": "froze", "begin": "began", "take": "took", "withdraw": "withdrew",
                "draw": "drew", "write": "wrote", "choose": "chose", "undo": "undid", "redo": "redid",
                "rewrite": "rewrote", "run": "ran"}


def claim_forms(verb: str) -> list[str]:
    """Every past form a text may use to say ``verb`` (one word) was done: the participle, the simple
    past where it differs ("gave", "given") and the regular form a learner or a policy would write
    ("gived"). A claim read only in the participle is one irregular verb away from being missed."""
    head = verb.split()[0] if verb.split() else verb
    regular = head + "d" if head.endswith("e") else head + "ed"
    return list(dict.fromkeys(f for f in (participle(head).split()[0], _SIMPLE_PAST.get(head), regular) if f))


#: The irregular participles and the verb each belongs to ("given" → "give").
IRREGULAR_BASE = {p: v for v, p in _IRREGULAR.items() if p != v}


def participle(verb: str) -> str:
    """``cancel`` → ``cancelled``, ``pick up`` → ``picked up``, ``mark delivered`` → ``marked delivered``."""
    head, _, rest = verb.partition(" ")
    if head in _IRREGULAR:
        word = _IRREGULAR[head]
    elif head.endswith("e"):
        word = head + "d"
    elif head.endswith("y") and head[-2:-1] not in "aeiou":
        word = head[:-1] + "ied"
    elif head in ("cancel", "refund") or not head:
        word = head + ("led" if head == "cancel" else "ed")
    elif len(head) >= 3 and head[-1] in "bdgmnpt" and head[-2] in "aeiou" and head[-3] not in "aeiou" \
            and head not in ("open", "reopen", "deepen", "listen", "visit", "edit", "limit", "audit", "credit", "submit"):
        word = head + head[-1] + "ed"
    else:
        word = head + "ed"
    if head == "submit":
        word = "submitted"
    return f"{word} {rest}".strip()


_BASE_VERBS = {"starts": "start", "ends": "end", "departs": "depart", "opens": "open", "closes": "close",
               "expires": "expire", "arrives": "arrive", "begins": "begin"}


def words(name: str) -> str:
    return name.replace("_", " ")


def field_question(column: str, desc: str, variant: int = 0) -> str:
    """Ask for one column of a record the way a person would.

    ``placed_at`` → "When was the order ORD-1 placed?"; ``starts_at`` → "When does … start?";
    ``due_date`` → "What is the due date of …?"; ``is_vip`` → "Is … VIP?"; other columns →
    "What is the <column words> of …?" (three phrasings, by ``variant``).
    """
    if re.search(r"_(by|until|from|due)$", column):
        return f"What is the {words(column)} date of {desc}?"
    m = re.fullmatch(r"(.+?)_(at|on|date|time)", column)
    if m:
        stem = m.group(1)
        if stem.endswith("ed") and "_" not in stem:
            return f"When was {desc} {stem}?"
        if stem in _BASE_VERBS:
            return f"When does {desc} {_BASE_VERBS[stem]}?"
        noun = f"{words(stem)} {'date' if m.group(2) in ('on', 'date') else 'time'}"
        return f"What is the {noun} of {desc}?"
    if column.startswith(("is_", "has_")):
        return f"{'Is' if column.startswith('is_') else 'Does'} {desc} {words(column[3:] if column.startswith('is_') else 'have ' + column[4:])}?"
    w = words(column)
    return [f"What is the {w} of {desc}?", f"Can you tell me the {w} recorded for {desc}?",
            f"I need the {w} of {desc}."][variant % 3]


def set_flag_phrase(column: str, value: bool, desc: str) -> str:
    """An instruction to set a yes/no column: "Mark … as VIP" / "Mark … as not VIP"."""
    if column.startswith("is_"):
        return f"Mark {desc} as {'' if value else 'not '}{words(column[3:])}."
    if column.startswith("has_"):
        return f"Record that {desc} {'has' if value else 'does not have'} {words(column[4:])}."
    return f"Turn {'on' if value else 'off'} {words(column)} for {desc}."


def date_noun(column: str) -> str:
    """A date column as the object of "before/within … of": "its start time", "the day it was placed"."""
    m = re.fullmatch(r"(.+?)_(at|on|date|time)", column)
    if not m:
        return f"its {words(column)}"
    stem = m.group(1)
    if stem.endswith("ed") and "_" not in stem:
        return f"the day it was {stem}"
    stem = _BASE_VERBS.get(stem, stem)
    return f"its {words(stem)} {'date' if m.group(2) in ('on', 'date') else 'time'}"


def indefinite(noun: str) -> str:
    """ "an order", "a user account", "a one-off fee", "an hour"."""
    low = noun.lower()
    vowel_sound = (low[:1] in "aeiou" and not low.startswith(("uni", "use", "usu", "uti", "eu", "one", "ure"))) \
        or low.startswith(("hour", "honest", "honor", "heir"))
    return f"{'an' if vowel_sound else 'a'} {noun}"


def number(value: float) -> str:
    """A limit as people write it: 1,300,000 (never 1.3e+06), 24, 0.5."""
    if float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:,.2f}".rstrip("0").rstrip(".")


def flag_words(column: str, value: bool) -> str:
    """A yes/no field as a phrase in a list of fields: "taxable" / "not taxable", "with parking"."""
    if column.startswith("is_"):
        return f"{'' if value else 'not '}{words(column[3:])}"
    if column.startswith("has_"):
        return f"{'with' if value else 'without'} {words(column[4:])}"
    if column.endswith("_enabled"):
        return f"{words(column[:-8])} {'enabled' if value else 'disabled'}"
    return f"{words(column)}: {'yes' if value else 'no'}"


_IRREGULAR_PLURALS = {"people": "person", "children": "child", "series": "series", "staff": "staff",
                      "analyses": "analysis", "criteria": "criterion", "data": "data", "statuses": "status",
                      "buses": "bus", "quizzes": "quiz", "diagnoses": "diagnosis", "theses": "thesis"}


def singular(table: str) -> str:
    """A table's name for one of its records, in words: ``lab_analyses`` → "lab analysis"."""
    head, _, last = table.rpartition("_")
    if last in _IRREGULAR_PLURALS:
        one = _IRREGULAR_PLURALS[last]
    elif last.endswith("ies") and len(last) > 4:
        one = last[:-3] + "y"
    elif last.endswith(("sses", "shes", "ches", "xes", "zes")):
        one = last[:-2]
    elif last.endswith("s") and not last.endswith("ss"):
        one = last[:-1]
    else:
        one = last
    return words(f"{head}_{one}" if head else one)


def value_words(value: object) -> str:
    """An enum value in words: "treatment_a" → "treatment A", "out_for_delivery" → "out for delivery"."""
    return " ".join(w.upper() if len(w) == 1 and w.isalpha() else w for w in words(str(value)).split(" "))


def field_value(column: str, value: object) -> str:
    """A column and its value as a phrase: "tier 1" (not "tier tier 1"), "priority high"."""
    c, v = words(column), value_words(value)
    return v if v.split(" ")[0] == c.split(" ")[-1] else f"{c} {v}"


def in_state(state: str, noun: str) -> str:
    """Records in a status: "pending orders", but "deliveries in status out for delivery"."""
    s = words(state)
    return f"{noun} in status {s}" if s.split(" ")[-1] == noun.split(" ")[0] else f"{s} {noun}"


def average_of(column: str) -> str:
    w = words(column)
    return w if w.startswith(("average", "avg", "mean")) else f"average {w}"


#: Number words a policy sentence may state a figure with ("up to eight guests").
NUMBER_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
                "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16,
                "eighteen": 18, "twenty": 20, "thirty": 30, "forty": 40, "forty-five": 45, "fifty": 50, "sixty": 60,
                "seventy": 70, "eighty": 80, "ninety": 90, "hundred": 100, "thousand": 1000, "dozen": 12,
                "half": 0.5, "twice": 2, "once": 1, "single": 1, "double": 2, "triple": 3}
_NUMBER_WORD = re.compile(r"\b(" + "|".join(sorted(NUMBER_WORDS, key=len, reverse=True)) + r")\b", re.I)
_FIGURE = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?")
_DATE_OR_TIME = re.compile(r"\d{4}-\d\d-\d\d(?:T\d\d:\d\d(?::\d\d)?Z?)?|\b\d{1,2}:\d\d\b")


def figures(text: str) -> list[float]:
    """Every number a sentence states, in digits or in words ("eight", "48", "1,500", "two days"),
    dates and clock times left out (they are the world's clock, not a business figure)."""
    text = _DATE_OR_TIME.sub(" ", text)
    out = [float(f.replace(",", "")) for f in _FIGURE.findall(text) if f.replace(",", "").replace(".", "").isdigit()]
    out += [float(NUMBER_WORDS[w.lower()]) for w in _NUMBER_WORD.findall(text)]
    return out


def sentences(text: str) -> list[str]:
    """A paragraph split into sentences (on '.', '!' or '?' followed by a capital)."""
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])", text) if s.strip()]
