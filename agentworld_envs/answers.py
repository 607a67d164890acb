"""One answer matcher for every answer check: values out of free text, and refusals with evidence.

The contract (stated to the agent in the ``submit`` tool and the policy, identical through gym,
MCP and TRL): *write the answer as you would to a person; it passes iff it contains every
expected value and no competing value*. Concretely:

* **Values** (labels, codes, e-mails, phone numbers, statuses) are found modulo case, spacing
  and punctuation: ``511-941-6346`` is ``5119416346``, ``#W1`` is ``W1``. A value counts only as a
  whole run of words (``open`` is not in ``opened``).
* **Numbers** are read with thousands separators, currency symbols, units, percent signs and
  trailing punctuation (``$1,234.50.``, ``28.73 ml``); digits inside codes (``W1234``) and
  dates are not numbers.
* Small whole numbers may be written as words (``three``, ``twenty-one``) when the answer has no digits.
* **Dates** are read in ISO, ``March 5, 2026``, ``5 March 2026`` and ``03/05/2026`` forms.
* **Lists** may be separated by commas, semicolons, "and", newlines or bullets.
* **Competing values** are the task's *candidates* (the other labels, statuses, ids of the
  same kind, read from the golden state) and, for numeric answers, any other number. A
  competing value the instruction itself mentions is not held against the answer (echoing
  the question is not hedging); one inside the span of an expected value is not either.

So prose around a correct value passes, and a dump of every candidate fails.

A **refusal** passes iff it refuses (negation recognised with straight or curly apostrophes:
can't, cannot, could not, unable, not able, not allowed, not possible, won't, …), states the
task's reason (the blocking status, amount, date or rule — any one alternative, every value
of it, no competing value) and does not claim the forbidden action was done (a clause that
names the action's result or "success" without a negation).
"""

from __future__ import annotations

import datetime as dt
import math
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

#: Longest run of words one value may span (a phone number in three groups, a multi-word label).
MAX_RUN = 8
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "\u2032": "'", "`": "'",
                              "\u201c": '"', "\u201d": '"', "\u2013": "-", "\u2014": "-", "\u2212": "-"})
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_MONTHS = {m: i + 1 for i, m in enumerate(
    ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
     "november", "december"])}
_MONTHS.update({m[:3]: i for m, i in list(_MONTHS.items())})
_MONTHS["sept"] = 9
_MON = "|".join(sorted(_MONTHS, key=len, reverse=True))
_DATE_PATTERNS = [
    (re.compile(r"(?<!\d)(\d{4})-(\d{1,2})-(\d{1,2})(?:[T ](\d{1,2}):(\d{2})(?::(\d{2}))?)?(?!\d)"), "ymd"),
    (re.compile(rf"\b({_MON})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b", re.I), "mdy_name"),
    (re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({_MON})\.?,?\s+(\d{{4}})\b", re.I), "dmy_name"),
    (re.compile(r"(?<![\d/])(\d{1,2})/(\d{1,2})/(\d{4})(?![\d/])"), "slash"),
]
# A number: optional sign and currency, digits with optional thousands groups and decimals.
# Not preceded by a letter, digit or code punctuation (W1234, #12, v1.2) and not followed by a
# digit; units and percent signs may follow.
_NUMBER = re.compile(r"(?<![\w#/.\-])(-)?\s?[$€£¥]?\s?((?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?)(?![\d,]\d)(?!\.\d)")
_NEGATION = re.compile(
    r"\b(?:can ?not|can't|cant|could not|couldn't|couldnt|unable|not able|isn't able|am not able|"
    r"not allowed|not permitted|not possible|impossible|isn't possible|is not possible|won't|wont|will not|"
    r"refuse|refused|decline|declined|must decline|do not|don't|did not|didn't|not eligible|ineligible|"
    r"no longer possible|not)\b")
_SUCCESS = re.compile(r"\b(?:success|successful|successfully|succeeded|went through|all set|taken care of)\b")
_TIME = re.compile(r"(?<!\d)\d{1,2}:\d{2}(?::\d{2})?(?!\d)")
# Sentence ends (a period before a space or the end: not the one in 83.00 or a.b@x.com) and contrast words.
_CLAUSE = re.compile(r"[.!?;](?=\s|$)|[;!?\n]|\b(?:but|however|while|although|though|whereas)\b")
# Negation scopes of a value answer are clauses and comma-separated phrases (a comma inside 1,234 is not one).
_SCOPE = re.compile(_CLAUSE.pattern + r"|,(?!\d{3}(?!\d))|[()\[\]]")
_SCOPE_NEGATION = re.compile(r"\b(?:not|never|no|none|neither|nor|without)\b|n't\b")


def fold(text: str) -> str:
    """Case-, width- and apostrophe-insensitive text (curly quotes and dashes made plain)."""
    return unicodedata.normalize("NFKC", text).translate(_APOSTROPHES).casefold()


def as_text(value: Any) -> str:
    import json

    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)


