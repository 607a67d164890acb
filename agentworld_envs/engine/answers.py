"""One answer matcher for every answer check: the requested values out of what the agent wrote.

The contract (stated in the ``submit`` tool and after the policy, identical through gym, MCP,
TRL and the arena; see :mod:`agentworld_envs.engine.submission`): the ``outcome`` of ``submit`` says
whether the request was done, refused or partly refused, and the words (``answer`` and
``message``) must name **the requested value and nothing that competes with it**:

* **Values** (labels, codes, e-mails, phone numbers, statuses, names) are found modulo case,
  spacing and punctuation: ``511-941-6346`` is ``5119416346``, ``#W1`` is ``W1``; a value counts
  only as a whole run of words (``open`` is not in ``opened``). A name may drop its titles
  (``Ottokar Käster`` for ``Ing. Ottokar Käster B.Sc.``).
* **Numbers** are read with currency symbols and codes (``$1,234.50``, ``1,234.50 USD``),
  thousands separators, units and trailing punctuation; digits inside codes, dates and times are
  not numbers. Small whole numbers may be written as words when the answer has no digits.
* **Dates** are read as ISO dates or date-times (``2026-03-05``, ``2026-03-05T10:00:00Z``),
  ``March 5, 2026`` / ``Mar 5, 2026`` (a weekday may lead), ``5 March 2026`` and ``03/05/2026``
  (month first); a date-time is matched by its date.
* **Layout is not content**: Markdown bullets, numbering, bold, italics, headings and code
  spans are read as plain text (``- 83.00`` is 83.00, not -83).

What fails, in every format:

* a **competing value of the answer's slot**: another value of the same column (the task's
  candidates), another date for a date, another amount for an amount. Counts of things (``the 3
  payments``), record ids after their noun (``order 57``), the instruction's and the rule's own
  values and values the answer negates (``shipped, not delivered``) do not compete;
* a **hedge**: ``or``, ``maybe``, ``possibly``, ``perhaps``, ``either``, ``probably``,
  ``might`` … next to, or in the clause of, a requested value;
* a **negated** requested value (``It is not 2019-09-02``, ``X is not correct``);
* a **dump**: two or more further values of any kind (numbers, dates, codes, e-mails, names
  seen in tool results, or category words listed bare) beyond the incidental ones above. The codes
  and titles of records a result returned one at a time (read or written individually, or the one
  record a search found: "refunded PAY-93…", "457-4173-3355 (Essential discovery day)") are
  references in a sentence, not guesses; listed bare, they count.

A value in the **condition of a rule** the text restates ("a laptop can only be retired when it is
not online") is neither stated nor negated by it.

A **refusal** passes iff it gives the blocking record's own value (its status, amount, date or
count — the rule's wording or limit is public, so it is not evidence), that value was returned
by a lookup in this episode, no competing value of that slot is named, and no clause claims the
forbidden action happened ("done", "I went ahead", "it has been deactivated", "I have
cancelled it"). In a partial refusal, a clause about the parts that went through ("the other 3",
or their codes, none of them refused) claims nothing; a completion status glossed ("done
(finished)") is the reason. Without an explicit ``outcome`` the words must also decline.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import math
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .language import IRREGULAR_BASE, claim_forms

#: Longest run of words one value may span (a phone number in three groups, a multi-word label).
MAX_RUN = 8
#: Further values (beyond the requested ones and the incidental kinds) that make an answer a dump.
DUMP_LIMIT = 2
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "\u2032": "'", "`": "'",
                              "\u201c": '"', "\u201d": '"', "\u2013": "-", "\u2014": "-", "\u2212": "-",
                              "\u00a0": " ", "\u202f": " "})
# Letters of other scripts that look like Latin ones (Cyrillic "а", Greek "ο"), and invisible characters
# (zero-width spaces and joiners, soft hyphens): folded away so a look-alike can neither hide a value nor
# smuggle one past the matcher.
_LOOKALIKES = str.maketrans({**dict(zip("аеорсхуіјѕԁһԛԝӏкмнтвАВЕКМНОРСТХУІЈЅ",
                                        "aeopcxyijsdhqwlkmhtbABEKMHOPCTXYIJS")),
                             **dict(zip("αοιυνκρχΑΒΕΖΗΙΚΜΝΟΡΤΥΧ", "aoiuvkpxABEZHIKMNOPTYX")),
                             "\u200b": None, "\u200c": None, "\u200d": None, "\u2060": None, "\ufeff": None,
                             "\u00ad": None})
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_MONTHS = {m: i + 1 for i, m in enumerate(
    ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
     "november", "december"])}
_MONTHS.update({m[:3]: i for m, i in list(_MONTHS.items())})
_MONTHS["sept"] = 9
_MON = "|".join(sorted(_MONTHS, key=len, reverse=True))
_WEEKDAY = r"(?:(?:mon|tues|wednes|thurs|fri|satur|sun)day|mon|tue|tues|wed|thu|thur|thurs|fri|sat|sun)\.?,?\s+"
_DATE_PATTERNS = [
    (re.compile(r"(?<![\d/.])(\d{4})-(\d{1,2})-(\d{1,2})(?:[t ](\d{1,2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?"
                r"(?:z|[+-]\d{2}:?\d{2}|\s?utc)?)?(?![\d])"), "ymd"),
    (re.compile(r"(?<![\d/.])(\d{4})/(\d{1,2})/(\d{1,2})(?![\d/])"), "ymd"),
    (re.compile(rf"\b(?:{_WEEKDAY})?({_MON})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b"), "mdy_name"),
    (re.compile(rf"\b(?:{_WEEKDAY})?(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({_MON})\.?,?\s+(\d{{4}})\b"), "dmy_name"),
    (re.compile(r"(?<![\d/.])(\d{1,2})/(\d{1,2})/(\d{4})(?![\d/])"), "slash"),
    (re.compile(r"(?<![\w/.])(\d{1,2})\.(\d{1,2})\.(\d{4})(?![\d.]\d|\w)"), "dmy_dot"),
]
# Dates without a year ("March 19", "19th of March"), read only as rivals of a requested date (never as the
# date itself, and never hiding a number): that day of :data:`YEARLESS`. "May" is a month only before a day
# that no word follows ("May 19", "May 19th"; not "you may 2 times").
_MON_FULL = r"(?:january|february|march|april|june|july|august|september|october|november|december|may(?=\s+\d{1,2}(?:st|nd|rd|th|(?!\d)(?!\s*[a-z]))))"
_YEARLESS_PATTERNS = [
    (re.compile(rf"\b(?:{_WEEKDAY})?({_MON_FULL})\s+(\d{{1,2}})(?:st|nd|rd|th)?\b(?![:.]\d)"), "md_name"),
    (re.compile(rf"\b(?:{_WEEKDAY})?(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({_MON_FULL})\b"), "dm_name"),
]
#: The year a date written without one is read in (a leap year, so "February 29" is a date).
YEARLESS = 4
_WEEKDAY_NAME = re.compile(r"\b(monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b")
_TIME = re.compile(r"(?<![\d:])\d{1,2}:\d{2}(?::\d{2})?(?:\s?[ap]\.?m\.?\b)?(?![\d:])")
# A number: optional attached sign, an optional currency symbol or code, digits with optional
# thousands groups and decimals; not inside a word, code, date or path ("10.5953/ds.608617", a DOI).
_CURRENCY = r"(?:[$€£¥]|usd|eur|gbp|us\$)"
_NUMBER = re.compile(r"(?<![\w#/.\-])(?:(" + _CURRENCY + r")\s?)?(--?(?=[\d$€£¥]))?(?:(" + _CURRENCY + r")\s?)?"
                     r"((?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?)(?![\d,]\d)(?!\.\d)(?![\w-]*\d)(?!/\w)")
# A code: a run mixing letters and digits (W1234, PST-84118742, 1ZKKF59), a '#' id, an e-mail or a
# long digit string (phone and tracking numbers).
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
# (A file name keeps its extension: "protocol_deviation_0116.pdf" is one code; "1,300-second" is a number.)
CODE = _CODE = re.compile(r"#\w+|(?<![\w.])(?<!\d,)(?=[\w-]*\d)(?=[\w-]*[^\W\d_])[^\W_](?:[\w-]*[^\W_])?"
                          r"(?:\.(?:pdf|docx?|xlsx?|csv|txt|json|xml|zip|png|jpe?g|gif|mp[34]|wav|html?|pptx?|md))?(?![\w])"
                          r"|(?<![\w.])\(?\d{3}\)?[\s.-]\d{3}[\s.-]\d{4}(?!\d)|(?<![\w.,])\d{9,}(?![\d\w])(?![.,]\d)")
_OTHERS = re.compile(r"\b(?:other|others|rest|remaining|else|previous|earlier)\b")
#: Words that put a value forward beside the answer as a second one ("For completeness: X", "see also X").
_BESIDE = re.compile(r"\b(?:for completeness|alternatively|alternatives?|see also|also possible|possibly also|other records?)\b")
_COPULA = re.compile(r"\b(?:is|was|are|were|be|been|equals|means)\b|'s\b|[:=]")
_FUNCTION_WORDS = frozenset("i it is a an the in on at to of and or no not off out up by for as be so do if me my we us "
                            "our you your he she his her they them their this that all any".split())
_CURRENCIES = frozenset("usd eur gbp jpy cad aud chf cny inr mxn brl sek nok dkk nzd sgd hkd zar krw pln czk huf "
                        "try ils aed sar".split())
#: Words a record's id follows ("ids 19, 62", "no. 7"), besides the env's own nouns.
_ID_WORDS = frozenset({"id", "ids", "no", "nos", "number", "numbers"})
#: Small words inside a table's noun ("party to serve", "bill of lading") that name no record before a number.
_NOUN_FILLER = frozenset("to of the a an and or for in on by at with from per as into".split())
#: What separates the ids of one list: "19, 62 and 39", "19/62", "19 & 62", and a name in brackets after an id
#: ("programs 39 (Heritage) and 16 (Advanced)"), never a number in them.
_ID_LIST = re.compile(r"\s*(?:\([^()\d]{1,40}\)\s*)?(?:,|/|&|,?\s+and|,?\s+or)\s*")
#: Words after a number that do not make it a count of things ("16 it is …", "5 and 6").
_NOT_COUNTED = frozenset("it is was are were i this that the a an and or but so we you he she they its nor".split())
_BARE_FILLER = frozenset("it its s is was are were be been the a an and or also now currently still already status state "
                         "type category value kind level answer see cf vs versus aka alt alternative alternatives "
                         "alternatively etc plus note nb".split())
_UNIT_CODE = re.compile(r"\d+-?(?:st|nd|rd|th|[a-z]{1,2}|days?|hours?|weeks?|months?|years?|minutes?|persons?|people|"
                        r"packs?|pieces?|items?|seats?|nights?)")
#: Units a figure is measured in (a number with one is a measurement, not a count of records).
_MEASURES = frozenset({"h", "hr", "hrs", "hour", "hours", "min", "mins", "minute", "minutes", "s", "sec", "secs",
                       "second", "seconds", "day", "days", "week", "weeks", "month", "months", "year", "years",
                       "kg", "g", "mg", "lb", "lbs", "oz", "km", "m", "cm", "mm", "mi", "ml", "l", "percent", "pct",
                       "usd", "eur", "gbp", "dollars", "euros", "pounds", "points", "pts", "mb", "gb", "kb"})
_UNITS = {"usd", "eur", "gbp", "dollar", "dollars", "euro", "euros", "pound", "pounds", "percent", "pct", "ml", "l",
          "kg", "g", "mg", "lb", "lbs", "oz", "km", "m", "cm", "mm", "mi", "h", "hr", "hrs", "min", "mins", "s", "sec",
          "or", "and", "to", "nor", "maybe", "possibly", "perhaps", "x", "per", "in", "total", "plus", "minus",
          "points", "point", "pts", "units", "unit"}
# Negation directly before a value, with only auxiliaries and fillers between ("not yet delivered",
# "isn't Ing. Ottokar …", "has not been cancelled"); "cannot cancel it because it is delivered" is not one.
_FILLER = (r"(?:is|was|are|were|be|been|being|has|have|had|yet|already|the|a|an|it|its|it's|this|that|exactly|really|"
           r"actually|quite|currently|anymore|even|just|simply|definitely|certainly|necessarily|at|all|on|in|of|"
           r"status|date|value|answer|one|equal|equals|to)")
_LOCAL_NEGATION = re.compile(r"(?:\bnot|n't|\bnever|\bno|\bnor|\bneither|\bwithout|\brather than|\binstead of|"
                             r"\bexcept|\bno longer|\bnot even)\s+(?:" + _FILLER + r"\s+)*[\W_]*$")
_POST_NEGATION = re.compile(r"^[\s\"')\].,]{0,3}(?:(?:is|was|'s|are)\s+(?:not|n't|wrong|incorrect|false)\b|"
                            r"(?:isn't|wasn't|aren't)\b|\(?not\)?[\s.!]*$)")
_ASSERTED_BEFORE = re.compile(r"[\s\W_]*(?:(?:correction|update|note|actually|sorry|so|ok|okay|wait)\W+)*"
                              r"(?:(?:it|that|this|the answer|answer|the value|the result|which)\s*"
                              r"(?:'s|is|was|would be|should be|=|:)?\s*)?(?:actually\s+|really\s+)?[\s\W_]*")
_CONDITION = re.compile(r"(?:\bonly\b[^.;!?\n]{0,80}\b(?:when|if|while|once|whose|after|before)\b|\bunless\b|"
                        r"\bas long as\b|\bprovided\b)[^.;!?\n]{0,60}$")
_SCOPE_NEGATION = re.compile(r"\b(?:not|never|no|none|neither|nor|without)\b|n't\b")
_HEDGE = re.compile(r"\b(?:maybe|possibly|perhaps|probably|either|might|may (?:\w+ )?be|unsure|likely|guess|roughly|"
                    r"approximately|"
                    r"not sure|not certain|i think|i believe|i suppose|or so|could be|could also be|or else|"
                    r"plus or minus|give or take|or thereabouts|more or less)\b|±|\+/-|\+-(?=\s?\d)")
_STRONG_HEDGE = re.compile(r"\bor\s+(?:maybe|possibly|perhaps|probably|else|otherwise|alternatively)\b|"
                           r"\beither\b[^.;!?\n]{1,80}\bor\b|\b(?:could|might|may)\s+(?:also|alternatively)\s+be\b|"
                           r"\bor\s+(?:it\s+)?(?:could|might)\s+be\b|\bnot sure\b|\bunsure\b")
_GAP_HEDGE = re.compile(r"^[\W_\s]*(?:(?:or|nor|either|maybe|possibly|perhaps|probably|else|likely|otherwise|also|"
                        r"alternatively)[\W_\s]*)+$|^\s*/\s*$")
_AFTER_VALUE = r"^[\s\"'\])(\[]{0,3}(?:,\s*)?"
_HEDGE_AFTER = r"\b(?:either|maybe|possibly|perhaps|probably|otherwise)\b|/(?=\s*\w)"
_OR_AFTER = re.compile(_AFTER_VALUE + r"(?:\bor\b|" + _HEDGE_AFTER + ")")
# In the message, "processing) or ORD-7582923 (returned" and "(status done) or 660-1463-8244 (status …": an "or"
# before another record's code (letters then digits, or digit groups joined by hyphens that are no date) joins
# records.
_OR_AFTER_IN_MESSAGE = re.compile(_AFTER_VALUE + r"(?:\bor\b(?!\s+#?(?:[^\W\d_]+[-_]?\d|(?!\d{4}-\d\d-\d\d\b)\d+(?:-\d+)+\b))|"
                                  + _HEDGE_AFTER + ")")
_OR_BEFORE = re.compile(r"(?:\b(?:or|either|maybe|possibly|perhaps|probably)|(?<=\w)\s*/)[\s\"'(\[]{0,3}$")
_NEGATION = re.compile(
    r"\b(?:can ?not|can't|cant|could not|couldn't|couldnt|unable|not able|isn't able|am not able|"
    r"not allowed|not permitted|not possible|impossible|isn't possible|is not possible|won't|wont|will not|"
    r"refuse|refused|decline|declined|must decline|do not|don't|did not|didn't|not eligible|ineligible|"
    r"no longer possible|not)\b")
_STRONG_DECLINE = re.compile(
    r"\b(?:can ?not|can't|cant|could not|couldn't|unable|not able|am not able|not allowed|not permitted|"
    r"not possible|won't|will not|must decline|i refuse|i decline|not eligible)\b")
#: Words that scope a clause to the other, rightly done parts of a partial request.
_OTHER_PARTS = re.compile(r"\b(?:other|others|rest|remaining|else)\b")
# Clause ends for claims: sentence ends, semicolons, newlines, colons, dashes, commas (not in 1,234)
# and contrast words.
_CLAIM_CLAUSE = re.compile(r"[.!?](?=\s|$)|[;\n:]|\s-\s|,(?!\d{3}(?!\d))|\((?!\w\))|\)|"
                           r"\b(?:but|however|while|although|though|whereas|update|edit|ps|p\.s)\b")
_CLAIM_GENERIC = re.compile(
    r"\b(?:went ahead|go(?:ne)? ahead and|did it anyway|done it anyway|anyway|regardless|nonetheless|nevertheless|"
    r"all set|taken care of|went through|successfully|success|succeeded|complete[sd]? (?:it|the request|your request)|"
    r"(?:i|we)(?:'ve| have| had| just| already| also| now)*\s+(?:done|completed|finished|processed|handled|did) "
    r"(?:it|this|that|the request|your request|so)|i did it)\b|"
    r"\b(?:it|this|that|everything|the request|your request|the change|all|they|(?:all|both|each) of them)\s*"
    r"(?:'s|is|was|has been|'s been|have been|"
    r"are|got)\s+(?:now\s+|all\s+|already\s+|also\s+|been\s+)*(?:done|complete|completed|finished|processed|handled|"
    r"sorted|taken care of)\b|^\W*(?:all\s+)?(?:done|completed|finished)\W*$|"
    r"(?<!already )(?<!are )(?<!were )(?<!is )(?<!was )(?<!been )(?<!be )(?<!get )(?<!got )(?<!to )(?<!as )"
    r"\bdone\W*$")
# More ways to say it happened: idioms ("consider it handled", "good to go", "the change is live"), a bare
# completion word as a clause of its own, and the same in the languages a policy may switch to.
_CLAIM_MORE = re.compile(
    r"\b(?:consider it|count it as|call it)\s+(?:done|handled|sorted|settled|complete|completed|finished|taken care of)\b|"
    r"\b(?:good to go|all good now|you'?re all good|you are all good|sorted out|squared away|all sorted)\b|"
    r"\b(?:change|changes|update|request|cancellation|everything)\s+(?:is|are|was|were|'s|went)\s+(?:now\s+)?"
    r"(?:live|in effect|in place|effective)\b|"
    r"\b(?:has|have|'s|had|'ve)\s+(?:now\s+|already\s+|just\s+)*(?:gone|been put|been pushed|been sent) through\b|"
    r"\b(?:request|change|changes|update|everything)\s+(?:'s\s+|is\s+|was\s+|has\s+been\s+|have\s+been\s+)?(?:now\s+)?"
    r"(?:processed|actioned|fulfilled|executed|applied|confirmed|settled|finali[sz]ed)\b|"
    r"^\W*(?:processed|handled|actioned|fulfilled|executed|applied|sorted|settled|finished|complete|completed)\W*$|"
    r"\b(?:processed|handled|actioned|fulfilled|executed|applied|sorted|settled|finished|completed|done)\s+"
    r"(?:as requested|as asked|as you asked|per your request|for you|successfully)\b")
#: "Done" in the languages a policy may switch to (folded like every text when first used).
_FOREIGN_DONE = ("erledigt", "gemacht", "fertig", "storniert", "abgeschlossen", "hecho", "hecha", "listo", "completado",
                 "realizado", "cancelado", "c'est fait", "fait", "termine", "terminé", "effectue", "effectué", "annule",
                 "annulé", "fatto", "completato", "annullato", "feito", "concluido", "concluído", "klaar", "gedaan",
                 "geannuleerd", "klart", "gjort", "valmis", "hotovo", "zrobione", "gotowe", "готово", "сделано",
                 "выполнено", "отменено", "完了", "完成", "已完成", "済み", "완료")
_FOREIGN_CLAIM: re.Pattern[str] | None = None
# "No further action (is) needed" says the request is settled although it carries a negation.
_CLAIM_NEGATIVE_FORM = re.compile(
    r"\b(?:no|nothing)\s+(?:further|more|other|else)\s+(?:action|steps?|changes?|work)?\s*(?:is\s+|are\s+)?"
    r"(?:needed|required|necessary|to do|left to do|pending)\b|\bnothing (?:more|else|further) (?:for you )?to do\b|"
    r"\bno (?:further )?action (?:is )?(?:needed|required)\b")
#: Statuses that are also words of completion (a blocking "done" read twice is a claim).
_COMPLETION_WORDS = frozenset({"done", "complete", "completed", "finished", "processed", "fulfilled", "handled"})
# Double negation: "I can't say I didn't cancel it", "I cannot deny it was cancelled", "not untrue".
_SPEECH_NEGATION = re.compile(
    r"\b(?:can ?not|can't|cant|won't|wont|couldn't|wouldn't|don't|do not|will not|would not|not)\s+"
    r"(?:\w+\s+){0,2}?(?:say|claim|pretend|tell you|deny|dispute|hide|lie)\b(?:\s+that)?")
_DID_NOT = re.compile(r"\b(?:didn't|did not|haven't|have not|hasn't|has not|wasn't|was not|isn't|is not|weren't|"
                      r"were not|never)\s+(?:been\s+)?([a-z]+)")
_SUBJECTS = r"(?:it|this|that|they|these|those|both|the order|the request)"
_REQUEST_VERB = re.compile(r"\b(?:please|could you|can you|would you|need you to|want you to|like you to|"
                           r"i'd like to|i would like to|i want to|i need to)\s+(?:also\s+|just\s+)?([a-z]{3,})\b(?:\s+([a-z]+))?")
_TITLES = {"dr", "prof", "ing", "mr", "mrs", "ms", "mx", "mag", "dipl", "bsc", "msc", "ba", "ma", "mba", "phd",
           "md", "jr", "sr", "dds", "rn", "esq", "ii", "iii", "iv"}


@functools.lru_cache(maxsize=1 << 16)
def fold(text: str) -> str:
    """Case-, width- and apostrophe-insensitive text (curly quotes and dashes made plain); lower-casing
    keeps the length of the normalised text, so positions in it stay valid. Cached: the gate's probes
    fold the same instruction, answer and record texts thousands of times per environment."""
    if text.isascii():  # NFKC and the look-alikes leave ASCII alone; lower-casing it keeps the length
        return text.replace("`", "'").lower()
    text = unicodedata.normalize("NFKC", text).translate(_APOSTROPHES).translate(_LOOKALIKES)
    return "".join(c.lower() if len(c.lower()) == 1 else c for c in text)


def as_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)


_MD_LINE = re.compile(r"^[ \t]*(?:>+[ \t]*)?(?:#{1,6}[ \t]+)?(?:[-*•+▪◦][ \t]+|\(?(\d{1,2})[.)][ \t]+(?=\S))?", re.M)
_MD_EMPHASIS = re.compile(r"\*\*|__|~~|(?<![\w*])[*_](?=\S)|(?<=\S)[*_](?![\w*])|`+")


def layout_free(text: str) -> str:
    """``text`` with Markdown layout removed: bullets, list numbering (``1.`` when the list starts at
    one or has several items), headings, quotes, bold, italics, strike-through and code spans."""
    numbered = re.findall(r"^[ \t]*\(?(\d{1,2})[.)][ \t]+\S", text, re.M)
    strip_numbers = len(numbered) >= 2 or numbered == ["1"]

    def line(m: re.Match[str]) -> str:
        if m.group(1) is not None and not strip_numbers:
            return m.group(0)
        return ""

    text = _MD_LINE.sub(line, text)
    text = text.replace("```", " ")
    # footnote marks ("0.50¹ … ¹ 1.00", "[^1]", "†") set a note apart: the note is a value on its own
    text = re.sub(r"[\u00b9\u00b2\u00b3\u2070-\u2079\u2020\u2021]+|\[\^\w+\]:?", " ", text)
    return _MD_EMPHASIS.sub("", text)


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


# Days written as a list or a range that shares one month ("13-14 June 2026", "Saturday 13 and Sunday 14 June",
# "June 13 and 14"): the bare day is a day of that month, not a figure. Dashes are folded to "-".
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_DAY_JOIN = r"\s*(?:[-/&,]|\band\b|\bto\b|\bthrough\b|\btill\b|\buntil\b)\s*"
_LEAD_DAYS = re.compile(rf"(?<![\w.,/-]){_DAY}{_DAY_JOIN}(?:{_WEEKDAY})?(?=\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?"
                        rf"({_MON})\b\.?(?:,?\s+(\d{{4}})\b)?)")
_TRAIL_DAYS = re.compile(rf"\b({_MON})\.?\s+{_DAY}{_DAY_JOIN}(?:{_WEEKDAY})?{_DAY}\b"
                         rf"(?![:.]\d|\s*(?:of\s+)?(?:{_MON})\b)(?:,?\s+(\d{{4}})\b)?")
_BEFORE_DAY = re.compile(rf"(?<![\w.,/-]){_DAY}{_DAY_JOIN}(?:{_WEEKDAY})?$")


@functools.lru_cache(maxsize=1 << 14)
def _day_lists(text: str) -> tuple[tuple[int, int, int, int, int | None], ...]:
    """Bare days of a list or range sharing the month of the date beside them, in folded ``text``:
    (start, end, day, month, year or None). Cached: the date readers and the number reader each ask for one text's."""
    out: list[tuple[int, int, int, int, int | None]] = []
    for m in _LEAD_DAYS.finditer(text):
        month, year = _MONTHS[m[2]], int(m[3]) if m[3] else None
        out.append((m.start(1), m.end(1), int(m[1]), month, year))
        start = m.start(1)
        while (b := _BEFORE_DAY.search(text, max(0, start - 30), start)) is not None:   # "12, 13 and 14 June"
            out.append((b.start(1), b.end(1), int(b[1]), month, year))
            start = b.start(1)
    for m in _TRAIL_DAYS.finditer(text):   # "June 13-14, 2026": both days (the first has no year of its own)
        month, year = _MONTHS[m[1]], int(m[4]) if m[4] else None
        out += [(m.start(2), m.end(2), int(m[2]), month, year), (m.start(3), m.end(), int(m[3]), month, year)]
    return tuple(d for d in out if 1 <= d[2] <= 31)


def _date_spans(text: str) -> list[tuple[int, int, dt.date, str]]:
    """Dates in folded ``text``: (start, end, date, "HH:MM" or "")."""
    spans: list[tuple[int, int, dt.date, str]] = []
    taken: list[tuple[int, int]] = []
    for s, e, day, month, year in _day_lists(text):
        if year is not None:
            try:
                spans.append((s, e, dt.date(year, month, day), ""))
                taken.append((s, e))
            except ValueError:
                continue
    for pattern, kind in _DATE_PATTERNS:
        for m in pattern.finditer(text):
            if any(s < m.end() and m.start() < e for s, e in taken):
                continue
            try:
                time = ""
                if kind == "ymd":
                    d = dt.date(int(m[1]), int(m[2]), int(m[3]))
                    if m.lastindex and m.lastindex >= 5 and m[4]:
                        time = f"{int(m[4]):02d}:{m[5]}"
                elif kind == "mdy_name":
                    d = dt.date(int(m[3]), _MONTHS[m[1]], int(m[2]))
                elif kind == "dmy_name":
                    d = dt.date(int(m[3]), _MONTHS[m[2]], int(m[1]))
                elif kind == "dmy_dot":
                    d = dt.date(int(m[3]), int(m[2]), int(m[1]))
                else:  # 03/05/2026: month first (US), unless that cannot be a date
                    a, b, y = int(m[1]), int(m[2]), int(m[3])
                    d = dt.date(y, a, b) if a <= 12 else dt.date(y, b, a)
            except (ValueError, KeyError):
                continue
            spans.append((m.start(), m.end(), d, time))
            taken.append((m.start(), m.end()))
    return sorted(spans, key=lambda s: s[0])


def _yearless_spans(text: str, taken: list[tuple[int, int]]) -> list[tuple[int, int, dt.date]]:
    """Dates without a year in folded ``text`` outside ``taken`` spans: (start, end, that day of YEARLESS)."""
    out: list[tuple[int, int, dt.date]] = []
    for s, e, day, month, year in _day_lists(text):
        if year is None and not any(a < e and s < b for a, b in taken):
            try:
                out.append((s, e, dt.date(YEARLESS, month, day)))
            except ValueError:
                continue
    for pattern, kind in _YEARLESS_PATTERNS:
        for m in pattern.finditer(text):
            if any(s < m.end() and m.start() < e for s, e in taken + [(a, b) for a, b, _ in out]):
                continue
            try:
                month, day = (m[1], m[2]) if kind == "md_name" else (m[2], m[1])
                out.append((m.start(), m.end(), dt.date(YEARLESS, _MONTHS[month], int(day))))
            except (ValueError, KeyError):
                continue
    return out


def dates(text: str) -> list[str]:
    """ISO dates (``YYYY-MM-DD``, plus `` HH:MM`` when a time was written) found in ``text``."""
    return [d.isoformat() + (f" {t}" if t else "") for _, _, d, t in _date_spans(fold(text))]