# ------------------------------------------------------------------------------------------ extraction


def words(text: str) -> list[str]:
    """The alphanumeric runs of ``text``, folded (the unit a value must match whole)."""
    return _WORD.findall(fold(text))


def value_key(value: Any) -> str:
    """What a value is matched by: its folded alphanumerics joined (``511-941-6346`` → ``5119416346``)."""
    return "".join(words(as_text(value)))


def runs(tokens: Sequence[str], max_run: int = MAX_RUN) -> dict[str, list[tuple[int, int]]]:
    """Every run of up to ``max_run`` consecutive tokens, joined, with its spans ``(start, end)``."""
    out: dict[str, list[tuple[int, int]]] = {}
    for i in range(len(tokens)):
        joined = ""
        for j in range(i, min(len(tokens), i + max_run)):
            joined += tokens[j]
            out.setdefault(joined, []).append((i, j + 1))
    return out


def parse_number(text: Any) -> float | None:
    """A number written as a person would (``$1,234.50``, ``28.73 ml``, ``83.00.``), or None."""
    if isinstance(text, bool):
        return None
    if isinstance(text, (int, float)):
        return float(text) if math.isfinite(text) else None
    found = numbers(str(text))
    return found[0] if len(found) == 1 else None


def _date_spans(text: str) -> list[tuple[int, int, dt.date | None, str]]:
    spans = []
    for pattern, kind in _DATE_PATTERNS:
        for m in pattern.finditer(text):
            try:
                if kind == "ymd":
                    d = dt.date(int(m[1]), int(m[2]), int(m[3]))
                    time = f"{int(m[4]):02d}:{m[5]}" if m[4] else ""
                elif kind == "mdy_name":
                    d, time = dt.date(int(m[3]), _MONTHS[m[1].lower()], int(m[2])), ""
                elif kind == "dmy_name":
                    d, time = dt.date(int(m[3]), _MONTHS[m[2].lower()], int(m[1])), ""
                else:  # 03/05/2026: month first (US), unless that cannot be a date
                    a, b, y = int(m[1]), int(m[2]), int(m[3])
                    d = dt.date(y, a, b) if a <= 12 else dt.date(y, b, a)
                    time = ""
            except ValueError:
                continue
            spans.append((m.start(), m.end(), d, time))
    return spans


def dates(text: str) -> list[str]:
    """ISO dates (``YYYY-MM-DD``, plus `` HH:MM`` when a time was written) found in ``text``."""
    return [d.isoformat() + (f" {t}" if t else "") for _, _, d, t in _date_spans(fold(text))]


def numbers(text: str) -> list[float]:
    """Numbers in ``text`` outside dates and codes."""
    text = fold(text)
    for start, end, _, _ in _date_spans(text):
        text = text[:start] + " " * (end - start) + text[end:]
    text = _TIME.sub(lambda m: " " * len(m[0]), text)
    out = []
    for m in _NUMBER.finditer(text):
        value = float(m[2].replace(",", ""))
        out.append(-value if m[1] else value)
    return out


_UNITS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
          "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"]
_TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90}
_WORD_NUMBER = re.compile(r"\b(?:(" + "|".join(_TENS) + r")(?:[- ](" + "|".join(_UNITS[1:10]) + r"))?|("
                          + "|".join(_UNITS) + r"))\b")


def word_numbers(text: str) -> list[tuple[float, str]]:
    """Whole numbers below 100 written as words (``three``, ``twenty-one``), with the words."""
    out = []
    for m in _WORD_NUMBER.finditer(fold(text)):
        if m[3]:
            out.append((float(_UNITS.index(m[3])), m[0]))
        else:
            out.append((float(_TENS[m[1]] + (_UNITS.index(m[2]) if m[2] else 0)), m[0]))
    return out


# ------------------------------------------------------------------------------------------ matching


@dataclass(frozen=True)
class Match:
    ok: bool
    detail: str
    missing: tuple[str, ...] = ()
    competing: tuple[str, ...] = ()