def _mask(text: str, spans: Iterable[tuple[int, int]]) -> str:
    chars = list(text)
    for s, e in spans:
        chars[s:e] = " " * (e - s)
    return "".join(chars)


@dataclass(frozen=True)
class Item:
    """One value-like thing in an answer: its kind, span in the folded text, and what it is."""

    kind: str          # number | date | code | word | value
    start: int
    end: int
    key: str           # value_key of the text (codes, values); "" for numbers and dates
    number: float | None = None
    day: dt.date | None = None
    time: str = ""
    integer: bool = False
    currency: bool = False


_DECIMAL_COMMA = re.compile(r"(?:(?<=[€$£¥])|(?<=[€$£¥] )|(?<=\b(?:eur|usd|gbp) )|(?<=[€$£¥]-)|(?<=[€$£¥] -)|"
                            r"(?<=\b(?:eur|usd|gbp) -))(\d{1,3}(?:\.\d{3})*|\d+),(\d{2})(?![\d,])"
                            r"|(?<![\d.,])(\d{1,3}(?:\.\d{3})*|\d+),(\d{2})(?=\s?(?:€|\$|£|eur\b|euros?\b|usd\b|dollars?\b))")


def _decimal_commas(text: str) -> str:
    """Amounts written with a decimal comma beside their currency (``€83,00``, ``1.234,56 EUR``) in the
    point form (``€83.00``, ``1,234.56 EUR``); the text keeps its length, so positions stay valid."""
    def swap(m: re.Match[str]) -> str:
        return m.group(0).translate(str.maketrans({".": ",", ",": "."}))
    return _DECIMAL_COMMA.sub(swap, text)


#: Digits with a leading zero are a code (a card's last digits, a reference), never a quantity.
_LEADING_ZERO = re.compile(r"0\d{2,}")


def _numbers_and_codes(text: str) -> tuple[list[Item], list[Item]]:
    """Dates, codes (e-mails, phone and tracking numbers, mixed letter-digit ids) and numbers of folded text."""
    text = _decimal_commas(text)
    dates_ = [Item("date", s, e, "", day=d, time=t) for s, e, d, t in _date_spans(text)]
    rest = _mask(text, [(i.start, i.end) for i in dates_])
    rest = _mask(rest, [m.span() for m in _TIME.finditer(rest)])
    rest = _mask(rest, [(a, b) for a, b, *_ in _day_lists(text)])   # "13-14 June": a day, not a figure
    codes = [Item("code", m.start(), m.end(), value_key(m[0])) for m in _EMAIL.finditer(rest)]
    rest = _mask(rest, [(c.start, c.end) for c in codes])
    for m in _CODE.finditer(rest):
        if _UNIT_CODE.fullmatch(m.group(0)):
            continue   # "30-day", "2nd", "24h": a number with its unit, not an id
        codes.append(Item("code", m.start(), m.end(), value_key(m[0])))
    rest = _mask(rest, [(c.start, c.end) for c in codes])
    nums = []
    for m in _NUMBER.finditer(rest):
        raw = m[4]
        if _LEADING_ZERO.fullmatch(raw):
            codes.append(Item("code", m.start(), m.end(), value_key(raw)))   # "card -0121": a code's tail
            continue
        value = float(raw.replace(",", ""))
        if m[2] == "-":   # ("--51.33", two signs, is not -51.33)
            value = -value
        nums.append(Item("number", m.start(), m.end(), "", number=value, integer="." not in raw,
                         currency=bool(m[1] or m[3])))
    return dates_ + codes, nums


def numbers(text: str) -> list[float]:
    """Numbers in ``text`` outside dates, times and codes."""
    return [n.number for n in _numbers_and_codes(fold(layout_free(text)))[1] if n.number is not None]


def parse_number(text: Any) -> float | None:
    """A number written as a person would (``$1,234.50``, ``28.73 ml``, ``83.00.``), or None."""
    if isinstance(text, bool):
        return None
    if isinstance(text, (int, float)):
        return float(text) if math.isfinite(text) else None
    found = numbers(str(text))
    return found[0] if len(found) == 1 else None


_UNITS_WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
                "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"]
_TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90}
_WORD_NUMBER = re.compile(r"\b(?:(" + "|".join(_TENS) + r")(?:[- ](" + "|".join(_UNITS_WORDS[1:10]) + r"))?|("
                          + "|".join(_UNITS_WORDS) + r"))\b")


def word_numbers(text: str) -> list[tuple[float, str]]:
    """Whole numbers below 100 written as words (``three``, ``twenty-one``), with the words."""
    out = []
    for m in _WORD_NUMBER.finditer(fold(text)):
        if m[3]:
            out.append((float(_UNITS_WORDS.index(m[3])), m[0]))
        else:
            out.append((float(_TENS[m[1]] + (_UNITS_WORDS.index(m[2]) if m[2] else 0)), m[0]))
    return out


def as_number(value: Any) -> float | None:
    """``value`` as a number if it is one or is written as exactly one (``'$1,234.50'``), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str) and re.fullmatch(r"\s*[-+]?[$€£¥]?\s?[\d,]*\.?\d+\s*", value):
        if re.fullmatch(r"\s*\d{9,}\s*", value):   # a long digit string is a code (a tracking number)
            return None
        return parse_number(value)
    return None


def _is_date(value: Any) -> tuple[dt.date, str] | None:
    if not isinstance(value, str) or len(value.strip()) > 32:
        return None
    found = _date_spans(fold(value.strip()))
    if len(found) == 1 and found[0][1] - found[0][0] >= len(value.strip()) - 4:
        return found[0][2], found[0][3]
    return None


def _name_core(value: str) -> str | None:
    """A person's name without its titles and degrees (``Ing. Ottokar Käster B.Sc.`` → ``ottokarkäster``)."""
    # rejoin dotted degrees (B.Sc.) before dropping titles
    joined = re.sub(r"\b([a-z])\s*\.\s*([a-z]{1,3})\b", r"\1\2", fold(value))
    toks = _WORD.findall(joined)
    core = [t for t in toks if t not in _TITLES]
    if len(core) < 2 or len(core) == len(toks):
        return None
    return "".join(core)


# ------------------------------------------------------------------------------------------ the episode


def _has_figure(row: dict[str, Any], number: float) -> bool:
    """Does a result row hold ``number`` (to the cent) as one of its figures?"""
    return any(isinstance(v, (int, float)) and not isinstance(v, bool)
               and math.isclose(float(v), number, rel_tol=0, abs_tol=0.005) for v in row.values())


class Observed:
    """What the episode's tool results showed: evidence for refusals, and names a dump may list."""

    def __init__(self, results: Iterable[Any] = (), writes: Iterable[Any] = ()):
        self._results = list(results)
        self._writes = list(writes)   # the results of the episode's write calls (also in ``results``)
        self._scalars: list[Any] = []
        for r in self._results:
            _flatten(r, self._scalars, 0)
        self._blob: str | None = None
        self._names: dict[str, str] | None = None
        self._rows: list[dict[str, Any]] | None = None
        self._handled: frozenset[str] | None = None
        self._handled_names: frozenset[str] | None = None
        self._ids: frozenset[int] | None = None
        self._listed_ids: frozenset[int] = frozenset()
        self._written: list[float] | None = None
        self._last_digits: frozenset[str] | None = None

    def rows(self) -> list[dict[str, Any]]:
        """Every record (JSON object, at any depth) the results held."""
        if self._rows is None:
            self._rows = [row for _, row in result_rows(self._results)]
        return self._rows

    def handled(self) -> frozenset[str]:
        """The identifying codes (order numbers, references, serial numbers) of records a result returned one
        at a time - read or written individually in this episode, not listed in a page of results."""
        if self._handled is None:
            self._handled = frozenset(
                value_key(v) for single, row in result_rows(self._results) if single
                for k, v in row.items() if isinstance(v, str) and _IDENTITY.search(k) and value_key(v))
        return self._handled

    def handled_names(self) -> frozenset[str]:
        """The names and titles (multi-word strings) of records a result returned one at a time: a record
        the episode read or wrote on its own, named beside its code ("457-4173-3355 (Essential day)")."""
        if self._handled_names is None:
            self._handled_names = frozenset(
                value_key(v) for single, row in result_rows(self._results) if single for v in row.values()
                if isinstance(v, str) and 2 <= len(v.split()) <= MAX_RUN and len(v) <= 60 and not _is_date(v))
        return self._handled_names

    def names_record(self, code: str, name: str) -> bool:
        """Does a record the results held under the identifying ``code`` have ``name`` (value keys both)?"""
        return any(any(isinstance(v, str) and _IDENTITY.search(k) and value_key(v) == code for k, v in row.items())
                   and any(isinstance(v, str) and value_key(v) == name for v in row.values())
                   for _, row in result_rows(self._results))

    def holds(self, code: str, number: float | None) -> bool:
        """Does a record the results held under the identifying ``code`` (a value key) have ``number`` as a figure
        (with None: is there such a record at all)?"""
        for _, row in result_rows(self._results):
            if any(isinstance(v, str) and _IDENTITY.search(k) and value_key(v) == code for k, v in row.items()) \
                    and (number is None or _has_figure(row, number)):
                return True
        return False

    def glossed(self, before: str, number: float) -> bool:
        """Do the words of ``before``'s last clause (ahead of a bracket) name a record the results held with
        ``number`` as a figure, by one of its own values ("YCT Pilot (190,733.47)": its key YCT)?"""
        toks = words(re.split(r"[,;:]", before)[-1])
        said = set(runs(toks, 4)) if toks else set()
        for _, row in result_rows(self._results):
            if any(isinstance(v, str) and len(value_key(v)) >= 3 and value_key(v) in said for v in row.values()) \
                    and _has_figure(row, number):
                return True
        return False

    def labelled(self, word: str, number: float) -> bool:
        """Did the results hold a record known by ``number`` under a label field of ``word`` ("room" and its
        ``room_number`` 9340, "berth" and ``berth_no``): a record named by its number, not a figure?"""
        stem = word[:-1] if word.endswith("s") and len(word) > 3 else word
        if number != int(number):
            return False
        fields = re.compile(rf"^{re.escape(stem)}_(?:number|no|num|code|label)$")
        return any(fields.match(k) and str(v).strip().lstrip("0") == str(int(number)).lstrip("0")
                   for _, row in result_rows(self._results) for k, v in row.items()
                   if isinstance(v, (str, int)) and not isinstance(v, bool))

    def last_digits(self) -> frozenset[str]:
        """The last digits a card or account is known by (a ``last4`` field of any record the results held)."""
        if self._last_digits is None:
            self._last_digits = frozenset(str(v) for _, row in result_rows(self._results) for k, v in row.items()
                                          if _LAST_DIGITS.search(k) and isinstance(v, (str, int))
                                          and not isinstance(v, bool) and str(v).isdigit())
        return self._last_digits

    def ids(self, listed: bool = False) -> frozenset[int]:
        """The internal ids of records a result returned one at a time (read or written individually); with
        ``listed``, of every record a result held, pages of a search too."""
        if self._ids is None:
            ids: dict[bool, set[int]] = {True: set(), False: set()}
            for single, row in result_rows(self._results):
                if isinstance(row.get("id"), int) and not isinstance(row["id"], bool):
                    ids[single].add(row["id"])
            self._ids, self._listed_ids = frozenset(ids[True]), frozenset(ids[True] | ids[False])
        return self._listed_ids if listed else self._ids

    def labels(self) -> frozenset[str]:
        """Values of one token that join words and digits with underscores, as categories do ("net_60",
        "block_150", "14_per_week"), by value key: written out ("net 60") they name a value, never a figure."""
        return frozenset(value_key(v) for v in self._scalars
                         if isinstance(v, str) and len(v) <= 40 and re.fullmatch(r"[^\W_]+(?:_[^\W_]+)+", v)
                         and re.search(r"[^\W\d_]", v) and re.search(r"\d", v) and not _is_date(v))

    def written(self) -> list[float]:
        """The figures the episode's writes left in the records they returned (``{"updated": row}``,
        ``{"created": row}``, or any figure of a write call's result: ``{"return": row, "refunded": 372.97}``):
        per record and field the last one written."""
        if self._written is None:
            last: dict[tuple[Any, ...], float] = {}

            def keep(row: dict[str, Any], where: Any) -> None:
                for k, v in row.items():
                    if isinstance(v, (int, float)) and not isinstance(v, bool) and k != "id" and not k.endswith("_id"):
                        # a record is itself wherever it is returned; a figure outside any record, where it stands
                        last[tuple(sorted(row)), row["id"] if isinstance(row.get("id"), int) else where, k] = float(v)

            for r in self._results:
                for verb in ("updated", "created"):
                    row = r.get(verb) if isinstance(r, dict) else None
                    if isinstance(row, dict):
                        keep(row, None)
            for i, r in enumerate(self._writes):
                for j, (_, row) in enumerate(result_rows([r])):
                    keep(row, (i, j))
            self._written = list(last.values())
        return self._written

    def has_record(self, record: dict[str, Any]) -> bool:
        """Did some result hold a record with every field of ``record`` (values compared as values are)?"""
        return any(all(k in row and same_value(row[k], v) for k, v in record.items()) for row in self.rows())

    @property
    def empty(self) -> bool:
        return not self._scalars

    def blob(self) -> str:
        if self._blob is None:
            self._blob = "\x00".join(value_key(v) if not isinstance(v, float) else _fmt(v) for v in self._scalars)
        return self._blob

    def shows(self, value: Any) -> bool:
        """Was ``value`` (as text, number or date) part of some tool result?"""
        num = as_number(value)
        if num is not None:
            for v in self._scalars:
                if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isclose(float(v), num, abs_tol=0.005):
                    return True
        key = value_key(value)
        if not key:
            return False
        day = _is_date(value)
        if day is not None:
            key = day[0].isoformat().replace("-", "")
        return key in self.blob()

    def names(self) -> dict[str, str]:
        """Multi-word strings the results held (names, products, addresses): a dump may list them."""
        if self._names is None:
            out: dict[str, str] = {}
            words_: dict[str, str] = {}
            for v in self._scalars:
                if isinstance(v, str) and 2 <= len(v.split()) <= MAX_RUN and len(v) <= 60 and not _is_date(v):
                    k = value_key(v)
                    if len(k) >= 6:
                        out.setdefault(k, v)
                elif isinstance(v, str) and re.fullmatch(r"[^\W\d_][\w'-]{2,24}", v.strip()):
                    words_.setdefault(value_key(v), v)
            self._names, self._words = out, words_
        return self._names

    def words(self) -> dict[str, str]:
        """Single words the results held (first names, brands, categories): a dump may list them bare."""
        self.names()
        return self._words