@dataclass
class Candidates:
    """The competing values of an answer: other labels of the same kind, and the instruction's words."""

    values: Iterable[Any] = ()
    instruction: str = ""
    _keys: dict[str, str] = field(default_factory=dict, init=False, repr=False)
    longest: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        mentioned = runs(words(self.instruction), 64)
        for v in self.values:
            tokens = words(as_text(v))   # once per value: value_key(v) is exactly "".join of these
            n = len(tokens)
            key = "".join(tokens)
            if key and key not in mentioned:
                self._keys.setdefault(key, as_text(v))
                self.longest = max(self.longest, n)

    def keys(self) -> dict[str, str]:
        return self._keys


def _is_date(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    found = dates(value)
    if len(found) == 1 and len(value.strip()) <= 25:
        return found[0]
    return None


def as_number(value: Any) -> float | None:
    """``value`` as a number if it is one or is written as exactly one (``'$1,234.50'``), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str) and re.fullmatch(r"\s*[-+]?[$€£¥]?\s?[\d,]*\.?\d+\s*", value):
        if re.fullmatch(r"\s*\d{12,}\s*", value):   # a long digit string is a code (a tracking number)
            return None
        return parse_number(value)
    return None


def match_values(answer: Any, expected: Sequence[Any], candidates: Candidates | None = None, *,
                 numeric: bool | None = None, tolerance: float = 0.01, scoped: bool = True) -> Match:
    """Every ``expected`` value is in ``answer`` and no competing value is.

    ``numeric`` forces (True) or forbids (False) reading the values as numbers; by default a
    value that looks like a number is compared as one. ``scoped``: values inside a negated
    phrase neither count as stated nor compete (off for refusals, which negate throughout)."""
    if answer is None or (isinstance(answer, str) and not answer.strip()):
        return Match(False, "no answer submitted")
    text = as_text(answer)
    # Tokens and numbers by negation scope: a competing value the answer negates ("not yet
    # delivered", "42, not 43") is not a hedge; an expected value must be stated, not negated.
    tokens: list[str] = []
    negated: list[bool] = []
    nums: list[float] = []
    negated_nums: list[float] = []
    for scope in _SCOPE.split(fold(text)) if scoped else [fold(text)]:
        neg = scoped and bool(_SCOPE_NEGATION.search(scope))
        scope_tokens = words(scope)
        tokens += scope_tokens
        negated += [neg] * len(scope_tokens)
        (negated_nums if neg else nums).extend(numbers(scope))
    longest = max([len(words(as_text(v))) for v in expected] + [candidates.longest if candidates else 0] + [MAX_RUN])
    spans = runs(tokens, longest)
    instruction = candidates.instruction if candidates else ""
    allowed_nums = numbers(instruction)
    found_dates = set(dates(text))

    def stated(span: tuple[int, int]) -> bool:
        return not all(negated[span[0]:span[1]])

    missing, covered, used_nums = [], [], []
    numeric_answer = bool(numeric)
    for value in expected:
        num = as_number(value) if numeric is not False else None
        if numeric and num is None:
            num = parse_number(value)
        if num is not None:
            if not nums and not negated_nums:
                # No digits at all: read small whole numbers written as words ("three orders"). "one" is
                # too often a pronoun to compete, but any other number word does.
                spelled = word_numbers(text)
                if any(n == num for n, _ in spelled):
                    others = sorted({w for n, w in spelled if n != num and w != "one"})
                    if others:
                        return Match(False, f"answer {text[:80]!r}; also names {', '.join(others[:3])}", (), tuple(others))
                    continue
            hit = [n for n in nums if math.isclose(n, num, rel_tol=0, abs_tol=tolerance)]
            if hit:
                used_nums += hit
                numeric_answer = True
                continue
        day = _is_date(value)
        if day is not None and (day in found_dates or (len(day) == 10 and day in {d[:10] for d in found_dates})):
            continue
        key = value_key(value)
        hits = [sp for sp in spans.get(key, ()) if stated(sp)] if key else []
        if hits:   # also a long digit string written with separators (a phone number)
            covered += hits
            continue
        missing.append(as_text(value))
    competing = []
    expected_keys = {value_key(v) for v in expected}
    if candidates is not None:
        for key, shown in candidates.keys().items():
            if key in expected_keys:
                continue
            for sp in spans.get(key, ()):
                if stated(sp) and not any(cs <= sp[0] and sp[1] <= ce for cs, ce in covered):
                    competing.append(shown)
                    break
    if numeric_answer:
        # Any other number is a competing answer, unless negated, mentioned by the instruction, or part
        # of an expected label (a street number).
        label_nums = {float(t) for v in expected if as_number(v) is None for t in words(as_text(v)) if t.isdigit()}
        competing += [_fmt(n) for n in nums if n not in used_nums and n not in label_nums
                      and not any(math.isclose(n, a, rel_tol=0, abs_tol=1e-9) for a in allowed_nums)]
    ok = not missing and not competing
    detail = f"answer {text[:80]!r}"
    if missing:
        detail += f"; missing {', '.join(m[:40] for m in missing[:3])}"
    if competing:
        detail += f"; also names {', '.join(c[:40] for c in competing[:3])}{' …' if len(competing) > 3 else ''}"
    return Match(ok, detail if not ok else f"answer {text[:80]!r} matches", tuple(missing), tuple(competing))


def _fmt(n: float) -> str:
    return str(int(n)) if n == int(n) else str(n)


def split_list(answer: Any) -> list[str]:
    """Members of a list answer: JSON arrays, or text split on commas, semicolons, "and", newlines, bullets."""
    import json

    if isinstance(answer, list):
        return [as_text(a).strip() for a in answer]
    text = as_text(answer)
    try:
        parsed = json.loads(text)
        if isinstance(parsed, list):
            return [as_text(a).strip() for a in parsed]
    except ValueError:
        pass
    parts = re.split(r"\s*(?:[,;\n]|\band\b|^\s*[-*•]\s*|\s[-*•]\s)\s*", text.strip(), flags=re.M)
    return [p.strip(" .") for p in parts if p and p.strip(" .")]


def match_set(answer: Any, expected: Sequence[Any], candidates: Candidates | None = None) -> Match:
    """Exactly the expected members: each present, and nothing else named."""
    if candidates is not None and candidates.keys():
        return match_values(answer, expected, candidates, numeric=False)
    got = {value_key(m) for m in split_list(answer)}
    want = {value_key(m) for m in expected}
    ok = got == want
    return Match(ok, f"members {sorted(got)[:6]} vs {sorted(want)[:6]}", tuple(sorted(want - got)), tuple(sorted(got - want)))


# ------------------------------------------------------------------------------------------ refusals


def refuses(answer: Any) -> bool:
    """Does the text decline (any negation: can't / can’t / cannot / unable / not able / won't …)?"""
    return bool(_NEGATION.search(fold(as_text(answer))))


def claims(answer: Any, results: Sequence[str], about: Sequence[str] = ()) -> str | None:
    """The first clause that claims the forbidden action happened (names one of ``results`` — or
    "success" — without a negation); with ``about``, only clauses naming one of those count."""
    result_keys = [value_key(r) for r in results if value_key(r)]
    about_keys = [value_key(a) for a in about if value_key(a)]
    for clause in _CLAUSE.split(fold(as_text(answer))):
        tokens = words(clause)
        if not tokens:
            continue
        spans = runs(tokens)
        said = bool(_SUCCESS.search(clause)) or any(k in spans for k in result_keys)
        if not said or _NEGATION.search(clause):
            continue
        if about_keys and not any(k in spans for k in about_keys):
            continue
        return clause.strip()[:80]
    return None


def match_refusal(answer: Any, reasons: Sequence[Sequence[Any]] = (), candidates: Candidates | None = None, *,
                  results: Sequence[str] = (), about: Sequence[str] = ()) -> Match:
    """A refusal with evidence: it declines, gives one of the ``reasons`` (each a list of values that
    must all appear, with no competing candidate), and claims none of ``results``."""
    if answer is None or (isinstance(answer, str) and not answer.strip()):
        return Match(False, "no answer submitted")
    if not refuses(answer):
        return Match(False, f"answer {as_text(answer)[:80]!r} does not decline")
    claim = claims(answer, results, about)
    if claim:
        return Match(False, f"claims the forbidden action happened: {claim!r}")
    if not reasons:
        return Match(True, "declines")
    last = Match(False, "no reason given")
    for alternative in reasons:
        m = match_values(answer, list(alternative), candidates, numeric=None, scoped=False)
        if m.ok:
            return Match(True, f"declines and says why ({', '.join(as_text(v) for v in alternative)[:60]})")
        if len(m.missing) <= len(last.missing) or not last.missing:
            last = m
    return Match(False, "refusal does not give the reason: " + last.detail)