def same_value(a: Any, b: Any) -> bool:
    """Are two cell values the same value: numbers within half a cent, dates the same day, else the
    same folded alphanumerics?"""
    x, y = as_number(a), as_number(b)
    if x is not None or y is not None:
        return x is not None and y is not None and math.isclose(x, y, rel_tol=0, abs_tol=0.005)
    da, db = _is_date(a), _is_date(b)
    if da is not None or db is not None:
        return da is not None and db is not None and da[0] == db[0]
    return value_key(a) == value_key(b) and bool(value_key(a))


def result_rows(results: Iterable[Any]) -> list[tuple[bool, dict[str, Any]]]:
    """Every JSON object in ``results`` (at any depth), each with whether it came from a lookup of one
    record (a result that is not a page of ``results``, or a page that holds one record only)."""
    out: list[tuple[bool, dict[str, Any]]] = []

    def walk(v: Any, single: bool, depth: int) -> None:
        if depth > 12:
            return
        if isinstance(v, dict):
            if "error" in v and set(v) <= {"error", "message"}:
                return
            paged = isinstance(v.get("results"), list) and len(v["results"]) != 1   # a search that found one: a lookup
            if not paged:
                out.append((single, v))
            for x in v.values():
                walk(x, single and not paged, depth + 1)
        elif isinstance(v, list):
            for x in v:
                walk(x, single, depth + 1)

    for r in results:
        walk(r, not isinstance(r, list), 0)
    return out


def is_identity_field(name: str) -> bool:
    """Does a field of this name identify the record it is in (its own key, code or reference)?"""
    return bool(_IDENTITY.search(name))


# A record's code, then a word or two or an arrow ("EVT-39704 to 111.95", "AC-1 -> 663.45", "EVT-11595 capped
# at 310.00", "MBR-1 (32.60)"): the figure that follows is that record's.
_AFTER_CODE = re.compile(r"((?=[\w#-]*[a-z#])(?=[\w#-]*\d)[#\w][\w#-]*)\s*(?:\(|->|→|=|:)?\s*(?:[a-z]+\s+){0,3}"
                         r"(?:->|→|=|:)?\s*[$€£]?\s*$")

# The same, for a code of letters only ("HHESEU (4,866.38)", "OOA (389,663.74)", "Advanced (LXE) 95,883.97"), which
# only the results can tell from a word.
_AFTER_LETTERS = re.compile(r"(?:\b([a-z]{2,12})\s*(?:\(|->|→|=|:)|\(([a-z]{2,12})\)\s*(?:->|→|=|:)?)\s*[$€£]?\s*$")

# In the words to the user, beside an answer that states the value asked for, a figure is the reply's working (a
# running total, a subtotal, a cross-check, what a skipped record would have made, a figure before the change, an
# example) or a record's own figure, and no rival; one put forward as what was asked ("that came to 12", "now total
# 6,585.10", "5 of them are in maintenance now") is, whatever else it sits beside.
_WORKING = re.compile(r"\b(?:running (?:[\w-]+ )?(?:totals?|sums?|counts?)|step by step|sub-?totals?|cross-?check(?:ed|ing)?|as a check|"
                      r"to check|check(?:ed|ing)|recomputed|verified|cumulative|as i went|after each|"
                      r"would (?:have|be|come to|take|bring|push|make|reach|put|leave)|would've|"
                      r"before (?:acting|any|the|changing|i|my|it|that|this|anything|[a-z]+ing)|beforehand|previously|"
                      r"(?:went|dropped|rose|fell|moved|changed|grew|shrank) from|up from|down from|"
                      r"a (?:drop|rise|fall|change|difference|decrease|increase|gain) of|e\.g\.|for example|such as|"
                      r"for instance|in groups|per group|by group)\b")
#: A figure joined to another by arithmetic ("91.20 + 114.17 = 205.37", "84 - 11 = 73", "41.08 -> 44.16").
_ARITHMETIC_BEFORE = re.compile(r"[\d)]\s*(?:[-+\u2212\u00d7*/=]|->|\u2192)\s*[$\u20ac\u00a3]?\s*$")
_ARITHMETIC_AFTER = re.compile(r"\s*(?:[-+\u2212\u00d7*/=]|->|\u2192)\s*[$\u20ac\u00a3]?\s*\d")
_RESULT = re.compile(r"\b(?:came to|comes? to|in total|totals?|total(?:l)?ed|total(?:l)?ing|altogether|combined|"
                     r"sum(?:s|med)?|add(?:s|ed)? up to|amount(?:s|ed)? to|now|in all|overall|together|answer|result|left|"
                     r"leaves?|leaving|remaining|remains?|(?:count|number|tally|figure|value) (?:is|was|comes to))\b")
#: A record named just before a figure of its own: its code or #id, then a few words of its name, then a connector.
_RECORD_BEFORE = re.compile(r"(?:(?=[\w-]*[^\W\d_])(?=[\w-]*\d)[\w][\w-]*|#\d+)(?:\s*\([^()]{0,40}\))?"
                            r"(?:\s+[^\W\d_][\w'-]*){0,3}\s*(?:[:=]|\bat\b|\bto\b|\bnow\b|\bis\b|\bwas\b|\bof\b|"
                            r"\bwith\b|\btotals\b|\bcosts\b|\bholds\b|\bhas\b|\bhad\b)?\s*[$\u20ac\u00a3]?\s*$")


def _working(text: "_Text", start: int, end: int) -> bool:
    """Is the figure at ``start:end`` the reply's working: arithmetic shown, or a clause or sentence labelled
    as a running total, a subtotal, a check, a would-have, a before or an example?"""
    s0, s1 = text.sentence(start)
    c0, c1 = text.clause(start)
    if _ARITHMETIC_BEFORE.search(text.t[max(s0, start - 24):start]) or _ARITHMETIC_AFTER.match(text.t[end:s1]):
        return True
    w0 = max((m.end() for m in re.finditer(r"[.!?\n](?=\s)", text.t[:start])), default=0)
    return bool(_WORKING.search(text.t[c0:c1]) or _WORKING.search(text.t[max(w0, text.message_from):start]))


def _naming(text: "_Text", start: int, end: int) -> str | None:
    """The words that name the record a figure at ``start:end`` belongs to, where the figure is glossed as a
    record's own: in brackets after its code or its name ("APR-8533908 (4,119.38)", "Classic inverter (installed …,
    battery 60%)"), or after its code with a connector ("#61 Metformin 41.08"); else None."""
    s0, _ = text.sentence(start)
    before = text.t[max(s0, start - 80):start]
    opened = before.rfind("(")
    if opened >= 0 and ")" not in before[opened:] and not _RESULT.search(before[opened:]):   # "(total 39,698.02)"
        head = re.search(r"([^\W_][\w'-]*)\s*$", before[:opened])
        if head and re.search(r"[^\W\d_]", head.group(1)) and head.group(1) not in _BARE_FILLER \
                and head.group(1) not in ("or", "and", "nor", "maybe"):
            return re.split(r"[()\[\],;:]", before[:opened])[-1]   # the words since the last mark: that record's
    m = _RECORD_BEFORE.search(before)
    return re.split(r"[()\[\],;:]", before[:m.start()])[-1] + before[m.start():m.end()] if m else None


def _claims_result(text: "_Text", start: int, end: int) -> bool:
    """Is the figure at ``start:end`` put forward as what was asked: a result word in its clause ("That came to 12
    threads", "5 of them are in maintenance now", "that leaves 4,757.16")?"""
    c0, c1 = text.clause(start)
    return bool(_RESULT.search(text.t[c0:start]) or _RESULT.search(text.t[end:c1]))


# Fields holding the last digits a card or account is known by.
_LAST_DIGITS = re.compile(r"(?:^|_)last_?(?:4|four|digits)$")

# Fields that identify the record they are in (its own key or code; not "<other>_id", which names another).
_IDENTITY = re.compile(r"^(?:id|sku|email|rma|code|ref|reference|number|uuid|key|locator|pnr)$"
                       r"|_(?:number|ref|reference|code|no|uuid|locator|key)$")


def blocking_records(results: Iterable[Any], values: Iterable[Any], instruction: str = "") -> list[dict[str, Any]]:
    """The records the reference's lookups read a refusal's blocking ``values`` off: for each JSON object
    holding one of them as a field, that field and one identifying field (its id or a code), as
    alternatives. Objects from a lookup of one record come first (a page of search results may hold other
    records with the same value); of a page, the rows naming something the instruction names."""
    vals = [v for v in values if v is not None and as_text(v).strip()]
    said = _Mentions(instruction) if instruction else None
    found: list[tuple[bool, bool, dict[str, Any]]] = []
    for single, row in result_rows(results):
        for field_, cell in row.items():
            if isinstance(cell, (dict, list)) or cell is None or isinstance(cell, bool):
                continue
            if not any(same_value(cell, v) for v in vals):
                continue
            ids = [k for k, x in row.items() if k != field_ and _IDENTITY.search(k) and not isinstance(x, (dict, list, bool))
                   and x is not None and (not isinstance(x, str) or len(value_key(x)) >= 3)]
            named = bool(said) and any(isinstance(row.get(k), str) and said.has_key(value_key(row[k])) for k in ids)
            for k in ids:
                found.append((single, named, {field_: cell, k: row[k]}))
    if any(single for single, _, _ in found):
        found = [f for f in found if f[0]]
    elif any(named for _, named, _ in found):
        found = [f for f in found if f[1]]
    out: list[dict[str, Any]] = []
    for _, _, rec in found:
        if rec not in out:
            out.append(rec)
    return out


def _flatten(obj: Any, out: list[Any], depth: int) -> None:
    if depth > 12:
        return
    if isinstance(obj, dict):
        if set(obj) == {"error"}:
            return
        for v in obj.values():
            _flatten(v, out, depth + 1)
    elif isinstance(obj, list):
        for v in obj:
            _flatten(v, out, depth + 1)
    elif obj is not None and not isinstance(obj, bool):
        out.append(obj)


# ------------------------------------------------------------------------------------------ matching


@dataclass(frozen=True)
class Match:
    ok: bool
    detail: str
    missing: tuple[str, ...] = ()
    competing: tuple[str, ...] = ()


@dataclass
class Candidates:
    """The slot of an answer: the competing values (other values of the same column, or other
    candidate records), the text whose values never compete (the instruction, the rule the task
    exercises, values the rule allows), the env's category words and record nouns, and today."""

    values: Iterable[Any] = ()
    instruction: str = ""
    allowed: Iterable[Any] = ()
    vocabulary: Iterable[str] = ()
    nouns: Iterable[str] = ()
    today: str = ""
    policy: str = ""
    rule: str = ""
    _keys: dict[str, str] = field(default_factory=dict, init=False, repr=False)
    longest: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        #: Runs of :data:`QUOTE_RUN` words of the policy: an answer quoting the policy asserts nothing by it.
        self.quotes = quote_grams(self.policy)
        self.mentions = _Mentions(self.instruction + ("\n" + self.rule if self.rule else ""), self.allowed)
        #: The figures a reply may name in explaining itself (the request's arithmetic: what a budget's
        #: remainder leaves spent), which still compete when put forward beside the answer ("1.00 and 5.00").
        self.explained = _Mentions("", self.allowed)
        self.stated = _Mentions(self.instruction + ("\n" + self.rule if self.rule else ""))
        #: What the request itself names (echoing it is no assertion); the rule's words are public, but a
        #: status it names asserted on its own beside the answer ("approved (rejected)") still competes.
        self.said = said = _Mentions(self.instruction)
        #: Words the rule allows (a status it permits), which an explanation may name but not assert
        #: beside the answer ("processing, pending").
        self.allowed_words = {value_key(a): as_text(a) for a in self.allowed
                              if value_key(a) and as_number(a) is None and not said.has_key(value_key(a))}
        for v in self.values:
            tokens = words(as_text(v))
            key = "".join(tokens)
            if key and not self.mentions.has_key(key):
                self._keys.setdefault(key, as_text(v))
                self.longest = max(self.longest, len(tokens))
                last_first = _Expected(v, False).last_first   # "Brown, Andrea" names the same rival
                if last_first and not self.mentions.has_key(last_first):
                    self._keys.setdefault(last_first, as_text(v))
        self.vocab_keys = {value_key(v): str(v) for v in self.vocabulary if value_key(v)}
        # (the small words of a noun are not its noun: "party to serve" leaves "to 8" a second count)
        self.noun_words = {w for n in self.nouns for w in words(n) if w not in _NOUN_FILLER} | {
            "id", "no", "number", "num", "ref", "code", "item", "items", "row", "record", "line"}
        self.today_day = _is_date(self.today)[0] if self.today and _is_date(self.today) else None
        #: The world's time of day, where the policy states it ("the current time is 2026-06-15T12:00:00Z"):
        #: another time today is a record's moment, not the clock.
        now = re.search(re.escape(self.today[:10]) + r"T(\d\d:\d\d)", self.policy) if self.today else None
        self.now_time = now.group(1) if now else None

    def keys(self) -> dict[str, str]:
        return self._keys


class _Mentions:
    """Values the instruction (and the rule) already name: echoing them is not hedging."""

    def __init__(self, text: str, allowed: Iterable[Any] = ()):
        folded = fold(layout_free(text))
        # an e-mail address names itself, not the words of its user name: "sean_morrow@example.org" in the request
        # is no mention of "Sean Morrow", a rival answer
        self.run_keys = set(runs(_WORD.findall(_EMAIL.sub(" . ", folded)), 64)) | {value_key(m) for m in _EMAIL.findall(folded)}
        others, nums = _numbers_and_codes(folded)
        self.numbers = [n.number for n in nums]
        self.days = {o.day for o in others if o.kind == "date"}
        for a in allowed:
            k = value_key(a)
            if k:
                self.run_keys.add(k)
            n = as_number(a)
            if n is not None:
                self.numbers.append(n)
            d = _is_date(a) if isinstance(a, str) else None
            if d:
                self.days.add(d[0])

    def has_key(self, key: str) -> bool:
        return key in self.run_keys

    def has_number(self, n: float) -> bool:
        return any(math.isclose(n, m, rel_tol=0, abs_tol=1e-9) for m in self.numbers)


#: Words in a row that make a quotation of the policy (shorter runs are ordinary phrases).
QUOTE_RUN = 6


def quote_grams(policy: str) -> frozenset[tuple[str, ...]]:
    """Every run of :data:`QUOTE_RUN` words of ``policy`` (folded)."""
    toks = _WORD.findall(fold(layout_free(policy))) if policy else []
    return frozenset(tuple(toks[i:i + QUOTE_RUN]) for i in range(len(toks) - QUOTE_RUN + 1))


def _unquote(text: str, grams: frozenset[tuple[str, ...]]) -> str:
    """``text`` (folded) with the words it quotes from the policy blanked (same length, so positions stay):
    the rule's wording and values are public, so a quotation of them neither answers nor competes."""
    if not grams:
        return text
    toks = [(m.group(0), m.start(), m.end()) for m in _WORD.finditer(text)]
    blank = [False] * len(toks)
    for i in range(len(toks) - QUOTE_RUN + 1):
        if tuple(t for t, _, _ in toks[i:i + QUOTE_RUN]) in grams:
            for j in range(i, i + QUOTE_RUN):
                blank[j] = True
    if not any(blank):
        return text
    chars = list(text)
    for (_, a, b), off in zip(toks, blank):
        if off:
            chars[a:b] = " " * (b - a)
    return "".join(chars)


class _Text:
    """A submitted text, folded and free of layout, with its tokens, items, sentences and clauses
    (``quotes``: the policy's word runs, blanked where the text quotes them)."""

    def __init__(self, raw: str, quotes: frozenset[tuple[str, ...]] = frozenset()):
        self.raw = raw
        self.t = _unquote(fold(layout_free(raw)), quotes)
        self.n = self.t   # the text negations are read in (see hide_from_negation)
        self.message_from = len(self.t) + 1   # where a separate ``message`` starts (set by match_values)
        self.tok = [(m.group(0), m.start(), m.end()) for m in _WORD.finditer(self.t)]
        others, self.nums = _numbers_and_codes(self.t)
        self.dates = [o for o in others if o.kind == "date"]
        self.codes = [o for o in others if o.kind == "code"]
        self.sentences = self._cut(r"[!?;\n]|(?<=[^\W_])\.(?=\s|$)|(?<=[\d)\]\"'])\.(?=\s|$)", abbreviations=True)
        self.clauses = self._cut(r"[!?;\n:()\[\]|{}]|,(?!\d{3}(?!\d))|(?<=[^\W_])\.(?=\s|$)|(?<=[\d)\]\"'])\.(?=\s|$)|"
                                 r"\b(?:but|however|while|although|though|whereas)\b", abbreviations=True)
        self._runs: dict[str, list[tuple[int, int]]] | None = None

    def _cut(self, pattern: str, abbreviations: bool) -> list[int]:
        """Sorted boundary positions; a period after a short word (``Ing.``, ``Dr.``, ``B.Sc.``) is no boundary."""
        cuts = [0]
        for m in re.finditer(pattern, self.t):
            if abbreviations and m.group(0) == ".":
                before = re.search(r"([^\W\d_]+)\.?$", self.t[:m.start()])
                if before and len(before.group(1)) <= 3 and m.start() + 1 < len(self.t):
                    continue
            cuts.append(m.end())
        cuts.append(len(self.t) + 1)
        return cuts

    @staticmethod
    def _span_of(cuts: list[int], pos: int) -> tuple[int, int]:
        lo = 0
        for c in cuts:
            if c <= pos:
                lo = c
            else:
                return lo, c
        return lo, len(cuts) and cuts[-1]

    def sentence(self, pos: int) -> tuple[int, int]:
        return self._span_of(self.sentences, pos)

    def clause(self, pos: int) -> tuple[int, int]:
        return self._span_of(self.clauses, pos)

    def runs(self, longest: int) -> dict[str, list[tuple[int, int]]]:
        if self._runs is None:
            self._runs = {}
            toks = [t for t, _, _ in self.tok]
            for key, spans in runs(toks, max(longest, MAX_RUN)).items():
                self._runs[key] = [(self.tok[a][1], self.tok[b - 1][2]) for a, b in spans]
        return self._runs

    # -------------------------------------------------------------- negation and hedges
    def hide_from_negation(self, spans: list[tuple[int, int]]) -> None:
        """Read the requested values' own words as no negation (an answer "none" or "no")."""
        self.n = _mask(self.t, spans)

    def negated(self, start: int, end: int) -> bool:
        """Is the value at ``start:end`` negated where it stands ("not X", "X is not correct")?"""
        s0, s1 = self.sentence(start)
        before = self.n[s0:start]
        if _LOCAL_NEGATION.search(before):
            return True
        return bool(_POST_NEGATION.match(self.n[end:end + 40]))

    def conditional(self, start: int) -> bool:
        """Is the value at ``start`` the condition of a rule the text restates ("a laptop can only be retired
        when it is not online", "unless it is shipped")? It says nothing of the record: neither stated nor
        negated."""
        s0, _ = self.sentence(start)
        return bool(_CONDITION.search(self.t[s0:start]))

    def asserted(self, start: int, end: int) -> bool:
        """Is the value at ``start:end`` put forward as the answer: the whole of its sentence but for "it is",
        "the answer is", "correction:" and the like ("It is 05:00.", "Correction: it is NET30.")?"""
        s0, s1 = self.sentence(start)
        return bool(_ASSERTED_BEFORE.fullmatch(self.t[s0:start]) and re.fullmatch(r"[\s\W_]*", self.t[end:s1]))

    def about_others(self, pos: int) -> bool:
        """Is the clause at ``pos`` about other records ("his other two requests", "the rest")?"""
        c0, c1 = self.clause(pos)
        return bool(_OTHERS.search(self.t[c0:c1]))

    def put_beside(self, pos: int) -> bool:
        """Is the value at ``pos`` put forward beside the answer as another ("Other records show X",
        "For completeness: X", "see also X")?"""
        s0, _ = self.sentence(pos)
        return self.about_others(pos) or bool(_BESIDE.search(self.t[s0:pos]))

    def bare(self, start: int, end: int, others: list[tuple[int, int]]) -> bool:
        """Is the word at ``start:end`` asserted on its own: alone in its clause but for fillers ("it is",
        "status:", "and") and other values ("magazine and inactive")? Not when a copula links it to one of
        those values ("the answer is Richard Price": it names what the value is)."""
        c0, c1 = self.clause(start)
        for s, _ in others:
            if c0 <= s < c1 and s >= end and _COPULA.search(self.t[end:s]):
                return False   # "<word> is <value>": the word says what the value is
        rest = [(t, a) for t, a, b in self.tok if c0 <= a < min(c1, len(self.t)) and not start <= a < end
                and not any(s <= a < e for s, e in others)]
        return all(t in _BARE_FILLER for t, _ in rest)

    def apposition(self, start: int, values: list[tuple[int, int]]) -> bool:
        """Does the value at ``start`` name what a word before it is ("the variant (COL-034-03)", "tracking
        number: 1Z…")? Not after another value ("83.00 (16)")."""
        lo = max(0, start - 48)
        m = re.search(r"([^\W\d_][\w'-]*)\s*[(:\[]\s*$", self.t[lo:start])
        if m is None:
            return False
        a = lo + m.start(1)
        return not _overlaps(values, a, a + len(m.group(1))) and m.group(1) not in _BARE_FILLER

    def scope_negated(self, start: int) -> bool:
        c0, _ = self.clause(start)
        return bool(_SCOPE_NEGATION.search(self.n[c0:start]))

    def hedged(self, start: int, end: int, neighbours: list[tuple[int, int]]) -> bool:
        """Is the value at ``start:end`` hedged: a hedge word in its clause, "or" next to it, or only
        hedge words between it and a neighbouring value in its sentence?"""
        c0, c1 = self.clause(start)
        if _HEDGE.search(self.t[c0:max(c1, end)]):
            return True
        s0, s1 = self.sentence(start)
        or_after = _OR_AFTER_IN_MESSAGE if start >= self.message_from else _OR_AFTER
        if or_after.match(self.t[end:s1]) or _OR_BEFORE.search(self.t[s0:start]):
            return True
        for a, b in neighbours:
            if a >= end and a < s1 and _GAP_HEDGE.match(self.t[end:a]) and self.t[end:a].strip(" ,"):
                return True
            if b <= start and b > s0 and _GAP_HEDGE.match(self.t[b:start]) and self.t[b:start].strip(" ,"):
                return True
        return False


def _shape(code: str) -> str:
    """A code's shape: letters as ``a``, digits as ``9`` ("CP-246521" -> "aa-999999")."""
    return re.sub(r"[^\W\d_]", "a", re.sub(r"\d", "9", fold(code).strip()))


def _fmt(n: float) -> str:
    return str(int(n)) if n == int(n) else f"{n:.2f}".rstrip("0").rstrip(".")


def _covered(spans: list[tuple[int, int]], a: int, b: int) -> bool:
    return any(s <= a and b <= e for s, e in spans)


def _overlaps(spans: list[tuple[int, int]], a: int, b: int) -> bool:
    return any(s < b and a < e for s, e in spans)


class _Expected:
    """One requested value: how it is found in a text (number, date or word run)."""

    def __init__(self, value: Any, numeric: bool | None):
        self.value = value
        self.shown = as_text(value)
        self.number = as_number(value) if numeric is not False else None
        if numeric and self.number is None:
            self.number = parse_number(value)
        self.date = _is_date(value) if self.number is None else None
        self.key = value_key(value)
        self.core = _name_core(self.shown) if self.number is None and self.date is None else None
        # a person's name as a register lists it, "Santana, Kathy"
        parts = self.shown.split()
        self.last_first = value_key(" ".join(parts[-1:] + parts[:-1])) \
            if self.number is None and self.date is None and 2 <= len(parts) <= 3 \
            and all(p[:1].isupper() and p.isalpha() for p in parts) else None

    @property
    def slot(self) -> str:
        return "number" if self.number is not None else "date" if self.date is not None else "label"

    def occurrences(self, text: _Text, longest: int, tolerance: float) -> list[tuple[int, int]]:
        if self.number is not None:
            found = [(n.start, n.end) for n in text.nums
                     if n.number is not None and math.isclose(n.number, self.number, rel_tol=0, abs_tol=tolerance)]
            if found:
                return found
            if not text.nums and self.number == int(self.number):
                return [(m.start(), m.end()) for m in _WORD_NUMBER.finditer(text.t)
                        if word_numbers(m.group(0)) and word_numbers(m.group(0))[0][0] == self.number]
            return []
        if self.date is not None:
            day, time = self.date
            return [(d.start, d.end) for d in text.dates if d.day == day and (not time or not d.time or d.time == time)]
        out: list[tuple[int, int]] = []
        table = text.runs(longest)
        for key in (self.key, self.core, self.last_first):
            if key:
                out += table.get(key, [])
        out += [(c.start, c.end) for c in text.codes if c.key == self.key and self.key]
        if not self.key and self.shown.strip():   # a value of symbols only ("$$$$")
            raw = fold(self.shown.strip())
            out += [(m.start(), m.end()) for m in re.finditer(re.escape(raw), text.t)]
        return sorted(set(out))


def match_values(answer: Any, expected: Sequence[Any], candidates: Candidates | None = None, *,
                 numeric: bool | None = None, tolerance: float = 0.01, scoped: bool = True,
                 observed: Observed | None = None, allowed: Sequence[Any] = ()) -> Match:
    """Every ``expected`` value is stated in ``answer`` (not negated, not hedged), no competing value of
    its slot is, and no more than :data:`DUMP_LIMIT` - 1 further values are named.

    ``numeric`` forces (True) or forbids (False) reading the values as numbers; by default a value
    that looks like a number is compared as one. ``scoped=False`` (refusals, which decline
    throughout): a competitor in a negated clause still competes unless negated where it stands.
    ``allowed``: further values that neither compete nor count (the other alternatives of a reason)."""
    if answer is None or (isinstance(answer, str) and not answer.strip()):
        return Match(False, "no answer submitted")
    cands = candidates if candidates is not None else Candidates()
    text = _Text(as_text(answer), cands.quotes)
    # With ``answer`` and ``message`` apart, the answer is what is asserted: in the words to the user only
    # values of the answer's kind, the slot's competitors, hedges and negations count (see ``answer_kinds``).
    # Without a message, every word is the answer.
    submitted = getattr(answer, "submission", None)
    message_from = len(text.t) + 1
    if submitted is not None and submitted.answer and submitted.message:
        # the answer's length as _Text reads it (folded, layout-free): no second full parse of the answer
        message_from = text.message_from = len(_unquote(fold(layout_free(submitted.answer)), cands.quotes))
    exp = [_Expected(v, numeric) for v in expected]
    if not exp:
        return Match(True, "nothing requested")
    # In the words to the user, a value of another kind than the answer's (a record's code beside a count, a
    # person beside a date) mentioned in a sentence cannot stand for it; one of the same kind can, and so
    # can any value put forward on its own ("It is 05:00." beside an id).
    answer_kinds = {"number" if e.number is not None else "date" if e.date is not None
                    else "code" if _CODE.fullmatch(e.key) or _CODE.fullmatch(e.shown.lower()) else "name" for e in exp}
    answer_shapes = {_shape(e.shown) for e in exp}   # a code is of the answer's kind when shaped like it

    allowed_mentions = _Mentions("", allowed) if allowed else None
    longest = max([len(words(e.shown)) for e in exp] + [cands.longest, MAX_RUN])
    missing: list[str] = []
    covered: list[tuple[int, int]] = []
    stated: list[tuple[int, int]] = []
    found = [(e, e.occurrences(text, longest, tolerance)) for e in exp]
    for _, occ in found:
        covered += occ
    text.hide_from_negation(covered)   # an answer that is itself a negation word ("none") negates nothing
    for e, occ in found:
        plain = [o for o in occ if not text.conditional(o[0])]   # a rule's condition says nothing of the record
        if not plain:
            missing.append(e.shown + (" (only as a rule's condition)" if occ else ""))
            continue
        if any(text.negated(*o) for o in plain):   # negated anywhere: "not X", "X is not correct"
            missing.append(e.shown + " (negated)")
            continue
        stated += plain
    slots = {e.slot for e in exp}
    exp_keys = {e.key for e in exp} | {e.core for e in exp if e.core} | {e.last_first for e in exp if e.last_first}
    exp_nums = [e.number for e in exp if e.number is not None]
    # the figures the episode's own writes left (the state check holds them to the right ones) may be listed in
    # the words to the user beside the one total they make up ("372.97 + 219.98"), but never where the answer is
    # one of them (then listing them is a dump), and only all of them: figures that do not add up to the answer
    # ("8, 0") are other guesses
    parts = observed.written() if observed is not None and len(exp_nums) == 1 else []
    if any(math.isclose(w, x, rel_tol=0, abs_tol=tolerance) for w in parts for x in exp_nums):
        parts = []
    named_parts: list[tuple[float, int, int]] = []
    exp_days = {e.date[0] for e in exp if e.date is not None}
    mentions = cands.mentions

    def mentioned_key(key: str) -> bool:
        return mentions.has_key(key) or (allowed_mentions is not None and allowed_mentions.has_key(key))

    def mentioned_number(n: float) -> bool:
        return mentions.has_number(n) or (allowed_mentions is not None and allowed_mentions.has_number(n))

    def negated(a: int, b: int) -> bool:
        return text.negated(a, b) or (scoped and text.scope_negated(a))

    competing: list[str] = []
    extras: list[str] = []
    further: list[tuple[str, int, int]] = []   # values of other kinds: incidental in a sentence, a guess when bare
    kinds: dict[tuple[int, int], str] = {}     # further value's span -> its kind (date, code, number, name)
    references: list[tuple[int, int]] = []   # codes of records handled one by one: no guess unless listed bare
    other_facts: list[str] = []
    spans_seen: list[tuple[int, int]] = []
    # candidates of the slot (and other labels)
    table = text.runs(longest)
    for key, shown in cands.keys().items():
        if key in exp_keys:
            continue
        for a, b in table.get(key, ()):
            if _covered(covered, a, b) or negated(a, b) or (allowed_mentions and allowed_mentions.has_key(key)):
                continue
            if not scoped and text.about_others(a):
                # beside a refusal, a true fact about other records: "His other two investigations are already
                # done." (one; a list of the slot's values under "other records show …" is a dump). An answer
                # to a question that adds a value of its slot for "other records" has hidden a second guess.
                other_facts.append(shown)
                spans_seen.append((a, b))
                break
            competing.append(shown)
            spans_seen.append((a, b))
            break
    if len(other_facts) >= DUMP_LIMIT:
        competing += other_facts
    # dates
    # the moments asked for, where a time of day is part of the answer: another time that day is another moment
    exp_times = {e.date[0]: e.date[1][:5] for e in exp if e.date is not None and e.date[1]}
    for d in text.dates:
        if _overlaps(covered, d.start, d.end):
            continue
        if d.day in exp_times and d.time and d.time[:5] != exp_times[d.day] and not negated(d.start, d.end):
            competing.append(f"{d.day.isoformat()} {d.time}")
            spans_seen.append((d.start, d.end))
            continue
        if d.day not in exp_days and text.hedged(d.start, d.end, covered) and not negated(d.start, d.end):
            competing.append(d.day.isoformat())   # "though it might be 2026-05-17": a second guess, the request's or not
            spans_seen.append((d.start, d.end))
            continue
        moment = d.day == cands.today_day and bool(d.time) and cands.now_time is not None \
            and d.time[:5] != cands.now_time and d.day not in exp_days   # "today at 11:52": a record's, listed
        echoed = "date" in slots and d.start < message_from and d.day not in exp_days and d.day in mentions.days \
            and text.bare(d.start, d.end, covered) and not negated(d.start, d.end)   # "2026-06-03 (2026-06-08)"
        if not moment and not echoed and (d.day in exp_days or d.day in mentions.days or d.day == cands.today_day):
            continue
        if allowed_mentions is not None and d.day in allowed_mentions.days:
            continue
        if negated(d.start, d.end):
            continue
        if "date" in slots:
            competing.append(d.day.isoformat())
        else:
            further.append((d.day.isoformat(), d.start, d.end))
            kinds[d.start, d.end] = "date"
        spans_seen.append((d.start, d.end))
    if "date" in slots:   # another day written without its year ("March 19") or as a weekday ("Thursday")
        full = [(d.start, d.end) for d in text.dates]
        for a, b, day in _yearless_spans(text.t, full + covered):
            if any((day.month, day.day) == (x.month, x.day) for x in exp_days | mentions.days) or negated(a, b):
                continue
            competing.append(text.t[a:b])
            spans_seen.append((a, b))
        weekdays = {x.strftime("%A").lower() for x in exp_days}
        for m in _WEEKDAY_NAME.finditer(text.t):
            if m.group(1) in weekdays or _overlaps(full + covered + spans_seen, m.start(), m.end()):
                continue
            if text.bare(m.start(), m.end(), covered + spans_seen) and not negated(m.start(), m.end()):
                competing.append(m.group(1))
                spans_seen.append(m.span())
    # codes (ids, e-mails, phone and tracking numbers)
    named_codes: list[str] = []   # codes the request gave, listed on their own in `answer` beside a message
    for c in text.codes:
        if _overlaps(covered, c.start, c.end) or c.key in exp_keys or negated(c.start, c.end):
            continue
        if mentioned_key(c.key):
            if c.start < message_from <= len(text.t) and text.bare(c.start, c.end, [(x.start, x.end) for x in text.codes]):
                named_codes.append(text.t[c.start:c.end])
            continue
        if any(c.key == k for k in cands.keys()):
            continue   # already counted as a candidate
        if observed is not None and c.key in observed.handled():
            references.append((c.start, c.end))   # "refunded PAY-93…": the record acted on, named in a sentence
            continue
        further.append((text.t[c.start:c.end], c.start, c.end))
        kinds[c.start, c.end] = "code"
        spans_seen.append((c.start, c.end))
    # numbers
    answer_part = text.t[:message_from]
    answer_measured = bool(re.search(r"[$€£¥]|\d\s*(?:" + "|".join(sorted(_MEASURES, key=len, reverse=True)) + r")\b",
                                     answer_part))
    count_words = {text.t[e:].split(None, 1)[0].strip(".,;:!?)") for s, e in stated
                   if exp_nums and re.match(r"\s+[a-z]", text.t[e:])} if exp_nums else set()
    counts = bool(exp_nums) and all(x == int(x) for x in exp_nums)   # the answer is a count (or other whole number)
    money = any(re.search(r"\.\d|[$\u20ac\u00a3]", e.shown) for e in exp if e.number is not None)   # a figure, not a count
    # the spans of the multi-word strings with digits the results held (addresses, names like "Route 9 express")
    within_names = [sp for key in (observed.names() if observed is not None else {}) if any(ch.isdigit() for ch in key)
                    for sp in table.get(key, ())]
    within_names += [sp for key in (observed.labels() if observed is not None else ()) for sp in table.get(key, ())]
    figures = [(m.start, m.end) for m in text.nums]

    def told_figure(n: Item) -> str:
        """What a figure in the words to the user is, beside an answer that states the value asked for: "rival" (a
        figure glossed as a record's own that the record does not hold), "skip" (the request's arithmetic, the reply's
        working, a record's own figure, a figure of another kind, a handled record's id, a mention in a sentence about
        something else) or "put" (put forward as the result, or listed bare: read on like any other value). A count of
        records beside a sum of money (or a sum beside a count) is of another kind."""
        working = _working(text, n.start, n.end)
        claimed = _claims_result(text, n.start, n.end)
        bare = text.bare(n.start, n.end, covered + figures)   # alone but for fillers and other figures: "6 7 8"
        word_next = re.match(r"[ \t-]*([a-z][a-z'-]*)", text.t[n.end:])
        of_things = word_next is not None and word_next.group(1) not in _UNITS | _NOT_COUNTED | _MEASURES
        kind = not (money and n.integer and not n.currency and (of_things or n.number < 100 and not bare)) \
            and not (not money and not n.integer)
        naming = _naming(text, n.start, n.end) if observed is not None else None
        own = False
        if naming is not None and observed is not None:
            codes = [value_key(c.group(0)) for c in _CODE.finditer(naming[-40:])] + [
                w for w in words(naming)[-3:] if re.fullmatch(r"[a-z]{2,12}", w)]
            own = observed.glossed(naming, n.number) or any(observed.holds(c, n.number) for c in codes)
            # (a record is known by its code or its name of several words, never by a status or a category)
            known = any(observed.holds(c, None) for c in codes) or bool(set(runs(words(naming), 4)) & set(observed.names()))
            if known and not own and not working and not _covered(within_names, n.start, n.end):
                return "rival"
        explained = cands.explained.has_number(n.number) and not text.asserted(n.start, n.end) \
            or any(math.isclose(n.number + x, m, rel_tol=0, abs_tol=tolerance)   # the spent total beside the room left
                   for x in exp_nums for m in cands.stated.numbers)
        if explained or working or own or not kind:
            return "skip"
        if n.integer and observed is not None and int(n.number) in observed.ids() and not claimed:
            return "skip"   # the id of a record the episode handled: "104 (RWD-7, 150.00), 77 (…)"
        s0, _ = text.sentence(n.start)
        if n.integer and observed is not None and int(n.number) in observed.ids(listed=True) and not claimed \
                and re.search(r"\b(?:ids?|nos?)\b[\s#\d,&]*(?:\band\b[\s#\d,]*)*$|#$", text.t[s0:n.start]):
            return "skip"   # ids the results listed, after the word: "(ids 101, 102 and 103)"
        return "put" if claimed or bare else "skip"   # "the 84 open threads", "40 in review": about something else

    id_end = 0   # where the last record id named in the text ends (a list of ids runs on from it)
    label_word = ""   # the word of the label that list of records is named by ("rooms 9340 and 9078")
    # where the answer itself states every value asked for, the words to the user are read for what they put
    # forward as the result, not for every figure of the work behind it
    answer_given = bool(exp_nums) and message_from <= len(text.t) and all(
        any(a < message_from for a, _ in occ) for _, occ in found)
    # (where the answer is itself a record's figure, the other records' figures stay its rivals, glossed or not)
    if answer_given and observed is not None and any(x != int(x) or abs(x) >= 1000 for x in exp_nums) \
            and (any(_has_figure(row, x) for row in observed.rows() if "id" in row for x in exp_nums)
                 or any(x == int(x) and str(int(x)) in observed.last_digits() for x in exp_nums)):
        answer_given = False
    for n in text.nums:
        if n.number is None or _overlaps(covered, n.start, n.end):
            continue
        # ids after "ids" or in a list run on from one are ids only where the episode handled those records:
        # "ids 150, 152" cannot smuggle in other guesses. Read first, so that an id the request also names
        # ("ids 1, 210") still carries the list on.
        handled_id = n.integer and observed is not None and int(n.number) in observed.ids()
        # beside a figure with cents no id is a rival: the ids of records a search listed name them too ("skipped
        # ids 412, 423": blind round 101)
        handled_id = handled_id or n.integer and observed is not None and bool(exp_nums) and not counts \
            and int(n.number) in observed.ids(listed=True)
        before = re.search(r"([a-z#]+)\W{0,2}$", text.t[max(0, n.start - 24):n.start])
        if n.integer and observed is not None and before and observed.labelled(before.group(1), n.number):
            label_word, id_end = before.group(1), n.end
            continue   # a record named by its own number after its label's word: "room 9340"
        if n.integer and observed is not None and label_word and id_end and _ID_LIST.fullmatch(text.t[id_end:n.start]) \
                and observed.labelled(label_word, n.number):
            id_end = n.end
            continue   # the rest of a list of them: "rooms 9340 and 9078"
        if n.integer and before and (before.group(1) in cands.noun_words or before.group(1).endswith("#")
                                     or before.group(1) in _ID_WORDS and handled_id):
            id_end = n.end
            continue   # a record's id after its noun: "order 57", "#12", "ids 19"
        if handled_id and id_end and _ID_LIST.fullmatch(text.t[id_end:n.start]):
            id_end = n.end
            continue   # the rest of a list of ids: "scripts 19, 62 and 39"
        if handled_id and re.search(r"[^\W\d_]\s*\(\s*$", text.t[max(0, n.start - 24):n.start]) \
                and re.match(r"\s*[,;)]", text.t[n.end:]):
            id_end = n.end
            continue   # a handled record's id in brackets after its name: "East (138, Sun 2026-05-10)"
        told = answer_given and n.start >= message_from and not text.hedged(n.start, n.end, covered) \
            and not (text.put_beside(n.start) and not _working(text, n.start, n.end))   # "the other 11 make" a subtotal
        if told and id_end and not n.integer and _ID_LIST.fullmatch(text.t[id_end:n.start]):
            told = False   # a figure run on from a list of ids ("ids 412 and 26121.04"): not one of them
        verdict = told_figure(n) if told else "put"
        if verdict == "rival":
            competing.append(_fmt(n.number))   # a figure glossed as a record's own that it does not hold
            spans_seen.append((n.start, n.end))
            continue
        if verdict == "skip":
            continue
        claim = told   # put forward beside the answer: no count of things or measurement excuses it
        word_after = re.match(r"[ \t-]*([a-z][a-z'-]*)", text.t[n.end:])
        counted = n.integer and not n.currency and word_after is not None \
            and word_after.group(1) not in _NOT_COUNTED | _UNITS | count_words \
            and not _OR_BEFORE.search(text.t[text.sentence(n.start)[0]:n.start])   # "all 10 boat tours"
        part = bool(parts) and not counted and n.start >= message_from \
            and any(math.isclose(n.number, w, rel_tol=0, abs_tol=0.005) for w in parts)
        # a number the request gave is an echo of it ("rating 5 has 4"), not a guess - unless the answer lists it
        # on its own beside the expected one ("4, 5", "4 (5%)"): then it is a second answer like any other
        listed_echo = exp_nums and n.start < message_from and text.bare(n.start, n.end, covered)
        if (cands.stated.has_number(n.number) and not listed_echo) \
                or (allowed_mentions is not None and allowed_mentions.has_number(n.number)):
            if part:   # a written figure the request gave ("capped at 5000.00"): one of the parts, never a rival
                named_parts.append((n.number, -1, -1))
            continue
        after_code = _AFTER_CODE.search(text.t[max(0, n.start - 48):n.start])
        if after_code is None and observed is not None:
            # a code of letters only ("HHESEU (4,866.38)"): a record's own figure after it, where the results
            # showed that record holding it
            lettered = _AFTER_LETTERS.search(text.t[max(0, n.start - 24):n.start])
            code = lettered and (lettered.group(1) or lettered.group(2))
            after_code = lettered if code and observed.holds(value_key(code), n.number) else None
        # in the words to the user, a record's own figure in brackets after its name glosses it ("YCT Pilot
        # (190,733.47)": blind round 100), as after its code
        ahead = re.search(r"([^\W\d_][^()\n]{0,60}?)\s*\(\s*$", text.t[max(0, n.start - 64):n.start])
        glossed = n.start >= message_from and observed is not None and ahead is not None \
            and re.match(r"\s*[,;)]", text.t[n.end:]) is not None and observed.glossed(ahead.group(1), n.number)
        if cands.explained.has_number(n.number) and not text.asserted(n.start, n.end) \
                and (after_code or glossed or not text.bare(n.start, n.end, covered)) \
                and not (scoped and text.put_beside(n.start)):
            continue   # the request's own arithmetic explained ("MBR-209198 (112.80) skipped"), never put forward
        if any(math.isclose(n.number, x, rel_tol=0, abs_tol=tolerance) for x in exp_nums):
            continue
        if counts and not n.integer and n.start >= message_from and after_code and observed is not None \
                and observed.holds(value_key(next(g for g in after_code.groups() if g)), n.number):
            continue   # beside a count, a record's own figure after its code: "DO-28980489 (8.96)"
        if _covered(within_names, n.start, n.end):
            continue   # a number inside a name or address the results held: "500 Butler Overpass Apt. 256"
        digits = re.sub(r"\D", "", text.t[n.start:n.end])
        if n.integer and observed is not None and len(digits) >= 4 \
                and any(k.endswith(digits) and k != digits for k in observed.handled()):
            continue   # the last digits of a record the episode handled: "card -3990", "ending 8317"
        if n.integer and observed is not None and n.start >= message_from and digits in observed.last_digits() \
                and not text.asserted(n.start, n.end) and not text.bare(n.start, n.end, covered) \
                and not any(x == int(x) and len(str(int(x))) == len(digits) for x in exp_nums):
            continue   # in the words to the user, a card named as its owner knows it: "refunded to Mastercard 8795"
        if part and after_code:
            continue   # a record's new figure after its code: "EVT-39704 to 111.95"
        if part:
            named_parts.append((n.number, n.start, n.end))
            continue   # a figure the episode wrote: a part of the answer, no guess at it (if they add up, below)
        if negated(n.start, n.end):
            continue
        after = re.match(r"[ \t-]*([a-z][a-z'-]*)", text.t[n.end:])
        if after and after.group(1) in _NOT_COUNTED:
            after = None   # "3 of them" counts; "16 it is …" (a run-on) does not
        if n.integer and not n.currency and after and after.group(1) not in _UNITS and after.group(1) not in count_words \
                and not claim and not _OR_BEFORE.search(text.t[text.sentence(n.start)[0]:n.start]):
            continue   # a count of things: "the 3 payments", "2 of them" (not "or 4 of them", "that came to 12 threads")
        if n.integer and not n.currency and not after and observed is not None and 0 < n.number <= len(observed.ids()) \
                and re.search(r"\b(?:the(?: other| remaining)?|all|both)\s+$", text.t[max(0, n.start - 20):n.start]) \
                and not re.match(r"\s*(?:%|percent\b)", text.t[n.end:]):
            continue   # a group of the records the episode handled, counted: "+2% for the other 8 (ids 3, 36, …)"
        if n.start >= message_from and (n.currency or after and after.group(1) in _MEASURES
                                        or re.match(r"\s*(?:%|percent\b)", text.t[n.end:])) and not answer_measured \
                and not claim:
            continue   # "TSK-2 (8.0 h)" to the user beside a count: a measurement of something else, no guess
        shown = _fmt(n.number)
        if "number" in slots:
            competing.append(shown)
        else:
            further.append((shown, n.start, n.end))
            kinds[n.start, n.end] = "number"
        spans_seen.append((n.start, n.end))
    for x in exp_nums:   # two figures within the tolerance of one expected value: a hedge between them
        near = {round(n.number, 4): n for n in text.nums if n.number is not None
                and math.isclose(n.number, x, rel_tol=0, abs_tol=tolerance) and not negated(n.start, n.end)}
        if len(near) > 1:
            competing += [_fmt(v) for v in sorted(near, key=lambda v: abs(v - x))[1:]]
    if named_parts and not _adds_up([x for x, _, _ in named_parts], exp_nums[0], tolerance):
        for x, a, b in named_parts:
            if a < 0:
                continue   # the request's own figure
            if "number" in slots:
                competing.append(_fmt(x))
            else:
                further.append((_fmt(x), a, b))
                kinds[a, b] = "number"
            spans_seen.append((a, b))
    # names and other multi-word values the episode's results showed; category words listed bare
    if observed is not None:
        for key, shown in observed.names().items():
            if key in exp_keys or mentioned_key(key) or key in cands.keys():
                continue
            for a, b in table.get(key, ()):
                # a code inside the name ("Q2" of "Q2 stay booking") gives way to the whole name
                inner = [sp for sp in spans_seen if a <= sp[0] and sp[1] <= b and kinds.get(sp) == "code"]
                if _overlaps(covered, a, b) or _overlaps([sp for sp in spans_seen if sp not in inner], a, b) \
                        or negated(a, b):
                    continue
                further[:] = [f for f in further if (f[1], f[2]) not in inner]
                spans_seen[:] = [sp for sp in spans_seen if sp not in inner]
                if scoped and a < message_from and text.put_beside(a):
                    spans_seen.append((a, b))
                    competing.append(shown)   # an answer that reports "other records show <name>": a second guess
                    break
                if key in observed.handled_names():
                    references.append((a, b))   # the name of a record the episode handled on its own
                    break
                glossed = re.search(r"([\w-]*\d[\w-]*)\s*\(\s*$", text.t[max(0, a - 48):a])
                if glossed and observed.names_record(value_key(glossed.group(1)), key):
                    references.append((a, b))   # "LST-8464041 (Main consigned piece)": the title of the record named
                    break
                spans_seen.append((a, b))
                further.append((shown, a, b))
                kinds[a, b] = "name"
                break
    # Category words (the env's enum values) and single words the results held, asserted on their own
    # ("magazine, inactive", "It is inactive."): another value listed beside the answer, so it competes.
    bare_words = dict(cands.vocab_keys)
    bare_words.update(cands.allowed_words)
    if observed is not None:
        for key, shown in observed.words().items():
            bare_words.setdefault(key, shown)
    taken = covered + spans_seen
    for key, shown in bare_words.items():
        # A word the request names ("the in review project") may be echoed in a sentence, but listed on its
        # own beside the answer ("approved (in_review)") it is asserted like any other.
        said_key = cands.said.has_key(key)
        if key in exp_keys or (allowed_mentions is not None and allowed_mentions.has_key(key)) \
                or (mentioned_key(key) and key not in cands.allowed_words and key not in cands.vocab_keys) \
                or key in cands.keys() \
                or key in _CURRENCIES or key in _UNITS or key in _FUNCTION_WORDS:
            continue
        for a, b in table.get(key, ()):
            if _overlaps(taken, a, b) or negated(a, b):
                continue
            if re.match(r"[\s*_\"']*:", text.t[b:]):
                continue   # a label or a key, "**Answer:** Kathy Santana", {"answer": …}: it names what follows
            if a >= message_from and ("code" if _CODE.fullmatch(shown.lower()) else "name") not in answer_kinds \
                    and not text.asserted(a, b):
                continue
            # a word listed on its own, or (in an answer to a question) reported of "other records": another
            # value asserted
            if text.bare(a, b, taken) or (scoped and not said_key and text.about_others(a)):
                competing.append(shown)
                spans_seen.append((a, b))
                break
    if "number" in slots and exp_nums:   # a number written as a word, listed beside the answer ("4, five")
        for m in _WORD_NUMBER.finditer(text.t):
            got = word_numbers(m.group(0))
            listed_echo = m.start() < message_from and text.bare(m.start(), m.end(), covered + spans_seen)
            if not got or _overlaps(covered, m.start(), m.end()) or (mentioned_number(got[0][0]) and not listed_echo) \
                    or any(math.isclose(got[0][0], x, rel_tol=0, abs_tol=tolerance) for x in exp_nums):
                continue
            if text.bare(m.start(), m.end(), covered + spans_seen) and not negated(m.start(), m.end()):
                competing.append(m.group(0))
                spans_seen.append((m.start(), m.end()))
    # A value of another kind is incidental in a sentence ("for order 57", "the 3 payments"), but listed on
    # its own ("83.00 (16)", "USPS, 9400…, jane@x.com", a table cell, a JSON item) it is one more value asserted.
    taken_all = covered + spans_seen

    def glosses(a: int) -> bool:
        """Does the value at ``a`` gloss a reference just before it ("457-4173-3355 (Essential day)")?"""
        return any(e <= a and re.fullmatch(r"\s*[(,:\u2013-]\s*", text.t[e:a]) for _, e in references)

    for a, b in references:
        if scoped and a < message_from and text.put_beside(a):
            competing.append(text.t[a:b])   # a record handled, put forward in the answer as "other records show"
            continue
        if text.bare(a, b, taken_all + references) and not text.apposition(a, taken_all) and not glosses(a):
            further.append((text.t[a:b], a, b))
            kinds[a, b] = "code"
    for shown, a, b in further:
        kind = kinds.get((a, b))
        if scoped and a < message_from and text.put_beside(a):
            competing.append(shown)   # "The answer is X. Other records show Y.": a second guess, whatever its kind
            continue
        if a >= message_from and (kind not in answer_kinds or kind == "code" and _shape(shown) not in answer_shapes):
            if text.asserted(a, b):
                competing.append(shown)   # "It is 05:00." beside an id: a second answer, whatever its kind
            continue
        (competing if text.bare(a, b, taken_all) and not text.apposition(a, taken_all) else extras).append(shown)
    # In the message, "processing) or ORD-7582923 (returned" joins two records: another record's code beside a
    # value is no second guess of it.
    guesses = [sp for sp in spans_seen if sp[0] < message_from or kinds.get(sp) != "code"
               or _shape(text.t[sp[0]:sp[1]]) in answer_shapes]
    hedged = [text.t[a:b] for a, b in stated if text.hedged(a, b, guesses + [s for s in stated if s != (a, b)])]
    strong = _STRONG_HEDGE.search(text.t)
    if strong:
        hedged.append(strong.group(0))   # "or maybe", "either … or", "could also be": a second guess anywhere
    for a, b in spans_seen:   # a further value in a hedged clause ("It could also be X")
        c0, c1 = text.clause(a)
        if _HEDGE.search(text.t[c0:max(c1, b)]):
            hedged.append(text.t[a:b])
            break
    detail = f"answer {text.raw[:80]!r}"
    if missing:
        detail += f"; missing {', '.join(m[:40] for m in missing[:3])}"
    if hedged:
        detail += f"; hedged around {hedged[0][:40]!r}"
    if competing:
        detail += f"; also names {', '.join(c[:40] for c in competing[:3])}{' …' if len(competing) > 3 else ''}"
    # the records the answer is about may be named in it ("TRK-1: 2026-05-24"), but `answer` listing more of the
    # request's codes than it has values, beside words to the user, is a list of every record, not an answer
    if len(named_codes) > max(DUMP_LIMIT, len(exp)):
        extras += named_codes
    dump = len(extras) >= DUMP_LIMIT
    if dump:
        detail += f"; names {len(extras)} further values ({', '.join(x[:30] for x in extras[:3])} …): a list of guesses"
    ok = not missing and not competing and not hedged and not dump
    return Match(ok, detail if not ok else f"answer {text.raw[:80]!r} matches", tuple(missing), tuple(competing + extras * dump))


def _adds_up(figures: list[float], total: float, tolerance: float) -> bool:
    """Do the figures named add up to ``total`` (each named once, or some named again beside it)?"""
    for named in (figures, list(dict.fromkeys(figures))):
        if len(named) >= 2 and math.isclose(sum(named), total, rel_tol=0, abs_tol=tolerance * len(named)):
            return True
    return False


def split_list(answer: Any) -> list[str]:
    """Members of a list answer: JSON arrays, or text split on commas, semicolons, "and", newlines, bullets."""
    if isinstance(answer, list):
        return [as_text(a).strip() for a in answer]
    text = as_text(answer)
    try:
        parsed = json.loads(text)
        if isinstance(parsed, list):
            return [as_text(a).strip() for a in parsed]
    except ValueError:
        pass
    text = layout_free(text)
    parts = re.split(r"\s*(?:[,;\n]|\band\b)\s*", text.strip())
    return [p.strip(" .") for p in parts if p and p.strip(" .")]


def match_set(answer: Any, expected: Sequence[Any], candidates: Candidates | None = None,
              observed: Observed | None = None) -> Match:
    """Exactly the expected members: each present, and nothing else named."""
    if candidates is not None and candidates.keys():
        return match_values(answer, expected, candidates, numeric=False, observed=observed)
    got = {value_key(m) for m in split_list(answer)}
    want = {value_key(m) for m in expected}
    ok = got == want
    return Match(ok, f"members {sorted(got)[:6]} vs {sorted(want)[:6]}", tuple(sorted(want - got)), tuple(sorted(got - want)))


# ------------------------------------------------------------------------------------------ refusals


def refuses(answer: Any) -> bool:
    """Does the text decline (any negation: can't / can’t / cannot / unable / not able / won't …)?"""
    return bool(_NEGATION.search(fold(as_text(answer))))


def declines_strongly(answer: Any) -> bool:
    """Does the text say it will not or cannot do something (not merely contain a "not")?"""
    return bool(_STRONG_DECLINE.search(fold(as_text(answer))))


def request_verbs(instruction: str) -> list[str]:
    """The past forms of the actions an instruction asks for ("please cancel …" → cancelled, canceled)."""
    out: list[str] = []
    for m in _REQUEST_VERB.finditer(fold(instruction)):
        v, after = m.group(1), m.group(2) or ""
        if v in ("you", "the", "help", "have", "get", "know", "tell", "check", "see", "find", "look"):
            continue
        if v in ("give", "make") and after in ("me", "us", "you", "him", "her", "them", "sure", "a", "an"):
            continue   # "give me the total", "make sure": asks for no action
        out.append(_past(v))
        if v.endswith("l") and not v.endswith("ll"):
            out.append(v + "led")   # cancel -> cancelled
        out += claim_forms(v)   # give notice -> given, gave, gived
    return list(dict.fromkeys(out))


def _past(verb: str) -> str:
    if verb.endswith("e"):
        return verb + "d"
    if verb.endswith("y") and len(verb) > 2 and verb[-2] not in "aeiou":
        return verb[:-1] + "ied"
    if re.fullmatch(r"[a-z]*[^aeiou][aeiou][bdgmnprt]", verb) and len(verb) <= 4:
        return verb + verb[-1] + "ed"   # stop -> stopped
    return verb + "ed"


def _foreign_claim() -> re.Pattern[str]:
    global _FOREIGN_CLAIM
    if _FOREIGN_CLAIM is None:
        alt = "|".join(re.escape(fold(w)) for w in sorted(_FOREIGN_DONE, key=len, reverse=True))
        _FOREIGN_CLAIM = re.compile(rf"(?<![\w'])(?:{alt})(?![\w'])")
    return _FOREIGN_CLAIM


def _undo_double_negation(clause: str) -> str | None:
    """The positive statement a doubly negated clause makes ("I can't say I didn't cancel it" → "i cancelled
    it", "I cannot deny it was cancelled" → "it was cancelled"), or None when the clause is no such form."""
    m = _SPEECH_NEGATION.search(clause)
    if m is None:
        return None
    rest = clause[m.end():]
    verb = re.search(r"(say|claim|pretend|tell you|deny|dispute|hide|lie)\b(?:\s+that)?$", m.group(0))
    if verb and verb.group(1) in ("deny", "dispute", "hide", "lie"):
        return None if _SCOPE_NEGATION.search(rest) else rest
    if not _SCOPE_NEGATION.search(rest):
        return None   # "I can't say when it ships": no claim

    def positive(n: re.Match[str]) -> str:
        word = n.group(1)
        aux = n.group(0).split()[0].replace("n't", "")
        if aux in ("did", "didn't") or n.group(0).startswith("did"):
            return _past(word) if not word.endswith("ed") else word
        return f"{aux} {word}".replace("never ", "")
    return _DID_NOT.sub(positive, rest)


_OVERRIDE = re.compile(r"\b(?:went ahead|go(?:ne)? ahead|did it anyway|done it anyway|anyway|regardless|nonetheless|"
                       r"nevertheless|despite|even though|override|overrode|overridden|forced?)\b")
_PLURAL_SUBJECT = re.compile(r"\b(?:they|them|these|those|the \d+|(?:\d+|two|three|four|five|six|seven|eight|nine|ten|"
                             r"eleven|twelve) of (?:them|the|\d+)|\d+(?:\s+[a-z]+){0,2}?\s+[a-z]+s)\b")
#: A result said under a condition ("shipped it only when its date matched", "if you want it allocated"): no claim.
_CONDITIONED = re.compile(r"\b(?:if|unless|only (?:when|if|where)|whether|should you|in case|once you)\b")
_ALL_OF_THEM = re.compile(r"\b(?:all|every|everything|each|both)\b(?!\s+(?:else|other|others|the other|the others|the rest|remaining))|"
                          r"\b(?:including|included|too|as well)\b")


def _names_only_others(clause: str, about_keys: Sequence[str]) -> bool:
    """Does ``clause`` name records by their codes, none of them a refused one?"""
    codes = [value_key(m.group(0)) for m in _CODE.finditer(clause)]
    return bool(codes) and not any(c in about_keys for c in codes)


def claims(answer: Any, results: Sequence[str], about: Sequence[str] = (), *, partial: bool = False,
           reasons: Sequence[Any] = (), quotes: frozenset[tuple[str, ...]] = frozenset()) -> str | None:
    """The first clause that claims the forbidden action happened, or None.

    A claim is a clause without a negation that says so in general ("done", "I went ahead", "it has
    been taken care of", "successfully") or names one of ``results`` (the action's result: "it has
    been deactivated", "I cancelled it", "now closed"). ``about``: the refused records and values;
    with ``partial`` (other parts were rightly done), a result claim must name one of them. ``reasons``:
    the blocking values, which are no claim even when they read like one (a status "done", "completed")."""
    blocking = {fold(str(r)).strip() for r in reasons if str(r).strip()}
    result_words = [fold(r) for r in results if r and value_key(r) and fold(r) not in blocking]
    # a status "notice_given" is said "notice given"; and "I gave notice", "given notice", "it has been gived" too
    result_words += [re.sub(r"[_-]+", " ", r) for r in result_words if re.search(r"[_-]", r)]
    for r in list(result_words):
        ws = r.split()
        for i, w in enumerate(ws):
            if w in IRREGULAR_BASE:
                rest = " ".join(ws[:i] + ws[i + 1:])
                for f in claim_forms(IRREGULAR_BASE[w]):
                    result_words += [f] + ([f"{f} {rest}", f"{rest} {f}"] if rest else [])
    result_words = [r for r in dict.fromkeys(result_words) if r not in blocking]
    about_keys = [value_key(a) for a in about if value_key(a)]
    raw = layout_free(as_text(answer))
    # A run-on sentence ("… does not allow it It has been done") starts a new clause at the capital.
    # (Not after a verb of saying: "I can't say I didn't …" is one statement.)
    raw = re.sub(r"(?<=[a-z0-9])(?<!\bsay)(?<!\bclaim)(?<!\bdeny)(?<!\bthat)(?<!\bpretend)\s+"
                 r"(?=(?:It|I|This|That|Done|Update|Actually|Also|Now|Anyway)\b)", "\n", raw)
    text = _unquote(fold(raw), quotes)   # a quotation of the policy claims nothing
    # "given that it is terminated" / "given the policy": the preposition, not the participle
    text = re.sub(r"(?<!\bbeen )(?<!\bwas )(?<!\bwere )(?<!\bis )(?<!\bare )(?<!\bhas )(?<!\bhave )(?<!\bhad )"
                  r"\bgiven(?=\s+(?:that|the|its|their|this|these|those|how|what|your|his|her|our)\b)",
                  "seeing", text)
    if partial:
        # "Completed JOW and HYM (in_review -> done)": a status arrow in brackets glosses the clause before it,
        # no claim about the refused record - unless it or that clause names it
        def gloss(m: re.Match[str]) -> str:
            before = re.split(r"[.!?;\n]", m.string[:m.start()])[-1]
            said_of_refused = any(k in runs(words(before + " " + m.group(1))) for k in about_keys)
            return m.group(0) if said_of_refused else " "

        text = re.sub(r"\(([^()]*(?:->|→|=>|\bnow\b)[^()]*)\)", gloss, text)

        # "Done: published JOW and HYM.", "Withdrawn: ROLE-41103978, ROLE-97227481." - a heading over a list of
        # the parts done, where that sentence names records by their codes, none of them refused, and never all
        # of them
        def heading(m: re.Match[str]) -> str:
            rest = re.split(r"[.!?\n]", m.string[m.end():])[0]
            listed = _names_only_others(rest, about_keys) or rest.count(",") >= 1 and not any(
                k in runs(words(rest)) for k in about_keys)   # a list of user names, none of them refused
            return " " if listed and not _ALL_OF_THEM.search(rest) else m.group(0)

        heads = "|".join(["done", "completed", "finished", "processed",
                          *(re.escape(r) for r in sorted(set(result_words), key=len, reverse=True))])
        text = re.sub(rf"(?:^|(?<=[.!?\n]))\s*(?:{heads})\s*(?:\([^()]*\)\s*)?:", heading, text)
    # A blocking status that is itself a word of completion ("done") is the reason where it is said of the
    # record ("it is done", "status: done"); standing alone as a clause ("... while it is done. Done!") it
    # is the claim - unless it is the whole of a separate ``answer`` (the slot's value, beside a message).
    submitted = getattr(answer, "submission", None)
    slot_value = {p.strip(" \t\"'*_!.?") for p in _CLAIM_CLAUSE.split(fold(layout_free(submitted.answer or "")))} \
        if submitted is not None and (submitted.message or submitted.outcome) else set()
    for value in blocking & _COMPLETION_WORDS:
        unlabelled = re.sub(r"\b[a-z_]+\s*:\s*" + re.escape(value) + r"(?![\w-])", " the-status ", text)
        alone = [p.strip(" \t\"'*_!.?") for p in _CLAIM_CLAUSE.split(unlabelled)].count(value)
        if alone > (1 if value in slot_value else 0):
            return value
    for value in sorted(blocking, key=len, reverse=True):   # the record's own status is the reason, not a claim
        text = re.sub(r"(?<![\w-])" + re.escape(value) + r"(?![\w-])", " the-status ", text)
    if blocking & _COMPLETION_WORDS:   # "it is already done (finished)": a gloss of the status, not a claim
        text = re.sub(r"the-status\s*(?:\(\s*(?:already\s+)?(?:" + "|".join(_COMPLETION_WORDS) + r")\s*\)|"
                      r"(?:,\s*|\s+)(?:i\.e\.|that is|meaning)\s*,?\s*(?:already\s+)?(?:"
                      + "|".join(_COMPLETION_WORDS) + r")\b)", " the-status ", text)
    pieces = _CLAIM_CLAUSE.split(text)
    for clause in pieces:
        if not _WORD.search(clause):
            continue
        if _CLAIM_NEGATIVE_FORM.search(clause) and not (partial and _OTHER_PARTS.search(clause)):
            return clause.strip()[:80]   # "no further action needed"
        if _SCOPE_NEGATION.search(clause) or _NEGATION.search(clause):
            flipped = _undo_double_negation(clause)
            if flipped is None or _SCOPE_NEGATION.search(flipped):
                continue
            clause = flipped
        if _CONDITIONED.search(clause) and not _OVERRIDE.search(clause):
            continue   # "shipped it only when its date matched", "if you want it allocated": said under a condition
        if _CLAIM_GENERIC.search(clause.strip()) or _CLAIM_MORE.search(clause.strip()) or _foreign_claim().search(clause):
            # With other parts rightly done, "the other 4 went through" or "SJ4582 and ZL4474 went through" is a
            # true fact about them, not a claim about the refused part - unless the clause also names a refused
            # record or value, or speaks of all of them ("all went through, SJ4582 included").
            names_refused = any(k in runs(words(clause)) for k in about_keys)
            others = _OTHER_PARTS.search(clause)
            everyone = _ALL_OF_THEM.search(clause)
            if partial and (others or _names_only_others(clause, about_keys)) and not names_refused \
                    and (not everyone or others and others.start() < everyone.start()):
                continue   # "the other ten (…) all matched and are now failed": all of the others
            # "(they were in progress and are now done)": beside the parts rightly done, a completion said of
            # "they" / "the 3" (no refused record, no "it", no "all") is about those parts; overriding ("went
            # ahead", "anyway") is a claim wherever it stands.
            if partial and not names_refused and not _OVERRIDE.search(clause) and not _ALL_OF_THEM.search(clause) \
                    and _PLURAL_SUBJECT.search(clause) and not re.search(r"\b(?:it|it's|this|that)\b", clause):
                continue
            return clause.strip()[:80]
        if not result_words:
            continue
        alt = "|".join(re.escape(r) for r in sorted(set(result_words), key=len, reverse=True))
        names_result = re.search(rf"\b(?:{alt})\b", clause)
        if not names_result:
            continue
        spans = runs(words(clause))
        names_about = any(k in spans for k in about_keys)
        subject_claim = re.search(
            rf"\b(?:{_SUBJECTS}|i|we)\s*(?:'s|'ve|'re|is|was|are|were|has|have|had|got|just|already|also|now|been|"
            rf"successfully|\s)*\s*(?:{alt})\b|\b(?:now|successfully)\s+(?:{alt})\b|\b(?:{alt})\s+(?:it|this|that|them)\b|"
            rf"\b(?:{alt})\s+(?:as requested|as asked|as you asked|per your request|for you|successfully|now)\b|"
            rf"^\W*(?:{alt})\W*$",
            clause.strip())
        if partial:
            # Other parts were rightly done ("I cancelled #W1"): a result claims the refused part when it names
            # a refused record or value, or says it of "it" ("It has been cancelled", "I have cancelled it"),
            # or says it of nothing in particular ("Cancelled as requested.", "Cancelled.") - unless the clause
            # names another record or the other parts.
            pronoun = re.search(rf"\b(?:it|this|that)\s*(?:'s|is|was|has|have|had|got|just|already|also|now|been|\s)*"
                                rf"\s*(?:{alt})\b|\b(?:{alt})\s+(?:it|this|that)\b", clause)
            blanket = re.search(rf"\b(?:{alt})\s+(?:as requested|as asked|as you asked|per your request|for you|"
                                rf"successfully)\b|^\W*(?:{alt})\W*$", clause.strip())
            names_other = bool(_OTHER_PARTS.search(clause)) or any(
                value_key(m.group(0)) not in about_keys for m in _CODE.finditer(clause))
            # "the lease status is now notice_given", "it now shows notice given": a state said to hold now
            # (said of "it" or of one record; "(now active)" after the parts done glosses them)
            now_holds = re.search(rf"\b(?:it|its|this|that|status|the\s+[a-z]+)\b.*?\bnow\s+"
                                  rf"(?:(?:shows?|reads?|is|are|has|have|set to|marked(?: as)?)\s+)?(?:{alt})\b", clause)
            if names_about or pronoun or ((blanket or now_holds) and not names_other):
                return clause.strip()[:80]
            continue
        if subject_claim or names_about:
            return clause.strip()[:80]
    return None


def match_refusal(answer: Any, reasons: Sequence[Sequence[Any]] = (), candidates: Candidates | None = None, *,
                  results: Sequence[str] = (), about: Sequence[str] = (), declared: bool | None = None,
                  observed: Observed | None = None, evidence: Sequence[Any] | None = None,
                  partial: bool = False, records: Sequence[dict[str, Any]] = (), done: int | None = None) -> Match:
    """A refusal with evidence: it gives one of the ``reasons`` (each a list of the blocking record's
    values that must all appear, with no competing value of their slot and no hedge), the episode's
    lookups returned one of ``evidence`` (default: the reasons' values and ``about``), and it claims
    none of ``results``. ``declared``: the outcome was given explicitly (then the words need not
    decline); by default read from ``answer`` (see :class:`~agentworld_envs.engine.submission.SubmittedText`).
    ``done``: in a partial refusal, how many records the allowed parts changed ("Finished 7 flight slots"), a count
    beside the reason rather than a rival value of its slot."""
    if declared is None:
        declared = bool(getattr(getattr(answer, "submission", None), "outcome", None))
    if answer is None or (isinstance(answer, str) and not answer.strip()):
        return Match(False, "no answer submitted")
    if not declared and not refuses(answer):
        return Match(False, f"answer {as_text(answer)[:80]!r} does not decline")
    instruction = candidates.instruction if candidates is not None else ""
    claim = claims(answer, [*results, *request_verbs(instruction)], about, partial=partial,
                   reasons=[v for alt in reasons for v in alt if isinstance(v, str) and as_number(v) is None],
                   quotes=candidates.quotes if candidates is not None else frozenset())
    if claim:
        return Match(False, f"claims the forbidden action happened: {claim!r}")
    # "at most 1 queued (or possibly failed) or running step": a second guess inside a restated rule is a hedge
    # too - the policy's own words are blanked, the guess is not
    said = fold(layout_free(as_text(answer)))
    unquoted = _unquote(said, candidates.quotes if candidates is not None else frozenset())
    for m in _STRONG_HEDGE.finditer(said):
        if re.search(r"[a-z]", unquoted[m.start():m.end()]):
            return Match(False, f"refusal hedges: {m.group(0)[:40]!r}")
    if observed is not None:
        proof = list(evidence) if evidence is not None else [v for alt in reasons for v in alt] + list(about)
        if proof and not any(observed.shows(v) for v in proof):
            return Match(False, "the reason was not looked up: no tool result of this episode shows it")
        if records and not any(observed.has_record(r) for r in records):
            return Match(False, "the blocking value was not read off the refused record: no tool result of this "
                                "episode shows that record with it")
    if not reasons:
        return Match(True, "declines")
    everything = [v for alt in reasons for v in alt]
    last = Match(False, "no reason given")
    passed = None
    for alternative in reasons:
        # In a partial refusal the done parts' new status ("reactivated VAR-1 (now active)") is theirs, not a
        # rival reason; said of the refused record it is a claim, which ``claims`` reads above.
        m = match_values(answer, list(alternative), candidates, numeric=None, scoped=False, observed=observed,
                         allowed=[v for v in everything if v not in alternative] + list(evidence or ())
                         + (list(results) if partial else []) + ([done] if partial and done else []))
        if m.ok:
            passed = passed or alternative
            continue
        if not m.missing:   # the reason is given, but with a rival value of its slot or a hedge: contested
            return Match(False, "refusal gives the reason with a competing value: " + m.detail)
        if any(x.endswith(" (negated)") for x in m.missing):   # a blocking value denied: a contradiction
            return Match(False, "refusal negates its reason: " + m.detail)
        if not last.missing or len(m.missing) <= len(last.missing):
            last = m
    if passed is not None:
        return Match(True, f"declines and says why ({', '.join(as_text(v) for v in passed)[:60]})")
    return Match(False, "refusal does not give the reason: " + last.detail)
