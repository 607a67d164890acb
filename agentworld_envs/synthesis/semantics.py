"""What a column means, and the generators that make its values make sense.

The entity library describes columns generically; a theme puts them in a concrete world. This
module holds the rules that keep that world coherent, shared by synthesis (which applies them)
and the linter (which checks built environments against them):

* **Vocabularies** (``env_registry.vocabularies()``): a column takes the values of the theme's
  category, or is not generated where it does not fit.
* **Foreign-key names**: a key column is named after the table it references, optionally behind
  an explicit role (``assigned_nurse_id`` → nurses), never after another table.
* **Value semantics**: paired dates are ordered (start < end, created <= updated), a status
  timestamp is set exactly when the record has reached that status, birth dates give plausible
  ages, readings stay in their metric's range, file names and MIME types agree, and free text
  comes from templates rather than random words.
"""

from __future__ import annotations

import functools
import re
import zlib
from collections.abc import Iterable
from typing import Any

import env_registry

from ..engine.datagen import sources
from .toolcheck import NOW as WORLD_NOW   # the synthesised worlds' clock

# ---------------------------------------------------------------------------------------- vocabularies


def vocabulary_for(theme: dict[str, Any], module_key: str, column: str) -> tuple[bool, list[Any] | None]:
    """``(fits, values)`` for one module column in a theme.

    ``(True, None)``: keep the module's own values. ``(True, values)``: use the category's variant.
    ``(False, None)``: the column does not belong in this theme.
    """
    entry = env_registry.vocabularies().get(f"{module_key}.{column}")
    if entry is None:
        return True, None
    tags = {theme["l1"], theme["l2"]}
    fits = entry.get("fits", [])
    if "*" in fits or tags & set(fits):
        return True, None
    variants = entry.get("variants", [])
    for slug in (theme["l2"], theme["l1"]):
        for variant in variants:
            if slug in variant.get("for", []) and variant.get("values"):
                return True, list(variant["values"])
    return False, None


#: Records sent in to another (a survey's responses, a poll's votes, an auction's bids, a call's entries).
_SENT_IN = re.compile(r"(?:^|_)(?:responses?|votes?|ballots?|bids?|entries|entry|submissions?|nominations?|pledges?|"
                      r"rsvps?|applications?|registrations?)$")
#: The date a record stops taking them (closes on, a deadline, a cut-off); not an expected close.
_CLOSES = re.compile(r"(?:^|_)(?:closes|closing|close_date|deadline|cutoff)(?:_|$)")


def is_sent_in(table: str) -> bool:
    """Whether a table's records are sent in to the record they point at, which stops taking them on its
    closing date (:func:`closing_column`): no survey response submitted after its survey closed."""
    return bool(_SENT_IN.search(table))


#: The date a record starts taking what is sent in to it (a survey's opening day, a poll's, a call's launch).
_OPENS = re.compile(r"(?:^|_)(?:opens|opening|open_date|launch_date|launches)(?:_|$)")


def opening_column(date_columns: Iterable[str]) -> str | None:
    """The date column a record starts taking what is sent in to it on (``opens_on``), or None."""
    return next((c for c in date_columns if _OPENS.search(c)), None)


def closing_column(date_columns: Iterable[str]) -> str | None:
    """The date column a record stops taking what is sent in to it on (``closes_on``, ``deadline``), or None."""
    return next((c for c in date_columns if _CLOSES.search(c) and "expected" not in c), None)


#: Dates of what happens under a record's cover or during its run: a claim's incident or loss, a conversion
#: or click that occurred (while its campaign ran, its code or offer held).
_COVERED_EVENT = re.compile(r"^(?:incident|loss|accident|damage|injury|occurred|occurrence)(?:_date|_on|_at)?$|"
                            r"^date_of_(?:loss|incident|injury|accident|service)$")
#: A record's term: the day it takes effect or starts, and the day it ends or expires.
_TERM_START = re.compile(r"^(?:effective|start|starts|valid_from|effective_from|coverage_start|term_start|period_start|"
                         r"inception)(?:_date|_on|_at)?$")
_TERM_END = re.compile(r"^(?:expiry|expiration|expires|end|ends|valid_until|valid_to|effective_to|coverage_end|term_end|"
                       r"period_end)(?:_date|_on|_at)?$")


#: A record's time to something (a review's hours to review): from the making of what it is about to its own.
_ELAPSED = re.compile(r"^(hours|minutes|days)_to_[a-z]+$")


def elapsed_unit(column: str) -> str | None:
    """``hours``, ``minutes`` or ``days`` for a column holding the time a record took from what it is about."""
    m = _ELAPSED.match(column)
    return m.group(1) if m else None


def covered_event(column: str) -> bool:
    """Whether a date column holds what happened under the cover or run of the record it points at."""
    return bool(_COVERED_EVENT.match(column))


def term_of(date_columns: Iterable[str]) -> tuple[str, str] | None:
    """``(start, end)``: the date columns a record's term runs between (a policy's effective and expiration
    dates, a campaign's start and end dates), or None where it has no such pair."""
    cols = list(date_columns)
    start = next((c for c in cols if _TERM_START.match(c)), None)
    end = next((c for c in cols if _TERM_END.match(c)), None)
    return (start, end) if start and end else None


def money_scale(theme: dict[str, Any], module_key: str, column: str) -> dict[str, float] | None:
    """``{"min", "max"}`` of a money column in a theme whose business prices it on another scale than the
    module's default (a doula agency's support package costs hundreds, not a contractor's millions), or None."""
    ranges = env_registry.scales().get(f"{module_key}.{column}", ())
    for slug in (theme["slug"], theme["l2"]):
        for r in ranges:
            if slug in r["for"]:
                return {"min": r["min"], "max": r["max"]}
    return None


@functools.cache
def vocabulary_index() -> dict[str, set[str]]:
    """Every vocabulary value → the category slugs it belongs to (``"*"`` for any)."""
    index: dict[str, set[str]] = {}
    modules = env_registry.entity_modules()
    vocab = env_registry.vocabularies()
    # Values of columns without an entry fit everywhere; a word shared with them is not a leak.
    for key, module in modules.items():
        for col in module["columns"]:
            gen = col.get("gen", {})
            if gen.get("gen") == "choice" and f"{key}.{col['name']}" not in vocab:
                for value in gen["values"]:
                    index.setdefault(str(value), set()).add("*")
    for key, entry in vocab.items():
        module, _, column = key.partition(".")
        col = next((c for c in modules.get(module, {}).get("columns", []) if c["name"] == column), None)
        own = (col or {}).get("gen", {}).get("values", []) if (col or {}).get("gen", {}).get("gen") == "choice" else []
        for value in own:
            index.setdefault(str(value), set()).update(entry.get("fits", []))
        for variant in entry.get("variants", []):
            for value in variant.get("values", []):
                index.setdefault(str(value), set()).update(variant.get("for", []))
    return index


#: Faker providers whose values are no trade's words (a tea house's masters titled 医師, "doctor").
FOREIGN_FAKER = frozenset({"job"})
#: Columns that say what kind of thing a record is: a module renamed to a theme's own record (a tour
#: as a tea ceremony ``experience``) keeps them only with the theme's own words (``words/themes.json``).
KIND_COLUMNS = frozenset({"category", "kind", "type", "genre", "product_line", "product_type", "subcategory",
                          "condition", "suite", "format", "style", "cuisine", "species", "breed", "specialty",
                          "discipline", "sport", "line_of_business"})
def is_kind_column(ent: Any, column: str) -> bool:
    """Whether ``column`` names the kind of a renamed entity's records (its module's generic kinds)."""
    if ent.singular == ent.key:
        return False
    words = ent.key.split("_")
    return column in KIND_COLUMNS or any(column == f"{w}_type" for w in words)


def theme_words(theme: dict[str, Any], singular: str, column: str, module: str | None = None) -> list[Any] | None:
    """The theme's own words for ``singular.column`` (``env_registry/library/words/themes.json``); for a vehicle
    module's record that is no road vehicle (a boat, a balloon), its kind's words (``crafts.json``)."""
    own = env_registry.words("themes").get(theme["slug"], {}).get(f"{singular}.{column}")
    if own is not None or module is None:
        return own
    kind = craft_kind(module, singular)
    return kind["words"].get(column) if kind else None


def craft_kind(module: str, singular: str) -> dict[str, Any] | None:
    """The kind of craft (``crafts.json``: a watercraft, an aircraft, a bicycle …) a vehicle module's record
    named ``singular`` is, or None for a road vehicle or another module."""
    crafts = env_registry.words("crafts")
    if module not in crafts.get("modules", ()):
        return None
    return next((k for k in crafts.get("kinds", ()) if re.search(k["match"], singular)), None)


def job_titles(theme: dict[str, Any], ent: Any, column: str) -> list[str]:
    """Job titles in the theme's trade: built from the staff's role where the theme names one (tea master →
    Senior Tea Master), the sub-category's titles for the service's own staff, generic business titles for
    people outside it (a lead's or a candidate's title)."""
    table = env_registry.words("job_titles")
    own = "staff" in ent.roles
    if own and ent.singular != ent.key and ent.singular.split("_")[-1] in table.get("professions", ()):
        role = ent.singular.replace("_", " ").title()
        return [pattern.format(role=role) for pattern in table["seniority"]]
    if own:
        return list(table["l2"].get(theme["l2"], table["outside"]))
    return list(table["outside"])


# ------------------------------------------------------------------------------------ foreign keys


@functools.cache
def entity_nouns() -> frozenset[str]:
    """Words that name a kind of record (module keys, their tables' singulars, role names, theme renames)."""
    words: set[str] = set()
    for key, module in env_registry.entity_modules().items():
        words.add(key)
        words.update(module.get("roles", []))
    for theme in env_registry.themes():
        for ref in theme["entities"]:
            if ref.get("as"):
                words.add(ref["as"])
    return frozenset(words)


def fk_name(column: str, target_singular: str) -> str:
    """The key column's name for a module column ``column`` that resolved to ``target_singular``.

    ``repository_id`` → ``upgrade_campaign_id`` (the old noun named another table);
    ``assigned_agent_id`` → ``assigned_nurse_id`` (the role word stays);
    ``recipient_id`` → ``recipient_customer_id`` (a role with no noun gets the target's).
    """
    stem = column[:-3] if column.endswith("_id") else column
    if stem == target_singular or stem.endswith("_" + target_singular):
        return f"{stem}_id"
    parts = stem.split("_")
    nouns = entity_nouns()
    # Strip the longest trailing run of words that names a kind of record; what is left is the role.
    for i in range(len(parts)):
        if "_".join(parts[i:]) in nouns:
            role = "_".join(parts[:i])
            break
    else:
        role = stem
    return f"{role}_{target_singular}_id" if role else f"{target_singular}_id"


def fk_matches_target(column: str, table: str) -> bool:
    """The linter's rule: the column names its target (``<role>_<target singular>_id``)."""
    from .naming import plural

    if not column.endswith("_id"):
        return False
    parts = column[:-3].split("_")
    if any(plural("_".join(parts[i:])) == table or "_".join(parts[i:]) == table for i in range(len(parts))):
        return True
    # A shortened name keeps the target's head noun: item_id → order_items, refund_method_id → payment_methods.
    return plural(parts[-1]) == table.rsplit("_", 1)[-1]


# ------------------------------------------------------------------------------------------- dates

#: A date column's place in a record's life: -1 what happened before it was recorded (an incident), 0 created,
#: 1 starts, 2 ends or is due, 3 last touched.
_RANK_WORDS = (
    # what happened before the record was made: an incident, the week a timesheet reports (then submitted)
    (-1, ("incident", "occurred", "happened", "accident", "week_starting", "week_start", "week_of", "week_beginning",
          "week_commencing")),
    (0, ("created", "registered", "added", "joined", "signup", "established", "opened", "hired", "onboarded",
         "enrolled", "submitted", "requested", "placed", "ordered", "order", "booked", "applied", "filed",
         "initiated", "received", "issued", "referred", "originated", "acquired", "purchased", "purchase",
         "listed", "posted", "reported", "intake", "uploaded", "granted", "declared", "assigned")),
    (1, ("start", "starts", "started", "valid_from", "effective", "departure", "departs", "check_in", "pickup",
         "scheduled", "kickoff", "period_start", "coverage_start", "opens", "move_in", "available_from",
         "launched", "ship", "shipped", "dispatched")),
    (2, ("end", "ends", "ended", "finished", "completed", "closed", "resolved", "period_end", "valid_until",
         "expires", "expiration", "expiry", "due", "return", "termination", "closes", "target_end",
         "estimated_delivery", "delivered", "resulted", "graded", "deadline", "respond_by",
         "evidence_due_by", "decision_due", "current_period_end", "expected_close", "next_due", "expected",
         "expected_delivery", "expected_arrival", "processed")),
    (3, ("updated", "last",)),
)
#: Ranks whose values lie in the past by nature (a record cannot be updated or closed in the future).
_PAST_WORDS = ("created", "updated", "last", "completed", "closed", "resolved", "paid", "processed",
               "resulted", "graded", "delivered", "finished", "ended", "submitted", "received", "filed",
               "uploaded", "registered", "joined", "hired", "onboarded", "enrolled", "acquired", "purchased")


def date_rank(column: str) -> int | None:
    stem = re.sub(r"_(at|on|date|by|for|time)$", "", column)
    best: tuple[int, int] | None = None  # (matched length, rank): the most specific word wins
    for rank, words in _RANK_WORDS:
        for w in words:
            if stem == w or stem.startswith(w + "_") or stem.endswith("_" + w) or f"_{w}_" in f"_{stem}_":
                if best is None or len(w) > best[0]:
                    best = (len(w), rank)
    return None if best is None else best[1]


#: Things that happen to a record, besides its making, that its status answers to (an alert is triggered,
#: then acknowledged; a sample is collected, then tested; a device is installed, then goes online).
_HAPPENED_WORDS = ("triggered", "observed", "detected", "raised", "logged", "recorded", "collected", "occurred",
                   "tagged", "reported", "incurred", "installed")


def is_event_column(column: str) -> bool:
    """A date of something done to or by the record, which cannot come before the record it belongs to was
    made: its own making, what happened to it (triggered, sent, recorded), what it reached (paid, closed)."""
    return (happens_before_change(column) or is_past_column(column) or _event_word(column, ("sent",))) \
        and "birth" not in column and column != "status_changed_at"


def is_made_column(column: str) -> bool:
    """A date a record was made or came about (created, placed, observed, occurred): what the records that
    belong to it come after. A status's own stamp is not one (see ``status_stamps``)."""
    return happens_before_change(column) and "birth" not in column


def follows_parent(column: str) -> bool:
    """A date of a record that cannot come before the record it belongs to was made: what was done to or by it
    (``is_event_column``) and when it starts (a shipment's ship date, a contract's start, a session's
    scheduled time): no shipment leaves before its order was placed."""
    return is_event_column(column) or clock_role(column) == "start"   # (a birth date has no clock role)


def happens_before_change(column: str) -> bool:
    """Whether a record's status can only move after this date, once it has passed: it was made (created,
    requested, submitted) or something happened to it (triggered, collected). Not a due, start or end
    date: a review may be decided before it is due."""
    return clock_role(column) is None and (date_rank(column) in (-1, 0) or any(w in column.split("_") for w in _HAPPENED_WORDS))


def is_past_column(column: str) -> bool:
    words = column.split("_")
    if {"estimated", "expected", "scheduled", "planned", "target", "due", "next"} & set(words):
        return False  # an estimated delivery lies ahead
    return any(w in words for w in _PAST_WORDS)


#: When a record was last updated: no earlier than its last status change.
UPDATE_COLUMNS = frozenset({"updated_at", "updated_on", "last_updated_at", "modified_at", "last_modified_at"})


def ordered_pairs(date_columns: list[str]) -> list[tuple[str, str, bool]]:
    """``(earlier, later, strict)`` for every date column that follows another in a record's life.

    Each later column is tied to the latest-ranked column before it (ties: the first listed), so
    happened <= created <= starts < ends <= last touched.
    """
    ranked = [(c, date_rank(c)) for c in date_columns]
    out = []
    for col, rank in ranked:
        if rank is None or rank < 0:
            continue
        before = [(c, r) for c, r in ranked if r is not None and r < rank and c != col]
        if rank == 3:
            # Last touched follows the record's making, not its end (an end may still lie ahead).
            before = [(c, r) for c, r in before if r == 0]
        if not before:
            continue
        top = max(r for _, r in before)
        prev = next(c for c, r in before if r == top)
        out.append((prev, col, rank == 2 and top == 1))
    if "status_changed_at" in date_columns:
        # a status change is an update
        out += [("status_changed_at", c, False) for c in date_columns if c in UPDATE_COLUMNS]
    return out


def email_holder(column: str, columns: Iterable[str]) -> list[str]:
    """The name columns of the row an e-mail column belongs to: ``billing_email`` → ``billing_name``, else
    the row's full name, name or contact name, else its first and last names ([] when it has none)."""
    cols = set(columns)
    own = column[: -len("_email")] + "_name" if column.endswith("_email") else None
    names = [c for c in (own, "full_name", "name", "contact_name") if c and c in cols]
    return names[:1] or ([c for c in ("first_name", "last_name") if c in cols] if "last_name" in cols else [])


def lifecycle_rank(workflow: dict[str, Any]) -> dict[str, int]:
    """Each status's distance from the first one (the lifecycle's start) along the transitions."""
    states = list(workflow["states"])
    rank = {states[0]: 0} if states else {}
    todo = states[:1]
    while todo:
        state = todo.pop(0)
        for tr in workflow["transitions"]:
            if state in tr["from"] and tr["to"] not in rank:
                rank[tr["to"]] = rank[state] + 1
                todo.append(tr["to"])
    return rank


def forward_moves(workflow: dict[str, Any]) -> dict[str, set[str]]:
    """``{status: statuses one move ahead}``, without the moves back to an earlier status."""
    rank = lifecycle_rank(workflow)
    nexts: dict[str, set[str]] = {s: set() for s in workflow["states"]}
    for tr in workflow["transitions"]:
        for f in tr["from"]:
            if rank.get(tr["to"], 0) >= rank.get(f, 0):
                nexts.setdefault(f, set()).add(tr["to"])
    return nexts


#: Stamps named after what reaching a status does, not after the status (``granted_at`` ↔ approved).
_STAMP_ALIASES = {"granted": "approved"}
#: What a record has spent: nothing before its work starts (a draft campaign has no spend to date).
_SPENT_COLUMNS = frozenset({"spend_to_date", "spent_to_date", "amount_spent"})


def stamp_status(column: str) -> str:
    """The status a timestamp column is named after (``delivered_at`` → delivered, ``granted_at`` → approved)."""
    stem = re.sub(r"_(at|on|date)$", "", column)
    return _STAMP_ALIASES.get(stem, stem)


def status_stamps(columns: list[str], workflow: dict[str, Any]) -> dict[str, set[str]]:
    """``{timestamp column: statuses in which it is set}`` (``delivered_at`` ↔ status delivered).

    A record has the timestamp once it has reached that status: in the status itself or any status
    reachable from it by moving forward. A move back to an earlier status (retry, reopen, retrigger) is
    no way forward: an acknowledged alarm was triggered, and keeps when. When the status lies on a cycle
    of forward moves, only the status itself.
    """
    states, nexts = workflow["states"], forward_moves(workflow)
    out: dict[str, set[str]] = {}
    for col in columns:
        stem = stamp_status(col)
        if stem == col or stem not in states:
            continue
        reach, todo = set(), [stem]
        while todo:
            for n in nexts.get(todo.pop(), ()):
                if n not in reach:
                    reach.add(n)
                    todo.append(n)
        out[col] = {stem} if stem in reach else {stem} | reach
    return out



#: Statuses of a record whose work has not started (when every status before them has not either).
PRESTART_STATES = frozenset({"queued", "pending", "waiting", "draft", "new", "requested", "opened", "backlog", "todo",
                             "not_started", "scheduled", "rescheduled", "label_created", "planned"})
#: Statuses of a record at work that has not finished.
UNFINISHED_STATES = frozenset({"running", "in_progress", "processing", "checked_in", "in_transit", "boarding",
                               "out_for_delivery", "under_review", "in_review", "awaiting_info", "investigating"})
_STARTED_WORDS = ("started", "began", "commenced", "checked_in", "picked_up", "dispatched", "executed", "acknowledged",
                  "sent", "login")
#: What a draft has not been yet.
_DRAFT_WORDS = ("submitted", "issued", "sent", "signed", "filed")
_FINISHED_WORDS = ("finished", "completed", "ended", "resolved", "closed", "delivered", "paid", "approved", "rejected",
                   "decided", "graded", "resulted", "processed", "checked_out", "mitigated", "published", "fulfilled",
                   "settled", "returned")
#: Columns holding what came of finished work: a scheduled interview has no score yet, an unplayed fixture no
#: home score, a new ticket no satisfaction rating.
OUTCOME_COLUMNS = frozenset({"exit_code", "result", "result_code", "outcome", "duration_seconds", "duration_ms",
                             "winner_id", "billable_minutes", "final_score", "issues_found", "defects_found", "passed",
                             "score", "recommendation", "mood_score", "home_score", "away_score", "csat_score",
                             "satisfaction_rating", "feedback_rating"})
#: An outcome's values that say nothing has been decided yet: what an unfinished record holds, never a
#: finished one (a decided dispute is not "undecided").
UNDECIDED_VALUES = frozenset({"undecided", "pending", "tbd", "undetermined", "unknown", "unresolved", "not_decided",
                              "awaiting_decision", "none"})
#: Statuses of a record called off before it came to an end (a cancelled hearing has no outcome).
_CALLED_OFF = re.compile(r"cancel|withdr|void|abandon|scratch|no_show|called_off")
#: Columns holding what came of finished work by their names: the winner of a game, a final mark (a
#: ``final_…_id`` is a document the record points at, not an outcome).
_OUTCOME_NAME = re.compile(r"^winner_|^final_(?!.*_id$)")


def _event_word(column: str, words: tuple[str, ...]) -> bool:
    stem = re.sub(r"_(at|on|date)$", "", column)
    return stem != column and any(stem == w or stem.endswith("_" + w) or stem.startswith(w + "_") for w in words)


def prestart_states(workflow: dict[str, Any]) -> set[str]:
    """The statuses a record sits in before its work starts: from the first status, the pre-start ones
    reached without passing any other (a ticket 'pending' on the customer has been opened)."""
    states = list(workflow["states"])
    if not states or states[0] not in PRESTART_STATES:
        return set()
    out, todo = {states[0]}, [states[0]]
    while todo:
        state = todo.pop()
        for tr in workflow["transitions"]:
            if state in tr["from"] and tr["to"] in PRESTART_STATES and tr["to"] not in out:
                out.add(tr["to"])
                todo.append(tr["to"])
    return out


def called_off_states(workflow: dict[str, Any]) -> set[str]:
    """The statuses of a record called off before it came to an end (a hearing cancelled, an enrolment
    withdrawn, a job voided): it has no outcome, whenever it was called off."""
    states = list(workflow["states"])
    return {s for s in states[1:] if _CALLED_OFF.search(s)}


def called_off_before_start(workflow: dict[str, Any]) -> set[str]:
    """The called-off statuses reached before the thing begins (cancelled, withdrawn, not a no-show, which is
    only known once it should have begun)."""
    return {s for s in called_off_states(workflow) if "no_show" not in s}


def called_off_ahead(workflow: dict[str, Any]) -> set[str]:
    """The called-off statuses (``called_off_before_start``) reached only from statuses whose start lies ahead on
    the workflow's clock (a hire cancelled from requested or confirmed): called off before the start."""
    ahead = {s for s, roles in (workflow.get("clock") or {}).items() if roles.get("start") == "future"}
    ahead |= prestart_states(workflow)
    into: dict[str, set[str]] = {}
    for tr in workflow.get("transitions", ()):
        into.setdefault(tr["to"], set()).update(tr["from"])
    return {s for s in called_off_before_start(workflow) if into.get(s) and into[s] <= ahead}


def dropped_before_start(workflow: dict[str, Any]) -> set[str]:
    """The statuses a record reaches only from before its work started (a task dropped as "won't do" from the
    backlog): it never started, so it has no start, no actual cost and no time spent."""
    before = prestart_states(workflow)
    into: dict[str, set[str]] = {}
    for tr in workflow["transitions"]:
        into.setdefault(tr["to"], set()).update(tr["from"])
    return {s for s, froms in into.items() if before and s not in before and froms <= before and is_shut(s)}


#: Statuses of a record that is shut for good or for now (a vehicle taken out of service, a product
#: discontinued, a supplier inactive, a task dropped): nothing still open points at it, and nothing was made
#: under it after it was shut. Done or delivered is not shut: a delivered order may have an open return.
_SHUT = re.compile(r"inactive|discontinu|cancel|retire|terminat|expire|archiv|^closed$|wont_do|suspend|deactivat|"
                   r"decommission|dissolv|withdr|churn|lapse|void|banned|blocked|disabled|deleted|offboard|revoked|frozen")
#: Statuses of a record still open: its work lies ahead or under way, or it is in force.
OPEN_STATES = PRESTART_STATES | UNFINISHED_STATES | frozenset({
    "active", "open", "confirmed", "booked", "reserved", "assigned", "accepted", "submitted", "on_hold", "paused",
    "authorized", "live", "enrolled", "registered", "waitlisted", "in_stock", "available", "listed", "dispatched",
    "en_route", "approved", "triaged", "acknowledged", "escalated", "awaiting_parts", "blocked_on_customer",
    "sent", "issued", "unpaid", "partially_paid", "overdue"})


#: Statuses of a record still waiting to start (in its backlog, planned, scheduled): nothing under it has been
#: worked yet. Not a request still awaiting an answer (pending, new, requested), which work may follow at once.
UNSTARTED_STATES = frozenset({"backlog", "draft", "not_started", "planned", "queued", "scheduled", "todo",
                              "label_created", "rescheduled", "provisioning"})


def is_shut(state: str) -> bool:
    """Whether a status leaves its record shut (``_SHUT``): taken out of service, dropped, ended."""
    return bool(_SHUT.search(state))


def making_stamps(columns: list[str], workflow: dict[str, Any]) -> list[str]:
    """The status stamps every record holds, whatever its status (an alert's ``triggered_at`` where it is
    triggered first and acknowledged or resolved after): when the record came about, as a date of making is."""
    states = set(workflow.get("states", ()))
    return [c for c, held in status_stamps(columns, workflow).items() if states and held >= states]


def shut_states(workflow: dict[str, Any] | None) -> set[str]:
    """A workflow's statuses in which its record is shut (:func:`is_shut`)."""
    return {s for s in (workflow or {}).get("states", ()) if is_shut(s)}


#: Statuses of a resource that is down for now (a beamline offline, a machine in maintenance): alerts and
#: requests still come in under it, but no work takes place on it from the day it went down.
DOWN_STATES = frozenset({"offline", "maintenance", "under_maintenance", "in_maintenance", "out_of_service", "down",
                         "in_repair", "under_repair", "broken", "faulty", "out_of_order"})


def down_states(workflow: dict[str, Any] | None) -> set[str]:
    """A workflow's statuses in which its resource is down for now (:data:`DOWN_STATES`), not shut for good."""
    return {s for s in (workflow or {}).get("states", ()) if s in DOWN_STATES} - shut_states(workflow)


def open_states(workflow: dict[str, Any] | None) -> set[str]:
    """A workflow's statuses in which its record is still open (``OPEN_STATES``), or passing through
    (``DWELL_DAYS``: an order shipped, a claim in review)."""
    return {s for s in (workflow or {}).get("states", ()) if s in OPEN_STATES or s in DWELL_DAYS}


def is_outcome_column(col: str) -> bool:
    """Whether a column holds what came of finished work (``OUTCOME_COLUMNS``, a winner, a final mark)."""
    return col in OUTCOME_COLUMNS or bool(_OUTCOME_NAME.search(col))


#: A figure decided by an approval (an amount awarded, approved or granted): empty until it is decided.
_DECIDED_FIGURE = re.compile(r"(^|_)(awarded|approved|granted|sanctioned)(_|$)")
_APPROVING = re.compile(r"approv|award|grant|fund|accept|sanction")


def decided_states(workflow: dict[str, Any]) -> set[str]:
    """The statuses of a record that was approved (awarded, granted, accepted), and every status after them."""
    out = {s for s in workflow.get("states", ()) if _APPROVING.search(s)}
    todo = list(out)
    while todo:
        state = todo.pop()
        for t in workflow.get("transitions", ()):
            if state in t.get("from", ()) and t["to"] not in out:
                out.add(t["to"])
                todo.append(t["to"])
    return out


#: What an audience does with a published or sent record: none of it before it is out.
_AUDIENCE_COUNT = re.compile(r"^(views|view_count|opens|open_count|clicks|click_count|likes|like_count|shares|"
                             r"share_count|downloads|download_count|plays|play_count|impressions|reactions|"
                             r"comment_count|comments_count|unsubscribes|conversions|replies|reply_count|"
                             r"citations|citation_count|cited_by_count)$")
#: The two ends of a route, never the same place (a flight from JFK lands elsewhere).
ROUTE_ENDS = (("origin_airport", "destination_airport"), ("origin", "destination"), ("origin_port", "destination_port"),
              ("departure_airport", "arrival_airport"), ("from_station", "to_station"), ("origin_city", "destination_city"),
              ("origin_country", "destination_country"))
#: Figures that accrue day by day since a date of the same row, and the most a day adds: nobody plays 20
#: hours a day, a paper is not cited thousands of times in its first week, a reporter files a story a day.
ACCRUALS = ((re.compile(r"^(total_)?(playtime|play_time|hours_played)(_hours)?$"), ("joined_on", "joined_at", "signup_date",
                                                                                   "created_at"), 12),
            (re.compile(r"^(citations|citation_count|cited_by_count)$"), ("publication_date", "published_at",
                                                                        "published_on"), 3),
            (re.compile(r"^articles_published$"), ("joined_on", "joined_at", "hire_date", "hired_on", "created_at"), 1))


#: What a vehicle runs up each year since its model year, at most (audit 72: a 2025 car with 389,049 km; 2,022
#: vehicles in 73 worlds past 45,000 km a year).
YEARLY = (("odometer_km", "model_year", 40000), ("odometer_miles", "model_year", 25000), ("mileage", "model_year", 25000))


#: What a customer has spent with the business, at most this much a day since signing up. The spend follows the
#: loyalty tier, so the sign-up date follows the spend: a platinum member with 20,000 spent joined long enough ago
#: (audit 72: 5,911 customers in 303 worlds had spent more than 150 a day since signing up, one 13,436 in 4 days).
SPENT_SINCE = (("lifetime_spend", "total_spent", "lifetime_value"), ("signup_date", "joined_on", "joined_at",
                                                                    "member_since", "created_at"), 150)


#: Days in which the largest lifetime spend of a business is reached at its most per day (a shop's 25,000 at 150).
SPEND_DAYS = 25000 / 150


def _money_max(gen: dict[str, Any]) -> float | None:
    """The largest figure a money generator draws, at any depth of its wrappers, or None."""
    todo: list[Any] = [gen]
    while todo:
        g = todo.pop()
        if isinstance(g, dict):
            if g.get("gen") == "money" and isinstance(g.get("max"), (int, float)):
                return float(g["max"])
            todo += [v for v in g.values() if isinstance(v, dict)]
    return None


def spent_since(columns: Iterable[str]) -> tuple[str, str, float] | None:
    """``(spend column, sign-up column, most spent per day)`` for a customer's lifetime spend, or None."""
    have = list(columns)
    spends, sinces, per_day = SPENT_SINCE
    spend = next((c for c in spends if c in have), None)
    since = next((c for c in sinces if c in have), None)
    return (spend, since, per_day) if spend and since else None


def accrual(column: str, columns: Iterable[str]) -> tuple[str, float] | None:
    """``(since column, most per day)`` for a figure that accrues day by day since a date of its row, or None."""
    have = list(columns)
    for pattern, since, per_day in ACCRUALS:
        if pattern.match(column):
            got = next((c for c in since if c in have), None)
            return (got, per_day) if got else None
    return None
#: Statuses of a record never yet put out (a draft lot, an unpublished listing, an invoice not yet issued): nothing
#: it offers or bills can have been taken up.
NEVER_RELEASED = frozenset({"draft", "unpublished", "not_published", "pending_publication"})
#: ... and statuses in review before release, where the lifecycle has a release (a lot in review before it is
#: published, a loan in review before it is active; not a work item in review on a task board, which is work done).
IN_REVIEW = frozenset({"in_review", "pending_review", "pending_approval"})
_RELEASED = frozenset({"published", "listed", "live", "active", "approved", "issued", "launched", "in_force", "available",
                       "open_for_bids"})
#: ... and, for what is sent in to a record (a bid on a lot, a vote in a poll), one not open yet: a lot scheduled for
#: auction takes no bids (an event scheduled does take bookings).
_OPENS_LATER = frozenset({"scheduled"})
_BIDDING = re.compile(r"(?:^|_)(?:bids?|votes?|ballots?|responses?)$")
#: Records that take up what another puts out: a bid on a lot, a review, rating or booking of a listing, an order of
#: a product, a payment of an invoice, a premium of a policy, a claim on it, a collection under a mandate.
_TAKES_UP = re.compile(r"(?:^|_)(?:bids?|reviews?|ratings?|feedbacks?|testimonials?|payments?|deposits?|collections?|"
                       r"charges?|reservations?|bookings?|exchanges?|returns?|return_requests?|refunds?|orders?|premiums?|"
                       r"purchases?|redemptions?|enrol+ments?|versements?|arbitrages?|claims?|instal+ments?|rentals?)$")
#: ... unless the record is part of the drafting itself (a legal review of a draft document, an annual review of a
#: statement being prepared, a design review).
_DRAFTING = re.compile(r"^(?:legal|annual|internal|peer|code|design|compliance|credit|editorial|quality|safety|manager|"
                       r"performance|risk|technical|tech|validation|underwriting|qa|security|draft|pre)_")


def takes_up(table: str) -> bool:
    """Whether a table's records take up what the record they point at puts out (:data:`_TAKES_UP`), which a record
    never released (:data:`NEVER_RELEASED`) has not: no bid on a draft lot, no payment of a draft invoice."""
    return bool(_TAKES_UP.search(table)) and not _DRAFTING.match(table)


def unreleased_states(workflow: dict[str, Any] | None, taker: str = "") -> list[str]:
    """The statuses of ``workflow`` in which its record has never been put out (:data:`NEVER_RELEASED`), and for
    what ``taker`` sends in to it (bids, votes) those in which it is not open yet."""
    states = set((workflow or {}).get("states", ()))
    never = NEVER_RELEASED | (_OPENS_LATER if _BIDDING.search(taker) else frozenset()) \
        | (IN_REVIEW if states & _RELEASED else frozenset())
    return sorted(never & states)


#: Statuses of a charge, a sale or an order whose money was never taken: nothing can be refunded, disputed,
#: returned or paid out on it (a refund of an authorized charge is a void; a payout on a failed sale is a loss).
MONEY_NOT_TAKEN = frozenset({"pending", "authorized", "authorised", "failed", "declined", "voided", "void", "draft",
                             "unpaid", "quoted", "awaiting_payment"})
#: ... of an order or a shipment not delivered yet: nothing comes back from it, and no one is paid out for it.
NOT_DELIVERED = frozenset({"processing", "placed", "label_created", "picked_up", "in_transit", "out_for_delivery",
                           "shipped", "scheduled", "cancelled", "canceled"})
#: ... of an application not granted (still being decided, refused or withdrawn): nothing is drawn on it, repaid
#: on it or settled against it.
NOT_GRANTED = frozenset({"received", "submitted", "in_review", "under_review", "pending_review", "pending_approval",
                         "denied", "rejected", "declined", "withdrawn"})
_GRANTED = frozenset({"approved", "funded", "disbursed", "active", "in_repayment", "repaid", "closed"})
#: Records that undo or contest money taken: a refund or a dispute of a charge (a refund of a cancelled booking
#: is how it is undone, so these read only whether the money was taken).
_UNDOES = re.compile(r"(?:^|_)(?:refunds?|disputes?|chargebacks?|reversals?)$")
#: Records that follow a delivery: a return of an order, a payout for a sale, a settlement of a shipment's claim.
_FOLLOWS_DELIVERY = re.compile(r"(?:^|_)(?:returns?|return_requests?|payouts?)$")
#: Records that draw on or pay back what an application granted: a draw on a credit line, a repayment or an
#: instalment of a loan, a holdback or a settlement of an advance, a payroll deduction of a salary advance.
_ON_GRANTED = re.compile(r"(?:^|_)(?:repayments?|instal+ments?|draws?|holdbacks?|deductions?|settlements?|"
                         r"disbursements?|payouts?)$")
#: ... and plain payments, where what they pay is credit (a loan, an advance, a mortgage), not a fee.
_CREDIT = re.compile(r"(?:^|_)(?:loans?|advances?|mortgages?|credit_lines?|financings?)$")
_PAYMENTS = re.compile(r"(?:^|_)payments?$")


def uncompleted_states(parent: str, workflow: dict[str, Any] | None, child: str) -> list[str]:
    """The statuses of ``parent`` (with ``workflow``) in which it never completed what ``child``'s records follow:
    no refund or dispute of a charge never captured (:data:`MONEY_NOT_TAKEN`), no return of an order or payout
    for a sale not delivered (:data:`NOT_DELIVERED`), no repayment, draw or settlement of a loan or an advance not
    granted (:data:`NOT_GRANTED`). Empty where the parent's lifecycle has no completed status to point at."""
    states = set((workflow or {}).get("states", ()))
    never: set[str] = set()
    if _UNDOES.search(child):
        never |= MONEY_NOT_TAKEN
    if _FOLLOWS_DELIVERY.search(child):
        never |= MONEY_NOT_TAKEN | NOT_DELIVERED
    if states & _GRANTED and states & NOT_GRANTED and (_ON_GRANTED.search(child) or _PAYMENTS.search(child)
                                                       and _CREDIT.search(parent)):
        never |= NOT_GRANTED
    return sorted(never & states) if states - never else []


#: Statuses in which a record has just completed what its followers follow (a charge captured, an order delivered,
#: a loan approved or funded): its last status change is when it completed, and they come after it.
COMPLETED_STATES = frozenset({"captured", "paid", "succeeded", "settled", "delivered", "completed", "fulfilled",
                              "approved", "funded", "disbursed", "active", "in_repayment"})
#: Statuses a record reaches through its followers and then rests in (a charge refunded, an order returned, a loan
#: paid off): its last status change ends its story, and no follower is made after it.
ENDED_STATES = frozenset({"refunded", "returned", "repaid", "paid_off", "closed", "written_off", "charged_off",
                          "charged_back", "reversed"})


def completion_states(parent: str, workflow: dict[str, Any] | None, child: str) -> tuple[list[str], list[str]]:
    """``(completed, ended)``: the statuses of ``parent`` (see :func:`uncompleted_states`) in which its last status
    change is when it completed what ``child``'s records follow, so they come after it (a refund after its charge
    was captured, a return after its order was delivered), and those in which that change ended its story, so they
    were made before it (no return requested after its order was returned)."""
    never = uncompleted_states(parent, workflow, child)
    if not never:
        return [], []
    rest = set((workflow or {}).get("states", ())) - set(never)
    return sorted(rest & COMPLETED_STATES), sorted(rest & ENDED_STATES)


#: A record's place in its parent's schedule (instalment 3 of a loan) and the length of that schedule on the
#: parent (a loan's term in months, a plan's number of instalments): the place never passes the length.
ORDINAL = re.compile(r"^(?:instal+ment|payment|deduction|holdback|repayment)_(?:number|no)$")
SCHEDULE_LENGTH = re.compile(r"^(?:term_months|term_in_months|number_of_instal+ments|instal+ment_count|instal+ments|"
                             r"number_of_payments|payment_count|term_weeks)$")


def schedule_length(column: str, parent_columns: Iterable[str]) -> str | None:
    """The column of a parent that bounds ``column`` when it is a place in the parent's schedule (an instalment's
    number against its loan's ``term_months``), or None."""
    if not ORDINAL.match(column):
        return None
    return next((c for c in parent_columns if SCHEDULE_LENGTH.match(c)), None)


#: Statuses of a record not yet out to its audience (a draft, a post in review, a newsletter scheduled).
UNRELEASED_STATES = frozenset({"draft", "in_review", "scheduled", "pending", "queued", "new", "planned", "submitted",
                               "changes_requested", "requested", "todo", "backlog"})


def unseen_counts(columns: Iterable[str], workflow: dict[str, Any] | None) -> dict[str, set[str]]:
    """``{count column: statuses in which it is 0}``: views, opens, clicks, likes … of a record its audience
    cannot have seen yet (a draft post has no likes, a scheduled newsletter no opens)."""
    if not workflow:
        return {}
    unreleased = UNRELEASED_STATES & set(workflow.get("states", ()))
    return {c: set(unreleased) for c in columns if _AUDIENCE_COUNT.match(c)} if unreleased else {}


#: Days from an invoice's issue to its due date by its payment terms.
TERMS_DAYS = {"due_on_receipt": 0, "net_7": 7, "net_10": 10, "net_14": 14, "net_15": 15, "net_30": 30, "net_45": 45,
              "net_60": 60, "net_90": 90}
_ISSUED = re.compile(r"^(issued|issue|invoice|invoiced|billed|bill)_(on|at|date)$")


def terms_columns(columns: Iterable[str]) -> tuple[str, str, str] | None:
    """``(terms, issued, due)`` where a record's payment terms set its due date from its issue date (``net_30``:
    due 30 days after it was issued), None where it has no such columns."""
    cols = list(columns)
    issued = next((c for c in cols if _ISSUED.match(c)), None)
    due = next((c for c in cols if clock_role(c) == "due" and "_by_" not in c), None)
    return ("payment_terms", issued, due) if "payment_terms" in cols and issued and due else None


#: Ages (years) of a person in an age group (a passenger's fare class, a rider's waiver).
AGE_GROUPS = {"infant": (0, 1), "child": (2, 11), "teen": (12, 17), "youth": (12, 17), "adult": (18, 64),
              "senior": (65, 90)}
#: A deal's win probability (per cent) by its stage: the open stages rise, won is certain, lost is none.
DEAL_STAGES: dict[str, tuple[int, int]] = {
    "prospecting": (5, 20), "qualification": (10, 35), "proposal": (30, 60), "negotiation": (50, 90),
    "closed_won": (100, 100), "closed_lost": (0, 0),
}
#: A deal's columns its stage settles: its odds, and the day it closes.
DEAL_ODDS = ("probability", "win_probability")
DEAL_CLOSE = ("expected_close_date", "close_date")


#: Loyalty tiers from the lowest up (a member's lifetime spend or points rise with the tier).
TIER_ORDER = ["bronze", "silver", "gold", "platinum", "diamond"]
#: Seniority of a job title by its words (an intern or trainee 0, an assistant 1, a plain title 2, a senior or
#: lead 3, a head, chief, director or manager 4).
_SENIORITY = ((re.compile(r"\b(intern|trainee|apprentice|student)\b", re.I), 0),
              (re.compile(r"\b(head|chief|director|manager|supervisor|superintendent)\b", re.I), 4),
              (re.compile(r"\b(senior|lead|principal|master)\b", re.I), 3),
              (re.compile(r"\b(junior|assistant|associate|deputy)\b", re.I), 1))
#: Each seniority's share of a pay range (low, high): a head chauffeur earns more than a trainee.
PAY_BANDS = {0: (0.0, 0.15), 1: (0.1, 0.35), 2: (0.25, 0.6), 3: (0.5, 0.8), 4: (0.7, 1.0)}
PAY_COLUMNS = ("salary", "annual_salary", "base_salary", "hourly_rate", "pay_rate", "hourly_wage", "day_rate")
_HIRED = ("hire_date", "hired_on", "hired_at", "start_date", "employed_since")


def seniority(title: Any) -> int:
    """How senior a job title is (``_SENIORITY``; 2 for a plain "Chauffeur")."""
    for pattern, level in _SENIORITY:
        if isinstance(title, str) and pattern.search(title.replace("_", " ")):
            return level
    return 2


#: Company size bands by tier (employees): an SMB with 47,000 staff is no SMB.
TIER_HEADCOUNT = {"smb": (1, 250), "small": (1, 50), "mid_market": (250, 2500), "midmarket": (250, 2500),
                  "medium": (50, 500), "enterprise": (2500, 50000), "strategic": (5000, 150000), "large": (500, 50000)}
_HEADCOUNT = re.compile(r"^(employee_count|employees|headcount|staff_count|number_of_employees)$")


def headcount_column(columns: Iterable[str]) -> str | None:
    """A company's number of employees among ``columns`` (``employee_count``, ``headcount`` …), or None."""
    return next((c for c in columns if _HEADCOUNT.match(c)), None)


def unreached_columns(columns: list[str], workflow: dict[str, Any]) -> dict[str, set[str]]:
    """``{column: statuses in which it is empty}``: the stamps of events that come after the work starts
    (``started_at``, ``finished_at``, ``sent_on``) and the outcome of finished work (``exit_code``), empty
    while the record has not got that far, or where it was called off before it started. A status's own
    timestamp (``status_stamps``) is not one."""
    before = prestart_states(workflow)
    working = before | (UNFINISHED_STATES & set(workflow["states"]))
    called_off = called_off_states(workflow)
    never_started = before | dropped_before_start(workflow)
    stamped = status_stamps(columns, workflow)
    out: dict[str, set[str]] = {}
    for col in columns:
        if col in stamped or col == "status_changed_at":
            continue
        if _event_word(col, _STARTED_WORDS) and before:
            out[col] = never_started
        elif _event_word(col, _DRAFT_WORDS) and "draft" in before:
            out[col] = {"draft"}
        elif is_outcome_column(col) and (working or called_off):
            out[col] = working | called_off
        elif _event_word(col, _FINISHED_WORDS) and working:
            out[col] = working
        elif (col.startswith("actual_") or col in _SPENT_COLUMNS) and before:
            out[col] = never_started   # an actual cost or duration accrues once the work starts
        elif _DECIDED_FIGURE.search(col) and not col.endswith("_id") and decided_states(workflow):
            # nothing awarded on an application still in review, denied or withdrawn
            out[col] = set(workflow["states"]) - decided_states(workflow)
    return out

# ----------------------------------------------------------------------------------- value ranges

#: Plausible ranges of a measured value by its metric (the metric names the unit).
METRIC_RANGES: dict[str, tuple[float, float]] = {
    "temperature_c": (-25.0, 40.0), "humidity_pct": (15.0, 95.0), "co2_ppm": (380.0, 2000.0), "power_w": (0.0, 3500.0),
    "motion": (0.0, 1.0), "lux": (0.0, 2000.0), "pressure_kpa": (90.0, 110.0), "voltage_v": (100.0, 250.0),
    "vibration_mm_s": (0.0, 25.0), "flow_lpm": (0.0, 500.0), "energy_kwh": (0.0, 100.0), "battery_pct": (0.0, 100.0),
}
#: Lab analytes: (unit, low, high) of reported values.
ANALYTES: dict[str, tuple[str, float, float]] = {
    "glucose": ("mg/dL", 60, 250), "hemoglobin": ("g/dL", 9, 18), "ldl_cholesterol": ("mg/dL", 50, 220),
    "hdl_cholesterol": ("mg/dL", 25, 90), "triglycerides": ("mg/dL", 50, 400), "creatinine": ("mg/dL", 0.5, 2.5),
    "potassium": ("mmol/L", 3.0, 6.0), "sodium": ("mmol/L", 128, 150), "tsh": ("mIU/L", 0.3, 8.0),
    "hba1c": ("%", 4.5, 11.0), "wbc_count": ("10^3/uL", 3.0, 15.0), "platelets": ("10^3/uL", 120, 450),
    "inr": ("INR", 1.2, 4.0),
}
#: An analyte's reference range in its unit (both ends normal): below it a result is flagged low, above it
#: high. An INR's is the therapeutic range of a patient on warfarin, whom a clinic measures it for.
REFERENCE_RANGES: dict[str, tuple[float, float]] = {
    "glucose": (70, 99), "hemoglobin": (12.0, 17.5), "ldl_cholesterol": (0, 129), "hdl_cholesterol": (40, 200),
    "triglycerides": (0, 149), "creatinine": (0.6, 1.3), "potassium": (3.5, 5.1), "sodium": (135, 145),
    "tsh": (0.4, 4.0), "hba1c": (4.0, 5.6), "wbc_count": (4.0, 11.0), "platelets": (150, 400), "inr": (2.0, 3.0),
}
#: A lab result's flag against its reference range (below, within, above), where its column offers these words.
RANGE_FLAGS = ("low", "normal", "high")
FLAG_COLUMNS = ("abnormal_flag", "flag", "result_flag", "interpretation")
#: Monitoring series: (unit, low, high) of their values.
SERIES: dict[str, tuple[str, float, float]] = {
    "cpu_utilization": ("percent", 0, 100), "memory_usage": ("percent", 0, 100), "request_latency_p99": ("ms", 20, 2000),
    "error_rate": ("percent", 0, 10), "requests_per_second": ("per_second", 1, 5000), "disk_io": ("bytes", 0, 5e8),
    "queue_depth": ("count", 0, 500), "active_connections": ("count", 0, 5000),
}
#: Entity words whose people may be minors (birth dates then cover children too).
_MINOR_WORDS = ("child", "kid", "student", "pupil", "learner", "infant", "baby", "minor", "junior", "camper",
                "dependent", "patient", "player", "athlete", "participant", "swimmer", "youth")
_ANIMAL_WORDS = ("pet", "animal", "dog", "cat", "horse", "livestock", "puppy", "kitten", "fish", "zebrafish", "mouse",
                 "mice", "rat", "cattle", "cow", "sheep", "bird", "line", "colony", "herd", "hive")
def person_kind(entity_words: str) -> str:
    """``animal``, ``any_age`` or ``adult``: who the rows of a table with a birth date are."""
    words = set(re.split(r"[_\s]+", entity_words))
    if words & set(_ANIMAL_WORDS) and not words & _KEEPER_WORDS:   # a pet owner is no pet
        return "animal"
    if words & set(_MINOR_WORDS):
        return "any_age"
    return "adult"


#: People named after the animals they keep (a pet owner, a horse rider, a dog walker): adults.
_KEEPER_WORDS = frozenset({"owner", "owners", "parent", "guardian", "keeper", "handler", "adopter", "breeder", "client",
                           "customer", "rider", "trainer", "walker", "sitter", "groomer", "member"})
#: An age the business's description sets for the people of one table ("members must be 21 or older", "shipped
#: only to customers aged 18 or older"); not a condition ("licences are required for anglers aged 16 and over").
_STATED_AGE = re.compile(r"\b([a-z]+)\s+(?:must be|must confirm they are|are)\s+(\d{1,2})\s*(?:\+|or older|or over|and over)|"
                         r"\bto\s+([a-z]+)\s+aged\s+(\d{1,2})\s*(?:\+|or older|or over|and over)")
#: Years above a stated minimum age that a person's birth date keeps, so that what they did in the world's past
#: (an order a year ago) was done at that age too.
STATED_AGE_MARGIN = 3


def stated_min_age(description: str, table: str) -> int | None:
    """The minimum age the business's description states for the people of ``table`` (``_STATED_AGE``): theirs where
    it names them, and for everyone where the age is one of adulthood (25 at most: a brewery's "guests" are kept as
    customers, and its staff are of that age too). None where it states none."""
    for m in _STATED_AGE.finditer(description.lower()):
        who, age = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
        stem = who[:-1] if who.endswith("s") else who
        if table in (stem, stem + "s") or table.endswith(("_" + stem, "_" + stem + "s")) or int(age) <= 25:
            return int(age)
    return None


#: Age in years (low, high) by person kind.
AGE_RANGES = {"adult": (18, 90), "any_age": (3, 90), "animal": (0, 20)}

#: Totals and the amounts they add up (the first part must be present).
TOTALS = (("total_amount", ("subtotal", "tax_amount", "shipping_fee")),
          ("amount_due", ("principal_portion", "interest_portion")))
#: Pay: (net, gross, ((a cut, (its lowest, its highest share of the gross)), ...)): what a payslip pays out is its
#: gross less the tax withheld and the deductions taken, each a share of that gross (never more than it).
NET_PAY = (("net_pay", "gross_pay", (("tax_withheld", (0.12, 0.3)), ("deductions", (0.01, 0.08)))),)
#: A hire charged by the day: (daily rate, start, end, charge) columns of one row. The charge is the rate
#: times the whole days between start and end, and the end falls at the start's time of day.
DAY_CHARGES = (("daily_rate", "pickup_at", "return_due_at", "total_charge"),)
#: How many whole days a hire charged by the day runs.
HIRE_DAYS = (1, 14)


def charged_by_day(columns: Iterable[str]) -> tuple[str, str, str, str] | None:
    """The (rate, start, end, charge) columns of a row that is charged per day, or None."""
    have = set(columns)
    return next((c for c in DAY_CHARGES if set(c) <= have), None)


#: What a payment processor keeps of a payment, by how it was paid: a share of a card payment, nothing of cash
#: or a cheque handed over the counter.
PROCESSOR_FEES = {"card": 0.029, "credit_card": 0.029, "debit_card": 0.015, "paypal": 0.0349, "ach": 0.008,
                  "wire": 0.002, "bank_transfer": 0.002, "sepa": 0.002, "direct_debit": 0.008}
#: Payment statuses only some methods reach: only a card (or PayPal) payment is authorized and later voided;
#: cash changes hands at once (it is never pending or failed).
CARD_STATES = frozenset({"authorized", "voided"})
UNCLEARED_STATES = frozenset({"pending", "failed"})
HANDED_OVER = frozenset({"cash"})


def card_like(method: Any) -> bool:
    """Whether a payment ``method`` is a card (or PayPal): the only kind authorized first and voided later."""
    return "card" in str(method) or method == "paypal"


def settle_by_method(gens: dict[str, dict[str, Any]], method: str) -> None:
    """A payment's status and processor fee follow its method (``PROCESSOR_FEES``, ``CARD_STATES``): no
    authorized cash, no processor fee on a cheque, a card's fee a share of the amount."""
    values, weights = gens[method]["values"], gens[method].get("weights") or [1] * len(gens[method]["values"])
    status = gens.get("status", {})
    if status.get("gen") == "choice":
        cases = {}
        for state in status["values"]:
            keep = card_like if state in CARD_STATES else \
                (lambda v: v not in HANDED_OVER) if state in UNCLEARED_STATES else None
            if keep is None:
                continue
            fits = [(v, w) for v, w in zip(values, weights) if keep(v)]
            if fits and len(fits) < len(values):
                cases[state] = {"gen": "choice", "values": [v for v, _ in fits], "weights": [w for _, w in fits]}
        if cases:
            gens[method] = {"gen": "by", "column": "status", "default": gens[method], "cases": cases}
    amount = next((c for c in ("amount", "amount_paid", "payment_amount") if c in gens), None)
    if "processor_fee" in gens and amount:
        gens["processor_fee"] = {"gen": "by", "column": method, "default": {"gen": "const", "value": 0.0},
                                 "cases": {v: {"gen": "product", "of": [amount], "factor": PROCESSOR_FEES[v]}
                                           for v in values if v in PROCESSOR_FEES}}


#: Same-row (used, cap) pairs: the first never exceeds the second.
CAPS = (("seats_booked", "capacity"), ("enrolled_count", "capacity"), ("times_redeemed", "max_redemptions"),
        ("quantity_reserved", "quantity_on_hand"), ("seats_available", "seats_total"), ("spend_to_date", "budget"),
        ("salary_min", "salary_max"), ("balance", "initial_value"), ("outstanding_balance", "principal"),
        ("refills_remaining", "refills_total"), ("guest_passes_remaining", "guest_passes_total"),
        ("actual_minutes", "estimated_minutes_cap"), ("credits_used", "credits_total"),
        ("deliveries_completed", "deliveries_assigned"), ("discount_amount", "unit_price"),
        # no insurer charges more a year than it covers
        ("annual_premium", "coverage_amount"), ("premium", "coverage_amount"), ("premium_amount", "coverage_amount"),
        # a funnel narrows: no more clicks than opens, no more opens than recipients
        ("opens", "recipients"), ("clicks", "opens"), ("unsubscribes", "recipients"), ("clicks", "impressions"),
        ("conversions", "clicks"), ("conversions", "visitors"),
        # a business sells above what a thing costs it; an award or approval gives no more than was asked
        ("unit_cost", "price"), ("unit_cost", "unit_price"), ("unit_cost", "list_price"), ("unit_cost", "base_price"),
        ("cost", "price"), ("amount_awarded", "amount_requested"), ("amount_approved", "amount_requested"),
        ("approved_amount", "requested_amount"), ("awarded_amount", "requested_amount"),
        # no more defects than units inspected; no more points to spend than were ever earned
        ("defects_found", "sample_size"), ("points_balance", "lifetime_points"))
#: Same-row (value, floor) pairs: the first is never below the second (an alert fired because what it
#: observed passed its threshold).
FLOORS = (("observed_value", "threshold"),)
#: Records that pay (or pay back) part of the record they point at, by the last word of their table's name.
_PART_TABLES = frozenset({"payment", "payments", "refund", "refunds", "installment", "installments", "instalment",
                          "instalments", "remittance", "remittances", "payout", "payouts", "disbursement",
                          "disbursements", "receipt", "receipts", "reimbursement", "reimbursements", "deposit", "deposits",
                          "earnings", "commission", "commissions"})
#: Such a record's amount, and the whole of the record it points at, in order of preference.
PART_COLUMNS = ("amount", "payment_amount", "amount_paid", "paid_amount", "refund_amount", "amount_refunded",
                "refunded_amount")
WHOLE_COLUMNS = ("total_amount", "amount_due", "grand_total", "order_total", "invoice_total", "total_price", "total",
                 "amount")
#: A part that has paid (a captured payment, a settled instalment); one that has not, most telling first (an attempt
#: that failed, one still pending); a whole's statuses by how much of it its parts have paid.
PART_DONE = ("captured", "completed", "succeeded", "settled", "paid", "cleared", "posted", "processed", "received")
PART_UNDONE = ("failed", "declined", "pending", "authorized", "scheduled")
WHOLE_FULL = frozenset({"paid", "paid_in_full", "fully_paid", "settled"})
WHOLE_PARTIAL = frozenset({"partially_paid", "part_paid", "partial"})
WHOLE_UNPAID = ("sent", "issued", "open", "unpaid", "outstanding", "due", "overdue", "past_due")


def settle_plan(part_states: Iterable[str], whole_states: Iterable[str], whole_columns: Iterable[str]
                ) -> dict[str, Any] | None:
    """How the parts of a whole (the payments of an invoice) settle it, where its statuses say how much is paid: a
    paid invoice's payments have all gone through and come to its total; a partly paid one's through ones come to
    what it has paid (its ``amount_paid`` where it keeps one) and less than its total; an unpaid one has none through
    (``datagen.settle_parts``); one said paid that nothing paid for a record since shut is void. None where the
    statuses of either say nothing of it."""
    part, whole = set(part_states), set(whole_states)
    full = sorted(WHOLE_FULL & whole)
    done = [st for st in PART_DONE if st in part]
    undone = next((st for st in PART_UNDONE if st in part), None)
    unpaid = [st for st in WHOLE_UNPAID if st in whole]
    if not full or not done or undone is None or not unpaid:
        return None
    paid = next((p for p, _ in PAID if p in set(whole_columns)), None)
    void = next((st for st in ("void", "voided", "cancelled", "written_off") if st in whole), None)
    return {"column": "status", "done": done, "undone": undone, "full": full, "partial": sorted(WHOLE_PARTIAL & whole),
            "unpaid": unpaid, **({"paid": paid} if paid else {}), **({"void": void} if void else {})}


#: What a claim asks for, and what the policy it is made on covers.
_CLAIMED = frozenset({"amount", "claimed_amount", "claim_amount", "amount_claimed", "estimated_loss", "loss_amount"})
_COVER = frozenset({"coverage_amount", "coverage_limit", "sum_insured", "limit_amount", "cover_amount"})
#: The whole of a record that others point at with sums of their own, in order of preference: its total, else
#: its subtotal.
_WHOLES = WHOLE_COLUMNS + ("subtotal",)


#: Records that pay for the record they point at: a payment, a payout, a disbursement, a remittance.
_PAYS_FOR = re.compile(r"(?:^|_)(?:payments?|payouts?|disbursements?|remittances?)$")
#: Records paid for again and again (rent on a lease, commission under a plan, a garnishment under a court order,
#: instalments of a package or on a notice), or in several payments to several payees (a title commitment).
_PAID_AGAIN = re.compile(r"(?:^|_)(?:leases?|contracts?|plans?|agreements?|schedules?|court_orders?|polic(?:y|ies)|"
                         r"subscriptions?|mandates?|loans?|advances?|certifications?|claims?|enrol+ments?|memberships?|"
                         r"statements?|programs?|programmes?|packages?|notices?|commitments?|accounts?)$")
#: ... and payments that come round again by their kind, whatever they name (rent, a premium, a royalty).
_RECURRING_PAY = re.compile(r"(?:^|_)(?:rent|instal+ment|premium|subscription|royalty|commission|benefit|wage|salary|"
                            r"income|interest|dividend)_")


def is_whole(columns: Iterable[str]) -> bool:
    """Whether a record with ``columns`` is a whole paid in parts (an invoice, an order: it has a total)."""
    return bool(set(columns) & set(_WHOLES))


def paid_once(table: str, workflow: dict[str, Any] | None, parent: str, parent_columns: Iterable[str], party: bool
              ) -> list[str]:
    """The statuses (:data:`PART_DONE`) in which a payment of ``table`` went through, where the record it points at
    is paid for once: a trade-in paid out once, a notice paid for once (world audit 96 found trade-ins paid out up
    to five times). Empty where that record is a whole paid in parts (an invoice, with a total: see
    :func:`settle_plan`), a party (a customer pays many times) or one paid for again and again (rent on a lease:
    :data:`_PAID_AGAIN`). A payment that pays a whole in part names the
    whole's other records on each part (a freight bill's shipment): its readers leave it out."""
    if party or not _PAYS_FOR.search(table) or _RECURRING_PAY.search(table) or is_whole(parent_columns) \
            or _PAID_AGAIN.search(parent):
        return []
    return [st for st in PART_DONE if st in (workflow or {}).get("states", ())]


def part_of_whole(table: str, columns: Iterable[str], parent_columns: Iterable[str]) -> tuple[str, str] | None:
    """``(part, whole)`` where the rows of ``table`` pay part of the record they point at (a payment of an
    invoice, a refund of a payment): together they never come to more than its whole."""
    if table.rsplit("_", 1)[-1] not in _PART_TABLES:
        return None
    cols, pcols = set(columns), set(parent_columns)
    part = next((c for c in PART_COLUMNS if c in cols), None)
    whole = next((c for c in WHOLE_COLUMNS if c in pcols), None)
    return (part, whole) if part and whole else None


#: Rates a record takes over from the record it points at, under the same name: a rental's daily rate is its
#: vehicle's, a stock lot's unit cost its product's.
_COPIED_RATES = frozenset({"daily_rate", "nightly_rate", "hourly_rate", "weekly_rate", "monthly_rate", "unit_cost",
                           "consultation_fee", "session_fee", "hourly_fee", "price_per_person", "price_per_night"})
#: Documents that restate the figures of the record they are about (an invoice bills its order in full).
_RESTATING = re.compile(r"(^|_)(invoices?|bills?|quotes?|quotations?|devis|estimates?|receipts?)$")
_RESTATED = frozenset({"subtotal", "tax_amount", "shipping_fee", "total_amount", "discount_amount"})
#: A record's price under its own word, where the record it points at names it ``<kind>_<word>``: an
#: appointment's fee is its practitioner's consultation fee, an order line's unit price its product's price.
_SHORT_PRICES = {"fee": ("consultation_fee", "session_fee", "visit_fee"), "unit_price": ("price", "unit_price"),
                 "rate": ("base_rate", "hourly_rate", "daily_rate")}
#: The figures of a whole's pieces (the containers of a shipment, the pieces of a waybill) weigh no more than it.
_PIECE_WEIGHTS = frozenset({"weight_kg", "gross_weight_kg", "weight_lb", "weight_lbs"})
#: A total for one or more of what the record points at costs at least one of it.
_TOTAL_OF_ONE = {"total_price": ("price", "price_per_person", "base_price", "daily_rate", "nightly_rate"),
                 "total_fare": ("base_fare", "fare"), "total_cost": ("unit_cost", "daily_rate"),
                 "total_charge": ("daily_rate", "nightly_rate", "hourly_rate", "price")}
#: A dispute, chargeback, return or appeal of a payment is about no more than that payment's amount.
_CLAIMS_ON = re.compile(r"(^|_)(disputes?|chargebacks?|returns?|appeals?|reversals?|complaints?|claims?|"
                        r"adjustments?|exceptions?|devolucaos?|provisional_credits?)$")


def figure_link(table: str, column: str, parent: str, parent_column: str, columns: Iterable[str] = (),
                parent_columns: Iterable[str] = ()) -> str | None:
    """How a figure of ``table`` relates to a figure of the record it points at (of ``parent``):

    * ``"copy"``: it is that figure (a rental's daily rate, an appointment's fee, an invoice's total);
    * ``"part"``: the rows of ``table`` pointing at one parent together come to no more than it (pieces' weights);
    * ``"at_most"`` / ``"at_least"``: it is never above (a dispute's amount) or below (a booking's total) it.

    ``None`` where the names say nothing (an option of a product has its own price). A document restates its
    record's total only where both add up the same parts (``columns`` and ``parent_columns``: the two tables'
    columns): an invoice without the order's shipping fee bills its goods, not its total."""
    if table == parent:
        return None
    if column == parent_column and column in _COPIED_RATES:
        return "copy"
    if column == parent_column and column in _RESTATED and _RESTATING.search(table):
        parts = {p for _, ps in TOTALS for p in ps} & _RESTATED
        same = parts & set(columns) == parts & set(parent_columns)
        return "copy" if column != "total_amount" or same else None
    if parent_column in _SHORT_PRICES.get(column, ()):
        return "copy"
    if column == parent_column and column in _PIECE_WEIGHTS:
        return "part"
    if parent_column in _TOTAL_OF_ONE.get(column, ()):
        return "at_least"
    if column == parent_column == "amount" and _CLAIMS_ON.search(table):
        return "at_most"
    if column in _CLAIMED and parent_column in _COVER:
        return "at_most"   # a claim asks no more than its policy covers
    if parent_column == "annual_premium" and column in ("amount_due", "amount", "premium_amount"):
        return "at_most"   # an instalment of a premium is no more than the year's premium
    if column == parent_column == "capacity":
        return "at_most"   # a performance seats no more than its theatre
    if column in PART_COLUMNS and parent_column == next((c for c in _WHOLES if c in set(parent_columns)), None):
        # nothing about a record (a deposit on an order, a discount approved on a quote, a refund asked of a
        # payment, a commission on an invoice) comes to more than its whole
        return "at_most"
    return None


#: What one line of a record comes to, in order of preference: its own total, else quantity x unit price.
_LINE_FIGURES = (("line_total",), ("quantity", "unit_price"), ("amount",))
_LINE_TABLES = re.compile(r"(^|_)(lines?|items?|line_items?|rations?|charges?)$")


#: A run's totals over its payslips: (the run's column, the payslip's).
_RUN_TOTALS = (("gross_total", "gross_pay"), ("net_total", "net_pay"))


def sums_of(table: str, columns: Iterable[str], parent_columns: Iterable[str]) -> list[tuple[str, tuple[str, ...]]]:
    """``[(whole, figures), ...]``: the figures of the record the rows of ``table`` point at that are sums over
    them of the figures' product: the subtotal of a record with lines (the items of an order, the lines of an
    invoice: a line's total, or its quantity times its unit price), a pay run's gross and net totals over its
    payslips."""
    cols, parents = set(columns), set(parent_columns)
    figures = next((f for f in _LINE_FIGURES if set(f) <= cols), None)
    out = [("subtotal", figures)] if "subtotal" in parents and _LINE_TABLES.search(table) and figures else []
    return out + [(whole, (part,)) for whole, part in _RUN_TOTALS if whole in parents and part in cols]


#: A date that starts a week (a timesheet's ``week_starting``) falls on the day weeks start (``WEEK_STARTS_ON``,
#: Monday); the record it belongs to may have come about later that week.
WEEK_START = re.compile(r"(^|_)week_(start|starting|beginning|commencing|of)$")
WEEK_STARTS_ON = 0
#: How many days before a day of its week a week's start may lie.
WEEK_SLACK_DAYS = 6

#: A loan's principal, annual rate, term in months and the monthly payment that repays it (``datagen.monthly_payment``).
LOAN_TERMS = ("principal", "interest_rate", "term_months", "monthly_payment")

#: An instalment's split of its loan's monthly payment: (interest on what is left of the principal, the rest).
PORTIONS = ("interest_portion", "principal_portion")


def amortized(columns: Iterable[str], parent_columns: Iterable[str]) -> bool:
    """Whether the rows are instalments of a loan that splits its monthly payment (:data:`LOAN_TERMS`) into
    interest on what is left and principal (:data:`PORTIONS`): instalment 3 of a loan pays the interest on the
    principal left after two payments, and the rest of the payment pays the principal down."""
    return set(PORTIONS) <= set(columns) and set(LOAN_TERMS) <= set(parent_columns)


#: A column counting a record's rows of another table: ``<thing>_count``, ``num_<things>``, ``number_of_<things>``.
_COUNTS = re.compile(r"^(?:num_|number_of_)(\w+)$|^(\w+)_count$")


def count_of(table: str, parent_columns: Iterable[str]) -> str | None:
    """The column of the record the rows of ``table`` point at that counts them (a chat's ``message_count`` its
    ``messages``, a league's ``team_count`` its ``teams``, a meeting's ``participant_count`` its
    ``dial_in_participants``), or None."""
    from ..engine.language import singular

    own = {singular(table), singular(table.rsplit("_", 1)[-1])}
    for col in parent_columns:
        m = _COUNTS.match(col)
        if m and singular(m.group(1) or m.group(2)) in own:
            return col
    return None


#: (paid, due) pairs whose paid part follows the record's status (the workflow's ``paid`` map).
PAID = (("amount_paid", "amount_due"), ("amount_paid", "total_amount"), ("paid_amount", "amount_due"))

# ------------------------------------------------------------------------------------- the clock

_DUE = re.compile(r"(^|_)(due|deadline)(_|$)|respond_by")
_END = re.compile(r"expir|valid_until|valid_to|period_end|(^|_)(end|ends|until)(_|$)|closes|target_end|return_date|"
                  r"expected_date|estimated_delivery|check_out|checkout")
_EVENT = re.compile(r"(^|_)(event|session|show|game|match|visit|service|class|lesson|appointment|route|shift|"
                    r"reserved|publication|release|published|performance|slot|flight|travel|trip|work)(_|$)")


#: Days ahead within which something on its way expects to arrive (its estimated or expected date): a parcel out
#: for delivery today or tomorrow, one picked up or in transit within the week. (Not before it leaves: a label
#: created may ship weeks ahead.)
ETA_DAYS = {"out_for_delivery": 1, "picked_up": 7, "in_transit": 7, "shipped": 10, "dispatched": 7, "en_route": 2}
_ETA = re.compile(r"(^|_)(estimated|expected|eta)(_|$)")


def eta_days(column: str, states: Iterable[str]) -> dict[str, int]:
    """``{status: days}``: at most how far ahead an estimated or expected end date (``estimated_delivery``) lies
    for a record under way in each of those ``states`` (``ETA_DAYS``; it may have passed: a parcel running
    late); empty for other columns."""
    if not _ETA.search(column) or clock_role(column) != "end":
        return {}
    return {s: ETA_DAYS[s] for s in states if s in ETA_DAYS}


def clock_role(column: str) -> str | None:
    """``start``, ``end`` or ``due``: which moment of a record's life a date column holds, for the
    workflow's ``clock`` map (a scheduled session's start lies ahead; an overdue invoice's due date
    has passed; an active membership has not ended). ``None`` for dates a status says nothing about."""
    if "birth" in column or is_past_column(column) and not _EVENT.search(column):
        return None
    if _DUE.search(column):
        return "due"
    if _END.search(column):
        return "end"
    rank = date_rank(column)
    if rank == 1 or (rank is None and _EVENT.search(column)):
        return "start"
    return None


#: A date until which an offer or a document holds (a quote's ``valid_until``, a permit's ``expires_on``).
VALIDITY = re.compile(r"valid_until|valid_to|expir")
#: Statuses of something still waiting on an answer: what is waiting is still valid (a quote submitted and
#: past its validity would have expired), so its validity date lies ahead.
WAITING_STATES = frozenset({"submitted", "pending", "sent", "in_review", "under_review", "awaiting_approval",
                            "requested", "quoted", "offered", "pending_approval", "awaiting_signature"})
#: Statuses reached while a record's term runs - accepted, put in force, or cut short: a quote is approved
#: while it is valid, a licence terminated early before it ends. Reached before the record's end date.
BEFORE_END_STATES = frozenset({"approved", "accepted", "signed", "issued", "submitted", "sent", "terminated",
                               "cancelled", "canceled", "withdrawn", "revoked", "notice_given"})


#: Statuses of a record whose term lies ahead or is on hold: a draft whose planned end has passed is dead, a
#: campaign paused past its end date would have been completed. Their end dates lie ahead.
TERM_AHEAD_STATES = frozenset({"draft", "planned", "not_started", "scheduled", "rescheduled", "backlog", "todo",
                               "queued", "paused", "on_hold"})
#: Statuses of a record not begun, whose start lies ahead (a draft study is not past its start date).
NOT_BEGUN_STATES = frozenset({"draft", "planned", "not_started"})


def clock_constraints(workflow: dict[str, Any] | None, column: str) -> tuple[list[str], list[str]]:
    """``(past states, future states)`` for one date column under a workflow's ``clock`` map; a waiting
    status's validity date lies ahead (``WAITING_STATES``), as do the end of a term not begun or on hold
    (``TERM_AHEAD_STATES``) and the start of one not begun (``NOT_BEGUN_STATES``)."""
    role = clock_role(column)
    if not workflow or role is None:
        return [], []
    clock = workflow.get("clock", {})
    past = sorted(s for s, roles in clock.items() if roles.get(role) == "past")
    future = sorted(s for s, roles in clock.items() if roles.get(role) == "future")
    states = set(workflow.get("states", ()))
    ahead = (TERM_AHEAD_STATES | (WAITING_STATES if VALIDITY.search(column) else frozenset())) if role == "end" else \
        NOT_BEGUN_STATES if role == "start" else frozenset()
    future = sorted(set(future) | (ahead & states) - set(past))
    return past, future


def ends_after_change(workflow: dict[str, Any] | None, end: str | None) -> list[str]:
    """The statuses of a record with the end date ``end`` that it reached before that date
    (``BEFORE_END_STATES``, where the clock does not say the end has passed for them)."""
    if not workflow or not end or clock_role(end) != "end":
        return []
    past, _ = clock_constraints(workflow, end)
    return sorted(BEFORE_END_STATES & set(workflow.get("states", ())) - set(past))

# ------------------------------------------------------------------------------- passing statuses

#: Statuses a record passes through, and the most days it sits in one: an order is processed within weeks,
#: a device provisioned within days, a parcel out for delivery within the week, a claim reviewed within
#: months. A record in one was made (and started) no longer ago than that.
DWELL_DAYS = {"processing": 21, "provisioning": 14, "label_created": 14, "picked_up": 10, "in_transit": 30,
              "out_for_delivery": 5, "shipped": 45, "boarding": 1, "triggered": 30, "awaiting_info": 90,
              "in_review": 120, "under_review": 120, "investigating": 120, "screening": 90, "interviewing": 90,
              "offered": 30, "changes_requested": 60, "authorized": 14,
              # audit 84: incidents acknowledged for months, two-year trials, accounts pending since 2022
              "acknowledged": 14, "mitigated": 14, "trialing": 30, "submitted": 60, "new": 14, "queued": 7,
              "maintenance": 30, "on_hold": 90}
#: Days a payment waits in a status before it moves on (a pending transfer clears or fails within the week).
PAYMENT_DWELL_DAYS = {"pending": 7}


def dwell_days(columns: Iterable[str], workflow: dict[str, Any] | None) -> dict[str, int]:
    """``{status: most days a record sits in it}`` for a table: :data:`DWELL_DAYS`, and a received payment's
    :data:`PAYMENT_DWELL_DAYS` (audit 72: 11,727 of 12,759 pending payments received more than two weeks ago)."""
    states = (workflow or {}).get("states", ())
    out = {s: DWELL_DAYS[s] for s in states if s in DWELL_DAYS}
    if {"received_at", "status_changed_at"} <= set(columns):
        out |= {s: d for s, d in PAYMENT_DWELL_DAYS.items() if s in states}
    return out


#: Statuses of something happening now: a session in progress, a guest checked in, a match being played.
NOW_STATES = frozenset({"in_progress", "checked_in", "in_session", "boarding", "live", "underway", "ongoing", "running",
                        "started"})
#: Statuses of a timed event that took place or was missed: recorded within a day of its start.
ENDED_EVENT_STATES = frozenset({"done", "completed", "finished", "ended", "attended", "no_show", "checked_out"})
#: Statuses that say a record's work took place, so its start date happened with the records it belongs to: an
#: event held or under way, a consignment on the road or handed over (no haul shipped with a carrier discontinued
#: weeks before).
WORKED_STATES = ENDED_EVENT_STATES | NOW_STATES | frozenset({"picked_up", "in_transit", "out_for_delivery", "delivered",
                                                             "returned_to_sender", "shipped", "dispatched", "paid"})
#: Ended statuses reached once the whole event is over (a stay checked out), not on its first day (a no-show).
STAYED_STATES = ENDED_EVENT_STATES - {"no_show"}
#: Minutes since an event in a ``NOW_STATES`` status started (shorter than any event's duration).
NOW_MINUTES = 10
#: A start that names an event lasting minutes or hours (a session, a shift, a match, a visit, a flight).
_TIMED_EVENT = re.compile(r"(^|_)(session|show|game|match|visit|class|lesson|appointment|shift|flight|performance|slot|"
                          r"departure|departs|tour|demo|hearing|meeting|interview|event|route|starts|check_in|"
                          r"scheduled)(_|$)")
_DURATION = re.compile(r"^(duration|length)_(minutes|mins|hours|seconds)$")


def event_length(columns: Iterable[str]) -> tuple[str, str] | None:
    """``(column, unit)`` of how long a timed event lasts (``duration_hours`` → hours), or None."""
    for c in columns:
        m = _DURATION.match(c)
        if m:
            return c, {"mins": "minutes"}.get(m.group(2), m.group(2))
    return None


def is_timed_event(columns: Iterable[str], date_columns: Iterable[str]) -> bool:
    """Whether a table's records are events lasting minutes or hours: a duration in minutes or hours, or a
    date starting such an event (``starts_at``, ``shift_date``, ``departure_date``)."""
    return any(_DURATION.match(c) for c in columns) or any(clock_role(c) == "start" and _TIMED_EVENT.search(c)
                                                           for c in date_columns)


#: Records that hold many timed events at once (a salon's chairs, a clinic's rooms, a hospital, a venue, a course, a
#: team, a customer account): not occupied whole by one event, as a person, a room, a beamline or a vehicle is.
_MANY_AT_ONCE = re.compile(
    r"(^|_)(salons?|clinics?|offices?|hospitals?|practices?|cent(?:re|er)s?|facilit(?:y|ies)|venues?|sites?|"
    r"branch(?:es)?|stores?|shops?|compan(?:y|ies)|organi[sz]ations?|studios?|gyms?|schools?|universit(?:y|ies)|"
    r"campus(?:es)?|departments?|teams?|programm?es?|courses?|campaigns?|events?|services?|plans?|locations?|"
    r"regions?|cities|city|depots?|warehouses?|stations?|airports?|ports?|terminals?|propert(?:y|ies)|buildings?|"
    r"restaurants?|hotels?|markets?|agenc(?:y|ies)|firms?|accounts?|listings?|projects?|trials?|stud(?:y|ies)|"
    r"protocols?|types?|categor(?:y|ies)|templates?|pools?|queues?|lists?|groups?|cohorts?|class(?:es)?|matters?|"
    r"cases?|policies|policy|contracts?|orders?|tenants?|households?|families|family|fleets?|networks?|vendors?|"
    r"suppliers?|carriers?|partners?|brands?|products?|offers?|packages?|menus?|schedules?|rotas?|rosters?)$")
#: Tables of timed events that occupy what they point at (a session its therapist and room, a shift its agent):
#: not reminders, deadlines or notices, which only name a time, nor holds on a room or availability windows.
_NOT_OCCUPYING = re.compile(r"(^|_)(deadlines?|reminders?|notices?|notifications?|alerts?|alarms?|logs?|readings?|"
                            r"events?_logs?|usage_records?|usages?|holds?|availabilit(?:y|ies))$")
_END_AT = re.compile(r"^(ends_at|end_at|end_time|end_datetime|scheduled_end|slot_end|shift_end|finishes_at)$")


#: Statuses of a timed event that no longer holds its time (called off, moved, turned down).
CALLED_OFF = frozenset({"cancelled", "canceled", "rescheduled", "declined", "rejected", "withdrawn", "void", "voided",
                        "expired"})


def one_at_a_time(table: str, parent: str, columns: Iterable[str], date_columns: Iterable[str]
                  ) -> dict[str, Any] | None:
    """How the timed events of ``table`` occupy the ``parent`` record each points at, one at a time (a therapist in
    one session, a meeting room in one meeting, a beamline on one shift): ``{"start", "end" | "length", "unit"}``;
    None where ``parent`` holds many at once (``_MANY_AT_ONCE``) or the rows are no occupying events."""
    cols, dates = list(columns), list(date_columns)
    if table == parent or _MANY_AT_ONCE.search(parent) or _NOT_OCCUPYING.search(table):
        return None
    starts = event_starts(cols, dates)
    if not starts:
        return None
    end = next((c for c in dates if _END_AT.match(c)), None)
    length = event_length(cols)
    if end:
        return {"start": starts[0], "end": end}
    if length:
        return {"start": starts[0], "length": length[0], "unit": length[1]}
    return None


#: The time of day a dated event begins at, kept apart from its date (a route's ``start_time`` "06:00").
TIME_OF_DAY = re.compile(r"^(?:start|begin|departure|pickup|shift_start|slot_start)_time$")
_HH_MM = re.compile(r"^\d\d:\d\d$")


#: How many days (nights) a dated stay, hire or course lasts, kept apart from its start date.
STAY_LENGTH = re.compile(r"^(?:nights|num_nights|number_of_nights|length_of_stay|stay_nights|duration_days|rental_days|"
                         r"hire_days|num_days)$")


def stay_length(gens: dict[str, dict[str, Any]]) -> str | None:
    """The column holding how many whole days a record's stay lasts (a choice of, or a range of, whole
    numbers), or None."""
    for c, g in gens.items():
        if STAY_LENGTH.match(c) and (g.get("gen") == "int" or g.get("gen") == "choice" and all(
                isinstance(v, int) and not isinstance(v, bool) for v in g.get("values", ()))):
            return c
    return None


def longest_stay(gen: dict[str, Any]) -> int:
    """The most days a :func:`stay_length` column draws."""
    return int(gen["max"]) if gen.get("gen") == "int" else max(gen.get("values") or [0])


def time_of_day(gens: dict[str, dict[str, Any]], date_col: str) -> str | None:
    """The column holding the time of day at which the event dated by the date-only ``date_col`` begins (a
    choice of ``HH:MM`` values), or None."""
    if date_kind(gens.get(date_col, {})) != "date":
        return None
    for c, g in gens.items():
        g = g["default"] if g.get("gen") == "by" else g    # (drawn by status once a run in progress has begun)
        if TIME_OF_DAY.match(c) and g.get("gen") == "choice" \
                and all(isinstance(v, str) and _HH_MM.match(v) for v in g.get("values", ())):
            return c
    return None


def timed_windows(windows: dict[str, dict[str, Any]], gens: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """``windows`` of a status change with the time of day of a date-only start added (``at``): a route that
    starts at 13:00 is done after 13:00 and called off before it, not at 02:00 the same day."""
    out = {}
    for state, window in windows.items():
        base = window.get("before") or window.get("after")
        at = time_of_day(gens, base) if base else None
        out[state] = {**window, "at": at} if at else window
    return out


def event_starts(columns: Iterable[str], date_columns: Iterable[str]) -> list[str]:
    """The start dates of a timed event's table (``is_timed_event``): when the session, shift or visit begins."""
    dates = list(date_columns)
    return [c for c in dates if clock_role(c) == "start"] if is_timed_event(columns, dates) else []


def passing_windows(columns: Iterable[str], date_columns: Iterable[str], workflow: dict[str, Any] | None,
                    stamped: Iterable[str] = ()) -> dict[str, dict[str, dict[str, Any]]]:
    """``{date column: {status: window}}`` for records in a passing status, as the ``recent`` generator reads
    them: a timed event in progress (``NOW_STATES``) started in the last ``NOW_MINUTES`` minutes (a date-only
    start is today); a record in a ``DWELL_DAYS`` status was made, and started, within that many days
    (made a week before a dated start, as every made date of a clocked workflow is). A status's own stamp
    is not bounded here (it follows the status change), unless it is when the thing starts
    (``scheduled_at``)."""
    if not workflow:
        return {}
    states = set(workflow.get("states", ()))
    cols, dates, stamps = list(columns), list(date_columns), set(stamped)
    event = is_timed_event(cols, dates)
    clocked = bool(workflow.get("clock"))
    out: dict[str, dict[str, dict[str, Any]]] = {}
    dwell = dwell_days(cols, workflow)
    for col in dates:
        role, made = clock_role(col), happens_before_change(col)
        if col in stamps and role != "start" or col == "status_changed_at" or "birth" in col:
            continue   # (a scheduled session's ``scheduled_at`` is when it happens, not a stamp of the change)
        past, future = clock_constraints(workflow, col)
        for state in sorted(states):
            if role == "start" and event and state in NOW_STATES:
                out.setdefault(col, {})[state] = {"minutes": NOW_MINUTES}
            elif state in NOW_STATES and col == (charged_by_day(cols) or ("",) * 4)[1]:
                # a hire still out was picked up within the days a hire runs
                out.setdefault(col, {})[state] = {"days": [1 - HIRE_DAYS[1], -1]}
            elif state in dwell and state not in future and (made or role == "start"):
                days = dwell[state]
                # (a payment pending since it was received came in within those days, whatever its clock)
                top = -7 if made and clocked and date_rank(col) == 0 and state in DWELL_DAYS \
                    else (-1 if state in past else 0)
                out.setdefault(col, {})[state] = {"days": [top - days, top]}
    return out


#: Free-text columns and the template kind that writes them.
_TEXT_KIND_WORDS = (
    ("message", ("body", "message", "body_text", "gift_message", "merchant_reply", "cover_letter")),
    ("reason", ("reason", "failure_message", "deprecation_message")),
    ("justification", ("justification", "business_justification", "rationale")),
    ("description", ("description", "summary", "contents_description", "records_description", "agenda",
                     "hypothesis", "purpose", "goals", "criteria", "changelog", "bio", "preferences",
                     "instructions", "delivery_instructions", "dropoff_instructions", "special_requests",
                     "modifiers", "targeting_keywords")),
    ("title", ("name", "title", "subject", "headline", "show_title", "campground_name", "device_name", "nickname",
               "topic")),
)


def text_kind(column: str) -> str:
    for kind, names in _TEXT_KIND_WORDS:
        if column in names:
            return kind
    return "note"


# ------------------------------------------------------------------------------ applying the rules

_DATE_GENS = ("date", "datetime")


def date_kind(gen: dict[str, Any]) -> str | None:
    if gen.get("gen") in _DATE_GENS:
        return gen["gen"]
    if gen.get("gen") in ("after", "clock", "not_before", "after_parents", "recent", "spent_since", "period_end", "floored"):
        return gen.get("kind") or "datetime"
    if gen.get("gen") in ("when", "by"):
        return date_kind(gen.get("then") or gen.get("default") or {})
    if gen.get("gen") == "faker" and gen.get("provider") == "date_of_birth":
        return "date"
    return None


#: Sales-tax and VAT rates a business may charge; each world draws one from its name.
TAX_RATES = (0.05, 0.06, 0.07, 0.08, 0.0825, 0.1, 0.2)


#: Sales-tax, GST and VAT rates of a world's home country (a US shop does not charge 20 % VAT).
HOME_TAX_RATES = {"US": (0.05, 0.06, 0.07, 0.08, 0.0825), "CA": (0.05, 0.13, 0.15), "GB": (0.2,), "DE": (0.19, 0.07),
                  "FR": (0.2, 0.1), "IT": (0.22, 0.1), "ES": (0.21, 0.1), "NL": (0.21, 0.09), "JP": (0.1,), "AU": (0.1,),
                  "IN": (0.18, 0.12), "BR": (0.17, 0.18)}


def tax_rate(theme: dict[str, Any]) -> float:
    """The one tax rate a world charges: one of its home country's (stable for the theme: its name picks it)."""
    rates = HOME_TAX_RATES.get(HOME_COUNTRY.get(theme.get("locale", "en_US"), ""), TAX_RATES)
    return rates[zlib.crc32(str(theme.get("slug") or theme.get("title", "")).encode()) % len(rates)]


# --------------------------------------------------------------------------- home country and currency

#: ISO 3166-1 codes, English names and ISO 4217 currencies of the countries a business's records name.
COUNTRIES = {"US": ("United States", "USD"), "CA": ("Canada", "CAD"), "MX": ("Mexico", "MXN"),
             "GB": ("United Kingdom", "GBP"), "IE": ("Ireland", "EUR"), "DE": ("Germany", "EUR"),
             "FR": ("France", "EUR"), "NL": ("Netherlands", "EUR"), "BE": ("Belgium", "EUR"), "IT": ("Italy", "EUR"),
             "ES": ("Spain", "EUR"), "PT": ("Portugal", "EUR"), "AT": ("Austria", "EUR"), "CH": ("Switzerland", "CHF"),
             "SE": ("Sweden", "SEK"), "DK": ("Denmark", "DKK"), "PL": ("Poland", "PLN"), "JP": ("Japan", "JPY"),
             "KR": ("South Korea", "KRW"), "CN": ("China", "CNY"), "IN": ("India", "INR"), "SG": ("Singapore", "SGD"),
             "AU": ("Australia", "AUD"), "NZ": ("New Zealand", "NZD"), "BR": ("Brazil", "BRL"),
             "ZA": ("South Africa", "ZAR"), "AE": ("United Arab Emirates", "AED")}
#: A world's home country by its locale.
HOME_COUNTRY = {"en_US": "US", "en_GB": "GB", "de_DE": "DE", "en_AU": "AU", "fr_FR": "FR", "ja_JP": "JP",
                "en_CA": "CA", "en_IN": "IN", "nl_NL": "NL", "it_IT": "IT", "es_ES": "ES", "pt_BR": "BR"}
#: Businesses whose records cross borders (an import marketplace's sellers, a freight forwarder's carriers).
_ABROAD = re.compile(r"import|export|international|cross[- ]border|global|overseas|foreign|forex|currenc|remittance|"
                     r"customs|freight|travel|visa|expat|multinational|worldwide|offshore|airline|cruise|touris|"
                     r"embassy|immigration|translation|locali[sz]ation", re.IGNORECASE)
_COUNTRY_COLUMN = re.compile(r"^(.+_)?country(_code)?$")
_CURRENCY_COLUMN = re.compile(r"^(.+_)?currency(_code)?$")


def is_home_column(column: str) -> bool:
    """A country or currency column (ISO codes or names drawn by ``home_values``, not a trade's words)."""
    return bool(_COUNTRY_COLUMN.match(column) or _CURRENCY_COLUMN.match(column))


#: What a thing weighs in kilograms (low, high, decimals), by the words of its table's name, first match: a
#: letter is not 500 kg, nor a horse 3 kg, nor a shipping container 90 kg.
_WEIGHTS = ((r"mouse|mice|mouses|rats?$", (0.015, 0.06, 3)), (r"fish|zebrafish", (0.0003, 0.003, 4)),
            (r"horse|equine|cattle|cows?$|bulls?$|heifer", (320.0, 780.0, 1)), (r"sled_dog", (18.0, 32.0, 1)),
            (r"letter|mailpiece|passport|key_shipment|card", (0.02, 1.5, 2)),
            (r"bag|luggage|suitcase|baggage", (2.0, 32.0, 1)),
            (r"heavy_haul|oversize", (20000.0, 110000.0, 0)), (r"log_load", (12000.0, 38000.0, 0)),
            (r"container|dray|schiffsladung|barge", (2200.0, 30000.0, 0)),
            (r"pallet|handling_unit", (80.0, 1200.0, 1)), (r"crate", (20.0, 900.0, 1)),
            (r"loads?$|load_tender|freight|consignment|zending|waybill|haul|embarque|lots?$", (150.0, 24000.0, 0)),
            (r"parcel|package|paket|takuhaibin|label|carton|return|deliver|dispatch|shipment|box", (0.2, 30.0, 2)),
            (r"pet|dog|cat|animal|patient", (1.5, 45.0, 1)))
#: A business that moves freight, not parcels: its shipments weigh what a freight load does.
_FREIGHT = re.compile(r"freight|cargo|customs|container|ltl|haul|forwarder|export|barge|broker|cross-dock|terminal|"
                      r"shipper|load|pallet|trucking|drayage", re.IGNORECASE)
_HERD = re.compile(r"herd|livestock|cattle|dairy|ranch|farm animal", re.IGNORECASE)


def weight_range(table: str, theme_text: str) -> tuple[float, float, int] | None:
    """``(low, high, decimals)`` in kilograms of what a record of ``table`` weighs in a business described by
    ``theme_text`` (its title and description), or None where its name says nothing of it."""
    if re.search(r"shipment|deliver|dispatch", table) and _FREIGHT.search(theme_text):
        return (50.0, 20000.0, 0)
    if re.search(r"animal", table) and _HERD.search(theme_text):
        return (40.0, 780.0, 1)
    return next((scale for words, scale in _WEIGHTS if re.search(words, table)), None)


#: The weight columns :func:`weight_range` scales.
WEIGHT_COLUMNS = ("weight_kg", "gross_weight_kg")


def works_abroad(theme: dict[str, Any]) -> bool:
    """Whether a theme's business deals across borders (its title or description says so)."""
    return bool(_ABROAD.search(f"{theme.get('title', '')} {theme.get('slug', '')} {theme.get('description', '')}"))


def home_values(theme: dict[str, Any], column: str) -> tuple[list[str], list[int]] | None:
    """``(values, weights)`` of a country or currency column: a local business's records are all in its home
    country (a cake studio's customers do not come from 150 countries); one that works abroad has half of
    them at home and the rest among its trading partners. Money is in the home currency either way. None for
    other columns."""
    home = HOME_COUNTRY.get(theme.get("locale", "en_US"), "US")
    abroad = works_abroad(theme)
    codes = [home] + ([c for c in COUNTRIES if c != home] if abroad else [])
    weights = [len(codes) - 1 if abroad else 1] + [1] * (len(codes) - 1)
    if _COUNTRY_COLUMN.match(column):
        values = codes if column.endswith("_code") or column == "country_code" else [COUNTRIES[c][0] for c in codes]
        return values, weights
    if _CURRENCY_COLUMN.match(column):
        # even a business that works abroad prices and settles in its own currency: one limit, one total
        return [COUNTRIES[home][1]], [1]
    return None


def _ages(theme: dict[str, Any], ent: Any) -> tuple[int, int]:
    """The ages (low, high) of an entity's people: its kind's, above the minimum its business states for them (members
    of a wine club are 21 or older) with a margin, so that nothing in its past was done under age."""
    kind = person_kind(f"{ent.singular} {ent.key}")
    lo, hi = AGE_RANGES[kind]
    stated = stated_min_age(theme.get("description", ""), ent.table) if kind != "animal" else None
    return (min(max(lo, stated + STATED_AGE_MARGIN), hi - 10), hi) if stated else (lo, hi)


def apply_value_semantics(theme: dict[str, Any], ent: Any) -> None:
    """Rewrite an entity's generators (``ent.gens``, in place) so its rows make sense together."""
    gens: dict[str, dict[str, Any]] = ent.gens
    subject = ent.singular.replace("_", " ")
    nullable = {c["name"]: c.get("nullable", True) is not False and not c.get("unique") for c in ent.columns}
    columns = {c["name"]: c for c in ent.columns}
    for name in list(gens):
        home = home_values(theme, name) if gens[name].get("gen") in ("faker", "choice") else None
        if home:
            values, weights = home
            keep = {k: gens[name][k] for k in ("null_p",) if k in gens[name]}
            gens[name] = ({"gen": "const", "value": values[0]} if len(values) == 1
                          else {"gen": "choice", "values": values, "weights": weights}) | keep
            if "enum" in columns.get(name, {}):
                columns[name]["enum"] = list(values)
    for name, gen in list(gens.items()):
        kind = gen.get("gen")
        if kind == "words":
            # Templated English about the record instead of random dictionary words.
            gens[name] = {"gen": "text", "kind": text_kind(name), "subject": subject, "service": theme["title"],
                          **{k: gen[k] for k in ("unique", "null_p") if k in gen}}
        elif kind == "faker" and gen.get("provider") == "file_name":
            gens[name] = {"gen": "text", "kind": "file", "subject": subject, **{k: gen[k] for k in ("unique", "null_p") if k in gen}}
        elif kind == "faker" and gen.get("provider") == "date_of_birth":
            lo, hi = _ages(theme, ent)
            # 365.25-day years with a two-day margin, so nobody is a day short of the minimum age.
            gens[name] = {"gen": "date", "days": [int(-hi * 365.25), int(-lo * 365.25) - 2],
                          **({"null_p": gen["null_p"]} if "null_p" in gen else {})}
        elif name == "age" and kind in ("int", "float"):
            lo, hi = _ages(theme, ent)
            gens[name] = {"gen": "int", "min": lo, "max": hi}
        if gens[name].get("gen") == "text" and gens[name].get("kind") == "file" and file_exts(name):
            gens[name] = {**gens[name], "exts": list(file_exts(name) or ())}   # a photo is no spreadsheet
    for name in WEIGHT_COLUMNS:
        scale = weight_range(ent.table, f"{theme.get('title', '')} {theme.get('description', '')}")
        if scale and gens.get(name, {}).get("gen") in ("float", "money", "int"):
            lo, hi, decimals = scale
            gens[name] = {"gen": "float", "min": lo, "max": hi, "decimals": decimals,
                          **{k: gens[name][k] for k in ("null_p",) if k in gens[name]}}
    if "mime_type" in gens:
        if "file_name" in gens:
            gens["mime_type"] = {"gen": "mime_of", "of": "file_name"}
        else:
            gens["mime_type"] = {"gen": "choice", "values": ["application/pdf", "image/png", "image/jpeg", "text/csv"]}
    # A measured value's range follows its metric, a lab value's unit and range its analyte.
    if "metric" in gens and "value" in gens and gens["metric"].get("gen") == "choice":
        gens["value"] = {"gen": "by", "column": "metric", "default": gens["value"], "cases": {
            m: {"gen": "float", "min": lo, "max": hi, "decimals": 2 if hi - lo < 50 else 1}
            for m, (lo, hi) in METRIC_RANGES.items() if m in gens["metric"]["values"]}}
    def allowed(column: str, value: str) -> bool:
        """A derived value must be one the column accepts (its enum, or its choice list)."""
        gen = gens.get(column, {})
        return gen.get("gen") != "choice" or value in gen["values"]

    if "analyte" in gens and gens["analyte"].get("gen") == "choice":
        known = [a for a in gens["analyte"]["values"] if a in ANALYTES and allowed("unit", ANALYTES[a][0])]
        if "unit" in gens:
            gens["unit"] = {"gen": "by", "column": "analyte", "default": gens["unit"],
                            "cases": {a: {"gen": "const", "value": ANALYTES[a][0]} for a in known}}
        if "value" in gens:
            gens["value"] = {"gen": "by", "column": "analyte", "default": gens["value"],
                             "cases": {a: {"gen": "float", "min": ANALYTES[a][1], "max": ANALYTES[a][2], "decimals": 2}
                                       for a in known}}
            flag = next((c for c in FLAG_COLUMNS if gens.get(c, {}).get("gen") == "choice"
                         and set(RANGE_FLAGS) <= set(gens[c]["values"])), None)
            if flag:
                # a result is flagged by where its value lies against its analyte's reference range (a platelet
                # count of 149 is low, not "high"; a sodium of 139 normal), not drawn beside it
                gens[flag] = {"gen": "band", "column": "analyte", "of": "value", "labels": list(RANGE_FLAGS),
                              "ranges": {a: list(REFERENCE_RANGES[a]) for a in known if a in REFERENCE_RANGES},
                              "default": gens[flag]}
    if "name" in gens and gens["name"].get("gen") == "choice" and set(gens["name"]["values"]) & set(SERIES):
        known = [n for n in gens["name"]["values"] if n in SERIES and allowed("unit", SERIES[n][0])]
        if "unit" in gens:
            gens["unit"] = {"gen": "by", "column": "name", "default": gens["unit"],
                            "cases": {n: {"gen": "const", "value": SERIES[n][0]} for n in known}}
        for col in ("last_value", "alert_threshold"):
            if col in gens:
                gens[col] = {"gen": "by", "column": "name", "default": gens[col],
                             "cases": {n: {"gen": "float", "min": SERIES[n][1], "max": SERIES[n][2], "decimals": 1}
                                       for n in known}}
    # An address is its holder's: Maria Lopez writes from maria.lopez@..., not john.smith@...
    for col in [c for c in gens if c == "email" or c.endswith("_email")]:
        if gens[col].get("gen") != "faker" or "email" not in gens[col].get("provider", ""):
            continue
        who = email_holder(col, gens)
        if who:
            gens[col] = wrap(gens[col], gen="email_of", of=who)
    # A card's details only where the payment went by card: no last four digits on cash, a cheque or a wire.
    method = next((m for m in ("method", "payment_method") if gens.get(m, {}).get("gen") == "choice"), None)
    if method:
        cards = [v for v in gens[method]["values"] if "card" in str(v)]
        for col in [c for c in gens if c.startswith("card_") and nullable.get(c)]:
            inner = {k: v for k, v in gens[col].items() if k != "null_p"}
            gens[col] = {"gen": "when", "column": method, "in": cards, "then": inner} if cards else {"gen": "const", "value": None}
    if method:
        settle_by_method(gens, method)
    for start, end in ROUTE_ENDS:
        if start in gens and gens.get(end, {}).get("gen") == "choice":
            gens[end] = wrap(gens[end], gen="differs", apart_from=start)   # no flight from JFK to JFK
    for col in list(gens):
        got = accrual(col, gens)
        if got and gens[col].get("gen") in ("int", "float", "money"):
            gens[col] = wrap(gens[col], gen="accrued", since=got[0], per_day=got[1])
    for col, year, per_year in YEARLY:
        if col in gens and year in gens and gens[col].get("gen") in ("int", "float"):
            gens[col] = wrap(gens[col], gen="per_year", year=year, per_year=per_year)
    # Tax is the world's one rate on the subtotal (a shop does not charge 1.4 % on one order and 42 % on the
    # next, nor more tax than the goods cost).
    if "tax_amount" in gens and "subtotal" in gens:
        rate = tax_rate(theme)
        if "tax_rate" in gens:
            gens["tax_rate"] = {"gen": "const", "value": rate}
            gens["tax_amount"] = {"gen": "product", "of": ["subtotal", "tax_rate"]}
        else:
            gens["tax_amount"] = {"gen": "product", "of": ["subtotal"], "factor": rate}
    elif "tax_amount" in gens and "total_amount" in gens:
        # A total with tax in it and no subtotal (a till receipt): the tax is the world's rate's share of it.
        rate = tax_rate(theme)
        gens["tax_amount"] = {"gen": "product", "of": ["total_amount"], "factor": round(rate / (1 + rate), 6)}
    # Totals add up: an order's total is its subtotal plus tax and shipping; a line is quantity x price.
    for total, parts in TOTALS:
        present = [p for p in parts if p in gens]
        if total in gens and parts[0] in present:
            gens[total] = {"gen": "sum", "of": present}   # a subtotal alone is the whole total
    for net, gross, cuts in NET_PAY:
        if net in gens and gross in gens and all(gens[c].get("gen") in ("money", "float", "int") for c in (net, gross)):
            taken = [c for c, _ in cuts if c in gens and gens[c].get("gen") in ("money", "float", "int")]
            for c, share in cuts:
                if c in taken:
                    gens[c] = {"gen": "product", "of": [gross], "spread": list(share)}
            gens[net] = {"gen": "sum", "of": [gross], "less": taken}
    if {"quantity", "unit_price", "line_total"} <= set(gens):
        # a line comes to its quantity at its price, less its discount where it has one
        off = {"less_percent": "discount_percent"} if "discount_percent" in gens else {}
        gens["line_total"] = {"gen": "product", "of": ["quantity", "unit_price"], **off}
        if "tax_rate" in gens and _LINE_TABLES.search(ent.table):
            gens["tax_rate"] = {"gen": "const", "value": tax_rate(theme)}   # the world's one rate, as on the whole
    if set(LOAN_TERMS) <= set(gens):
        # a loan's monthly payment repays its principal at its rate over its term, not a figure drawn beside them
        *of, payment = LOAN_TERMS
        gens[payment] = {"gen": "annuity", "of": of, **{k: v for k, v in gens[payment].items() if k == "null_p"}}
    by_day = charged_by_day(gens)
    if by_day:
        # a hire costs its daily rate for each day it runs: 3 days at 85.48 is 256.44, not whatever was drawn
        rate, start_col, end_col, charge = by_day
        gens[charge] = {"gen": "per_day", "of": [rate, start_col, end_col]}
    # Dates in a record's order: each later date drawn after the one before it.
    dates = [c for c, g in gens.items() if date_kind(g) and c != "status_changed_at" and "birth" not in c]
    clocked = bool(ent.workflow and ent.workflow.get("clock"))
    for c in dates:
        # A record cannot have been made (or filed, joined, posted) in the future; where its status dates
        # it, it was made a week before, so a start that has passed still follows its making.
        gen = gens[c]
        top = -7 if clocked and date_rank(c) == 0 else 0
        if gen.get("gen") in _DATE_GENS and (date_rank(c) in (-1, 0) or is_past_column(c)) and gen.get("days", [0, 0])[1] > top:
            lo, hi = gen["days"]
            gens[c] = {**gen, "days": [min(lo, top - 1), top]}
    for earlier, later, strict in ordered_pairs(dates):
        old = gens[later]
        lo, hi = old.get("days", [-365, 0])
        span = max(1, min(int(hi - lo) or 1, 120))
        start = (1 if date_kind(old) == "date" else 1 / 24) if strict else 0
        whole = bool(by_day) and (earlier, later) == (by_day[1], by_day[2])
        gens[later] = {"gen": "after", "of": earlier, "kind": date_kind(old),
                       "days": list(HIRE_DAYS) if whole else [start, max(start, span)],
                       "else_days": [lo, hi], "not_after_now": is_past_column(later) or hi <= 0,
                       **({"whole_days": True} if whole else {}),
                       **({"null_p": old["null_p"]} if "null_p" in old else {})}
    stage = gens.get("stage", {})
    if stage.get("gen") == "choice" and set(DEAL_STAGES) & set(stage["values"]) >= {"closed_won", "closed_lost"}:
        # a deal's stage settles its odds and its close: won is certain, lost is none, and both have closed
        prob = next((c for c in DEAL_ODDS if gens.get(c, {}).get("gen") in ("int", "float")), None)
        if prob:
            gens[prob] = {"gen": "by", "column": "stage", "default": gens[prob], "cases": {
                s: {"gen": gens[prob]["gen"], "min": lo, "max": hi} for s, (lo, hi) in DEAL_STAGES.items() if s in stage["values"]}}
        close = next((c for c in DEAL_CLOSE if gens.get(c, {}).get("gen") == "date"), None)
        if close:
            gens[close] = {"gen": "by", "column": "stage", "default": gens[close], "cases": {
                s: {"gen": "date", "days": [-180, -1] if s.startswith("closed_") else [0, 180]}
                for s in stage["values"] if s in DEAL_STAGES}}
    if ent.workflow:
        stamps = status_stamps(list(gens), ent.workflow)
        # Dates agree with the record's status on the world's clock (the workflow's ``clock`` map).
        clocks = {c: clock_constraints(ent.workflow, c) for c in dates if c not in stamps}
        floors = {c: gens[c]["of"] for c in clocks if gens[c].get("gen") == "after" and gens[c].get("of") in clocks}
        # What lies behind a date that has passed has passed too (an overdue payment's period has started).
        for col in sorted(clocks, key=lambda c: -(date_rank(c) or 0)):
            earlier = floors.get(col)
            if earlier and clocks[col][0]:
                past, future = clocks[earlier]
                clocks[earlier] = (sorted(set(past) | set(clocks[col][0])), [s for s in future if s not in clocks[col][0]])
        for col, (past, future) in clocks.items():
            if past or future:
                inner = gens[col]
                floor = inner.get("of") if inner.get("gen") == "after" else None
                # A date that has passed leaves a few days for the dates that follow it.
                gap = {"gap": 4} if clock_role(col) == "start" or col in floors.values() else {}
                # a stay that has ended began its nights ago at least: no completed week that started on Monday
                lasts = stay_length(gens) if clock_role(col) == "start" and date_kind(inner) == "date" else None
                ended = sorted(STAYED_STATES & set(past))
                whole = {"whole_days": True} if inner.get("whole_days") else {}
                gens[col] = wrap(inner, gen="clock", column="status", past=past, future=future,
                                 kind=date_kind(inner), **({"floor": floor} if floor else {}), **gap, **whole,
                                 **({"lasts": lasts, "ended": ended, "longest": longest_stay(gens[lasts])}
                                    if lasts and ended else {}))
        for col in dates:
            soon = eta_days(col, ent.workflow["states"])
            if soon and col not in stamps:
                # what is under way arrives soon (a parcel out for delivery, tomorrow at the latest), never before
                # the dates it follows (its ship date)
                after = sorted({e for e, later, _ in ordered_pairs([d for d in dates if "birth" not in d])
                                if later == col and e in gens and col not in reads(gens, e)})
                gens[col] = wrap(gens[col], gen="soon", column="status", days=soon, kind=date_kind(gens[col]) or "date",
                                 **({"after": after} if after else {}))
        for col, empty in unreached_columns(list(gens), ent.workflow).items():
            undecided, decided = undecided_split(gens[col])
            if undecided and decided:
                # An outcome with a word for "not decided yet": unfinished records hold it, finished ones
                # one of the others (a dispute under review is undecided; a decided one was won or lost).
                gens[col] = {"gen": "by", "column": "status", "default": decided,
                             "cases": {s: {"gen": "const", "value": undecided} for s in sorted(empty)}}
                continue
            # A queued job has not started, a running one has no exit code yet.
            if nullable.get(col, True) and gens[col].get("gen") != "when":
                inner = {k: v for k, v in gens[col].items() if k != "null_p"}
                keep = [s for s in ent.workflow["states"] if s not in empty]
                # (an approved grant has its award: a decided figure is never left blank once decided)
                gens[col] = {"gen": "when", "column": "status", "in": keep, "then": inner,
                             **({"null_p": gens[col]["null_p"]} if "null_p" in gens[col] and not _DECIDED_FIGURE.search(col)
                                else {})}
        for col, states in stamps.items():
            if nullable.get(col, True):
                then = {k: v for k, v in gens[col].items() if k != "null_p"}
                stem = stamp_status(col)
                read = any(col in sources(g) for c, g in gens.items() if c != col)
                past, future = clock_constraints(ent.workflow, col)
                if past or future:
                    # "scheduled_at" is when a scheduled record is due to happen, not when it was scheduled.
                    floor = then.get("of") if then.get("gen") == "after" else None
                    then = {"gen": "clock", "inner": then, "column": "status", "past": past, "future": future,
                            "kind": date_kind(then) or "datetime", **({"floor": floor} if floor else {})}
                elif "status_changed_at" in gens and not read and date_rank(col) != 0:
                    # Reaching the status is when the status last changed; a status passed through on the way
                    # was reached before that (an alert triggered, then acknowledged), after the record's making.
                    kind = date_kind(then) or "datetime"
                    made = [c for c in dates if date_rank(c) == 0 and c not in stamps]
                    earlier = {"gen": "after", "of": "status_changed_at", "days": [-30, 0], "kind": kind,
                               **({"at_least": made} if made else {})}
                    then = {"gen": "by", "column": "status", "default": earlier, "cases": {stem: {
                        "gen": "lookup_row", "of": "status_changed_at", "kind": kind}}}
                gens[col] = {"gen": "when", "column": "status", "in": sorted(states), "then": then}
        if "status_changed_at" in gens and "updated_at" in gens and date_kind(gens["updated_at"]):
            # A status change is an update: the last update is no earlier than it.
            gens["updated_at"] = {"gen": "after", "of": "status_changed_at", "kind": date_kind(gens["updated_at"]),
                                  "days": [0, 30], "not_after_now": True}
        if "status_changed_at" in gens:
            # The status changed after the record was made, after what happened to it (an alert triggered,
            # a case opened) and after it started or ended, where that has happened; never after now. A
            # status's own stamp that is read off the change is left out (it follows the change).
            after = [c for c in dates if "status_changed_at" not in sources(gens[c])
                     and (c not in stamps and (date_rank(c) is not None or clock_role(c)) or happens_before_change(c))]
            pull = [c for c in after if happens_before_change(c)]
            # A record still in the status it was made in, which no change leads back to, has not changed
            # since it was made (or since the last thing that happened to it): no pending sign-up whose
            # status "changed" years after it was created.
            first = (ent.workflow.get("states") or [None])[0] if ent.workflow else None
            fresh = first is not None and not any(t.get("to") == first for t in ent.workflow.get("transitions", ()))
            dwell = dwell_days(gens, ent.workflow)
            # A session is called off before it begins (after that it was missed, not cancelled); a business
            # rule's lead time (``policies``) replaces this window with a longer one.
            starts = event_starts(gens, dates)
            windows = {s: {"before": starts[0], "hours": 0} for s in sorted(called_off_before_start(ent.workflow))} \
                if starts else {}
            # ... and so is a hire or a stay cancelled only from before it began (requested, confirmed): not once
            # the van was picked up
            begins = None if starts else next((c for c in dates if clock_role(c) == "start" and c in after), None)
            windows |= {s: {"before": begins, "hours": 0} for s in sorted(called_off_ahead(ent.workflow))} if begins else {}
            # ... and one that took place (or was missed) is closed the day it happened, not weeks later
            windows |= {s: {"after": starts[0], "days": 1} for s in sorted(ENDED_EVENT_STATES & set(ent.workflow["states"]))} \
                if starts else {}
            lasts = stay_length(gens) if starts and date_kind(gens[starts[0]]) == "date" else None
            if lasts:
                # ... and a stay is closed once its nights are over (checked out), not on the day it began
                windows = {s: {**w, "plus": lasts} if s in STAYED_STATES and "after" in w else w
                           for s, w in windows.items()}
            length = event_length(gens) if starts and not lasts else None
            if length:
                # ... and a shift or a flight is done once it is over (start plus its duration), not 8 minutes in
                windows = {s: {**w, "for": length[0], "unit": length[1]} if s in STAYED_STATES and "after" in w else w
                           for s, w in windows.items()}
            # ... and one approved, put in force or cut short changed before its end date (no quote approved
            # after it ran out, no licence terminated early once it had ended)
            end = next((c for c in dates if clock_role(c) == "end" and c in after), None)
            windows |= {s: {"before": end, "hours": 0} for s in ends_after_change(ent.workflow, end) if s not in windows}
            windows = timed_windows(windows, gens)
            at = time_of_day(gens, starts[0]) if starts else None
            started = sorted(NOW_STATES & set(ent.workflow["states"]))
            early = [v for v in gens[at]["values"] if v <= WORLD_NOW[11:16]] if at else []
            if started and early:
                # a run in progress today began at a time that has come (not at 13:00 with the clock at noon)
                gens[at] = {"gen": "by", "column": "status", "default": gens[at],
                            "cases": {s: {"gen": "choice", "values": early} for s in started}}
            gens["status_changed_at"] = {"gen": "changed", "column": "status", "after": after,
                                         **({"pull": pull} if pull else {}), **({"initial": first} if fresh else {}),
                                         **({"dwell": dwell} if dwell else {}), **({"windows": windows} if windows else {})}
        paid = ent.workflow.get("paid")
        for paid_col, due_col in PAID:
            if paid and paid_col in gens and due_col in gens:
                gens[paid_col] = {"gen": "paid", "of": due_col, "column": "status", **paid}
                break
    found = terms_columns(gens)
    if found and ent.workflow and gens[found[0]].get("gen") == "choice" \
            and set(gens[found[0]]["values"]) <= set(TERMS_DAYS):
        # Net 30 is due 30 days after it was issued: the terms are drawn among those whose due date falls on
        # the side of today the status asks (a sent invoice is not yet due, an overdue one is past due).
        terms, issued, due = found
        past, future = clock_constraints(ent.workflow, due)
        days = {v: TERMS_DAYS[v] for v in gens[terms]["values"]}
        gens[terms] = {"gen": "terms", "inner": gens[terms], "of": issued, "column": "status", "days": days,
                       "past": past, "future": future}
        kind = date_kind(gens[due]) or "date"
        inner = gens[due].get("inner") if gens[due].get("gen") == "clock" else None
        drafted = (inner or gens[due]).get("else_days")   # the due date of a draft, which has no issue date yet
        cases = {v: {"gen": "after", "of": issued, "kind": kind, "days": [n, n], **({"else_days": drafted} if drafted else {})}
                 for v, n in days.items()}
        by_terms = {"gen": "by", "column": terms, "default": inner or gens[due], "cases": cases}
        # (a due date equal to its issue date is due on receipt: the clock keeps no floor of its own here)
        gens[due] = {**{k: v for k, v in gens[due].items() if k != "floor"}, "inner": by_terms} if inner else by_terms
        longest = max(days.values())
        top = -7 if ent.workflow.get("clock") and date_rank(issued) == 0 else 0
        if future and longest - 1 > -top:
            # an invoice not yet due was issued within its longest terms
            gens[issued] = wrap(gens[issued], gen="recent", column="status", kind=date_kind(gens[issued]) or "date",
                                windows={s: {"days": [1 - longest, top]} for s in future})
    for col, states in unseen_counts(gens, ent.workflow).items():
        gens[col] = {"gen": "by", "column": "status", "default": gens[col],
                     "cases": {s: {"gen": "const", "value": 0} for s in sorted(states)}}
    groups = gens.get("age_group", {})
    born = next((c for c in gens if c in ("date_of_birth", "birth_date", "dob")), None)
    if born and groups.get("gen") == "choice" and set(groups["values"]) <= set(AGE_GROUPS) \
            and gens[born].get("gen") == "date":
        # an infant was born in the last two years, a senior more than 65 years ago; none younger than the business
        # lets in (no infant on a Segway tour whose riders must be 14 or older)
        stated = stated_min_age(theme.get("description", ""), ent.table)
        floor = stated + STATED_AGE_MARGIN if stated else 0
        ages = {g: (max(AGE_GROUPS[g][0], floor), AGE_GROUPS[g][1]) for g in groups["values"]}
        ages = {g: (a, b) for g, (a, b) in ages.items() if a <= b}
        if ages and len(ages) < len(groups["values"]):
            kept = [(v, w) for v, w in zip(groups["values"], groups.get("weights") or [1] * len(groups["values"]))
                    if v in ages]
            gens["age_group"] = {**groups, "values": [v for v, _ in kept],
                                 **({"weights": [w for _, w in kept]} if "weights" in groups else {})}
            if "enum" in columns.get("age_group", {}):
                columns["age_group"]["enum"] = [v for v in columns["age_group"]["enum"] if v in ages]
        gens[born] = {"gen": "by", "column": "age_group", "default": gens[born], "cases": {
            g: {"gen": "date", "days": [int(-b * 365.25), int(-a * 365.25) - 2]}
            for g, (a, b) in ages.items()}, **({"null_p": gens[born]["null_p"]} if "null_p" in gens[born] else {})}
        gens[born]["default"].pop("null_p", None)
    tier_col = next((c for c in ("loyalty_tier", "tier") if gens.get(c, {}).get("gen") == "choice"
                     and set(gens[c]["values"]) <= set(TIER_ORDER)), None)
    earned = next((c for c in ("lifetime_spend", "lifetime_points", "total_spent") if c in gens
                   and gens[c].get("gen") in ("money", "int", "float")), None)
    if tier_col and earned:
        # a platinum member has spent more than a bronze one: each tier its band of the range, in order
        order = sorted(gens[tier_col]["values"], key=TIER_ORDER.index)
        lo, hi, g = gens[earned]["min"], gens[earned]["max"], gens[earned]
        step = (hi - lo) / len(order)
        bands = {t: (lo + i * step, lo + (i + 1) * step) for i, t in enumerate(order)}
        gens[earned] = {"gen": "by", "column": tier_col, "default": g, "cases": {
            t: {**g, "min": int(a) if g["gen"] == "int" else round(a, 2), "max": int(b) if g["gen"] == "int" else round(b, 2)}
            for t, (a, b) in bands.items()}}
    titles = gens.get("job_title", {})
    if titles.get("gen") == "choice" and len({seniority(t) for t in titles["values"]}) > 1:
        # pay, contract and tenure follow the title: no assistant on 246,000, no intern as head, no ten-year trainee
        pay = next((c for c in PAY_COLUMNS if gens.get(c, {}).get("gen") in ("money", "float", "int")), None)
        if pay:
            g = gens[pay]
            lo, hi = g["min"], g["max"]

            def band(t: str) -> dict[str, Any]:
                a, b = PAY_BANDS[seniority(t)]
                x, y = lo + a * (hi - lo), lo + b * (hi - lo)
                return {**g, "min": int(x) if g["gen"] == "int" else round(x, 2), "max": int(y) if g["gen"] == "int" else round(y, 2)}

            gens[pay] = {"gen": "by", "column": "job_title", "default": g, "cases": {t: band(t) for t in titles["values"]}}
        kind = gens.get("employment_type", {})
        if kind.get("gen") == "choice" and "intern" in kind["values"] and len(kind["values"]) > 1:
            rest = [(v, w) for v, w in zip(kind["values"], kind.get("weights") or [1] * len(kind["values"])) if v != "intern"]
            gens["employment_type"] = {"gen": "by", "column": "job_title", "default": {
                "gen": "choice", "values": [v for v, _ in rest], "weights": [w for _, w in rest]},
                "cases": {t: {"gen": "const", "value": "intern"} for t in titles["values"] if seniority(t) == 0}}
        hired = next((c for c in _HIRED if gens.get(c, {}).get("gen") == "date"), None)
        if hired and gens[hired].get("days", [0, 0])[0] < -730:
            first, last = gens[hired]["days"]
            gens[hired] = {"gen": "by", "column": "job_title", "default": gens[hired], "cases": {
                t: {**gens[hired], "days": [max(first, -730), last]} for t in titles["values"] if seniority(t) == 0}}
    sized = headcount_column(gens)
    tiers = gens.get("tier", {})
    if sized and gens[sized].get("gen") == "int" and tiers.get("gen") == "choice" \
            and set(tiers["values"]) <= set(TIER_HEADCOUNT):
        # a company's headcount fits its tier
        gens[sized] = {"gen": "by", "column": "tier", "default": gens[sized], "cases": {
            t: {"gen": "int", "min": TIER_HEADCOUNT[t][0], "max": TIER_HEADCOUNT[t][1]} for t in tiers["values"]}}
    if not ent.workflow and gens.get("is_active", {}).get("gen") == "bool":
        # An active card or pass has not expired.
        for col in dates:
            if clock_role(col) == "end":
                gens[col] = wrap(gens[col], gen="clock", column="is_active", past=[], future=[1],
                                 kind=date_kind(gens[col]))
    if verdict_columns(gens):
        verdict_follows_score(gens)
    born = next((c for c in BIRTH_COLUMNS if c in gens and date_kind(gens[c])), None)
    for col in [c for c in gens if c != born and is_made_column(c) and not c.startswith(("is_", "has_"))
                and date_kind(gens[c]) and born not in reads(gens, c) and c not in reads(gens, born)] if born else ():
        # nobody registers or enrols before being born (audit 73: 1,286 people in 163 worlds did)
        gens[col] = wrap(gens[col], gen="floored", floor=born, kind=date_kind(gens[col]))
    purpose = reason_purpose(gens)
    if purpose and gens["reason"].get("gen") == "text" and gens["reason"].get("kind") == "reason" \
            and not gens["reason"].get("by_status"):
        # why a visit or a referral came about, not why something was cancelled
        gens["reason"] = {**{k: v for k, v in gens["reason"].items() if k not in ("kind", "by_status")},
                          "kind": "purpose", "of": purpose}
    outcomes = gens.get("outcome", {}).get("values", ()) if gens.get("outcome", {}).get("gen") == "choice" else ()
    for col, decider, states, value in status_values(gens, ent.workflow, outcomes):
        if col not in reads(gens, decider):
            # a failed payment paid the processor nothing, a missed call lasted no time, an open ticket has no rating yet
            inner = {k: v for k, v in gens[col].items() if k != "null_p"}
            gens[col] = {"gen": "by", "column": decider, "default": inner,
                         "cases": {st: {"gen": "const", "value": value} for st in states},
                         **{k: gens[col][k] for k in ("null_p",) if k in gens[col]}}
    exits = exit_codes(gens, ent.workflow)
    if exits and "exit_code" not in reads(gens, "status"):
        # a check that passed exited 0, one that failed did not, one not run yet has no exit code
        ok, bad, _ = exits
        gens["exit_code"] = {"gen": "by", "column": "status", "default": {"gen": "const", "value": None},
                             "cases": {**{st: {"gen": "const", "value": 0} for st in ok},
                                       **{st: {"gen": "choice", "values": [1, 2, 127, 137, 143]} for st in bad}}}
    for flag, states in status_flags(gens, ent.workflow).items():
        if gens[flag].get("gen") == "bool" and flag not in reads(gens, "status"):
            # a cancelled subscription renews nothing, an inactive supplier is nobody's preferred one, an approved pull
            # request is no draft (audit 72: auto-renew on 12,183 of 15,391 shut records in 237 worlds)
            gens[flag] = {"gen": "by", "column": "status", "default": {k: v for k, v in gens[flag].items() if k != "null_p"},
                          "cases": {st: {"gen": "const", "value": 0} for st in states},
                          **{k: gens[flag][k] for k in ("null_p",) if k in gens[flag]}}
    types, fuels = gens.get("vehicle_type", {}), gens.get("fuel_type", {})
    if types.get("gen") == "choice" and fuels.get("gen") == "choice":
        # a jet burns jet fuel, an electric van electricity, a car no jet fuel (audit 72: cars on jet_a, a
        # Setra light jet on diesel, 37 of 88 vehicles in one world)
        cases = {t: {"gen": "choice", "values": ok} for t in types["values"]
                 if (ok := fuels_for(t, fuels["values"])) and ok != list(fuels["values"])}
        if cases:
            # (a theme's own words stay its own: the vocabulary lint reads the flag off the column's generator)
            gens["fuel_type"] = {"gen": "by", "column": "vehicle_type", "default": {k: v for k, v in fuels.items() if k != "null_p"},
                                 "cases": cases, **{k: fuels[k] for k in ("null_p", "theme_words") if k in fuels}}
    kinds, codes = gens.get("event_type", {}), gens.get("exception_code", {})
    failing = sorted(EXCEPTION_EVENTS & set(kinds.get("values", ())))
    if kinds.get("gen") == "choice" and codes.get("gen") == "choice" and failing \
            and "none" in codes["values"] and len(codes["values"]) > 1:
        # a tracking event has an exception code only where it is an exception, and an exception has one
        faults = [v for v in codes["values"] if v != "none"]
        gens["exception_code"] = {"gen": "by", "column": "event_type", "default": {"gen": "const", "value": "none"},
                                  "cases": {e: {"gen": "choice", "values": faults} for e in failing},
                                  **{k: codes[k] for k in ("null_p", "theme_words") if k in codes}}
    timed = incident_timing(gens, ent.workflow)
    if timed:
        start, length, ended = timed
        # an incident lasted from its declaration to its resolution, and an open one has no length yet (audit 72:
        # 54 of 55 resolved incidents' durations disagreed with their timestamps; triggered ones had lengths)
        gens[length] = {"gen": "when", "column": "status", "in": ended,
                        "then": {"gen": "minutes_between", "start": start, "end": "status_changed_at"}}
        changed = gens["status_changed_at"]
        if changed.get("gen") == "changed":
            # and is resolved within days of being declared, not months (a rule's own window stays)
            windows = {s: {"after": start, "days": INCIDENT_DAYS} for s in ended}
            gens["status_changed_at"] = {**changed, "windows": {**windows, **changed.get("windows", {})}}
    settled = settle_windows(gens, ent.workflow)
    if settled and gens["status_changed_at"].get("gen") == "changed":
        # a card payment received is captured (or fails, or is voided) within days, not months (audit 72: 71,878
        # of 102,990 captured payments in 243 worlds settled more than two weeks after they were received)
        changed = gens["status_changed_at"]
        gens["status_changed_at"] = {**changed, "windows": {**settled, **changed.get("windows", {})}}
    for col in REPORT_FILES if ent.workflow else ():
        unwritten = sorted(UNREPORTED_STATES & set(ent.workflow.get("states", ())))
        if col in gens and unwritten and gens[col].get("gen") != "when" and "status" in gens:
            # a report is written once the work is done: none on a scheduled or cancelled inspection
            gens[col] = {"gen": "when", "column": "status", "in": [s for s in ent.workflow["states"] if s not in unwritten],
                         "then": {k: v for k, v in gens[col].items() if k != "null_p"},
                         **{k: gens[col][k] for k in ("null_p",) if k in gens[col]}}
    cycle = billing_cycle(gens)
    if cycle and date_kind(gens[cycle[2]]) and ent.workflow and gens[cycle[2]].get("gen") != "period_end":
        start, period, end = cycle
        live = sorted(LIVE_PERIOD_STATES & set(ent.workflow.get("states", ())))
        if live:
            # a live subscription's current period ends at the first renewal after today, one billing period away
            # at most (audit 72: monthly subscriptions whose period ran to August, annual ones ending after weeks)
            gens[end] = wrap(gens[end], gen="period_end", start=start, period=period, column="status", live=live,
                             kind=date_kind(gens[end]))
    spent = spent_since(gens)
    if spent and date_kind(gens[spent[1]]) and gens[spent[1]].get("gen") != "spent_since":
        spend, since, per_day = spent
        # a business whose customers spend more (a home buyer's hundreds of thousands) reaches its largest spend in
        # as many days as a shop's customer reaches hers: no buyer signed up before she was born
        top = _money_max(gens[spend])
        per_day = max(per_day, round(top / SPEND_DAYS, 2)) if top else per_day
        gens[since] = wrap(gens[since], gen="spent_since", of=spend, per_day=per_day, kind=date_kind(gens[since]))
    for used, cap in CAPS:
        if used in gens and cap in gens and gens[used].get("gen") != "at_most":
            gens[used] = wrap(gens[used], gen="at_most", of=cap)
    for value, floor in FLOORS:
        if value in gens and floor in gens and gens[value].get("gen") != "at_least":
            gens[value] = wrap(gens[value], gen="at_least", of=floor)
    if not ent.workflow:
        for paid_col, due_col in PAID:
            if paid_col in gens and due_col in gens:
                gens[paid_col] = wrap(gens[paid_col], gen="at_most", of=due_col)
    ent.gens = dependency_order(gens)


#: An inspection's or audit's pass mark on a score out of 100: one passed scored at least this, one failed less.
PASS_MARK = 70
#: Score columns a pass or a fail follows, and the verdict columns.
SCORE_COLUMNS = ("score", "total_score", "inspection_score", "audit_score", "overall_score")
VERDICT_COLUMNS = ("passed", "is_passed", "pass")


#: The file types a file column holds, by what its name says it is (audit 72: inspection photos saved as .xlsx,
#: reports as .jpg). Columns that say neither keep any document type.
FILE_KINDS = ((re.compile(r"photo|image|picture|snapshot|thumbnail|selfie"), ("jpg", "png", "heic")),
              (re.compile(r"audio|recording|voicemail"), ("mp3", "wav", "m4a")),
              (re.compile(r"video|footage"), ("mp4", "mov")),
              (re.compile(r"report|document|contract|invoice|statement|certificate|letter|minutes|agreement|pdf"),
               ("pdf", "docx", "xlsx", "csv")))


def file_exts(column: str) -> tuple[str, ...] | None:
    """The extensions a file column named ``column`` holds (:data:`FILE_KINDS`), or None where its name says none."""
    return next((exts for pattern, exts in FILE_KINDS if pattern.search(column)), None)


#: Values a status fixes: ``(columns, statuses, value)`` - a failed or voided payment paid no processor fee, a call
#: never answered lasted no time, a ticket not yet resolved has no satisfaction rating and a new one no first
#: response (audit 73: fees on 24,993 of 25,787 failed payments in 243 worlds; 6,833 missed calls with durations).
STATUS_VALUES = ((("processor_fee", "processing_fee"), frozenset({"failed", "voided", "declined"}), 0.0),
                 (("duration_seconds", "talk_time_seconds"), frozenset({"missed", "busy", "no_answer", "unanswered"}), 0),
                 (("satisfaction_rating", "csat_score", "csat"), frozenset({"new", "open", "pending", "on_hold",
                                                                            "in_progress", "triaged"}), None),
                 (("first_response_minutes",), frozenset({"new"}), None))
#: What a call's outcome fixes besides: a call that failed to connect lasted no time (a check that failed ran).
OUTCOME_VALUES = ((("duration_seconds", "talk_time_seconds"), frozenset({"missed", "busy", "no_answer", "unanswered",
                                                                          "failed"}), 0),)
#: Statuses of a run that passed, failed, or has not finished: what its exit code says.
EXIT_OK = frozenset({"passed", "succeeded", "success", "completed"})
EXIT_BAD = frozenset({"failed", "error", "errored", "timed_out"})


def status_values(columns: Iterable[str], workflow: dict[str, Any] | None, outcomes: Iterable[str] = ()
                  ) -> list[tuple[str, str, list[str], Any]]:
    """``(column, deciding column, statuses, value)``: the :data:`STATUS_VALUES` a table's columns take by its status,
    or, for a table with none, by its ``outcome`` (a call's: answered, missed, busy), whose values are ``outcomes``."""
    have, states = list(columns), set((workflow or {}).get("states", ()))
    decider, values = ("status", states) if states else ("outcome", set(outcomes))
    out = []
    for cols, fixed, value in STATUS_VALUES if states else OUTCOME_VALUES:
        col = next((c for c in cols if c in have), None)
        if col and fixed & values and decider in have:
            out.append((col, decider, sorted(fixed & values), value))
    return out


def exit_codes(columns: Iterable[str], workflow: dict[str, Any] | None) -> tuple[list[str], list[str], list[str]] | None:
    """``(statuses exiting 0, statuses exiting non-zero, statuses with no exit code)`` of a run with an ``exit_code``."""
    states = list((workflow or {}).get("states", ()))
    ok, bad = [s for s in states if s in EXIT_OK], [s for s in states if s in EXIT_BAD]
    if "exit_code" not in list(columns) or not ok or not bad:
        return None
    return ok, bad, [s for s in states if s not in EXIT_OK | EXIT_BAD]


#: A person's date of birth: what they did (registered, enrolled, signed up) came after it.
BIRTH_COLUMNS = ("date_of_birth", "birth_date", "dob")


def reason_purpose(columns: Iterable[str]) -> str | None:
    """What a record's ``reason`` column gives the purpose of: ``visit`` (an appointment's), ``referral``, or None
    (a reason of some other kind: a refund's, a cancellation's)."""
    have = set(columns)
    if "reason" not in have:
        return None
    if "visit_type" in have:
        return "visit"
    return "referral" if "referred_on" in have or "referral_number" in have else None


#: Flags a shut record no longer holds (it renews nothing, is nobody's preferred or default one).
SHUT_FLAGS = ("auto_renew", "is_preferred", "is_default", "is_featured", "is_primary", "is_recommended")
#: Statuses past a draft: a record in one is no draft.
PAST_DRAFT_STATES = frozenset({"approved", "merged", "published", "released", "accepted", "signed", "live"})


def status_flags(columns: Iterable[str], workflow: dict[str, Any] | None) -> dict[str, list[str]]:
    """``{flag column: statuses in which it is off}``: a shut record's :data:`SHUT_FLAGS`, and ``is_draft`` past a
    draft (:data:`PAST_DRAFT_STATES`)."""
    have, states = list(columns), (workflow or {}).get("states", ())
    shut = sorted(s for s in states if is_shut(s))
    out = {f: shut for f in SHUT_FLAGS if f in have and shut}
    past = sorted(PAST_DRAFT_STATES & set(states))
    if "is_draft" in have and past:
        out["is_draft"] = past
    return out


#: The fuels each kind of vehicle runs on (the first pattern its type matches); road vehicles burn no aviation fuel.
FUEL_FITS = ((re.compile(r"jet|turboprop|helicopter"), frozenset({"jet_a"})),
             (re.compile(r"single_engine|multi_engine|light_sport"), frozenset({"avgas", "mogas"})),
             (re.compile(r"^ev|electric|e_bike|scooter"), frozenset({"electric"})),
             (re.compile(r"boat|sail|cruiser|catamaran|pontoon|console|trawler"),
              frozenset({"diesel", "petrol", "gasoline", "electric"})),
             (re.compile(r"coach|bus|truck|semi|tractor|harvester|locomotive|wagon|multiple_unit"),
              frozenset({"diesel", "cng", "electric", "hybrid"})))
AVIATION_FUELS = frozenset({"jet_a", "avgas", "mogas"})


def fuels_for(vehicle_type: str, fuels: Iterable[str]) -> list[str]:
    """The ``fuels`` a vehicle of ``vehicle_type`` may run on (:data:`FUEL_FITS`; any but aviation fuel for other
    road vehicles), or every one of them where none fits."""
    have = list(fuels)
    fits = next((ok for pattern, ok in FUEL_FITS if pattern.search(vehicle_type)), None)
    ok = [f for f in have if f in fits] if fits is not None else [f for f in have if f not in AVIATION_FUELS]
    return ok or have


#: Statuses of a subscription whose current period runs now.
LIVE_PERIOD_STATES = frozenset({"active", "trialing", "paused"})


def billing_cycle(columns: Iterable[str]) -> tuple[str, str, str] | None:
    """``(start column, billing period column, current period end column)`` of a subscription, or None."""
    have = list(columns)
    start = next((c for c in ("started_on", "started_at", "start_date", "starts_on") if c in have), None)
    period = next((c for c in ("billing_period", "billing_cycle", "billing_interval") if c in have), None)
    return (start, period, "current_period_end") if start and period and "current_period_end" in have else None


#: Days after a payment was received within which it settles into each status.
SETTLE_DAYS = {"captured": 7, "settled": 7, "succeeded": 3, "failed": 3, "voided": 7}
#: Files a record's work produces, and the statuses in which that work has not been done.
REPORT_FILES = ("report_file", "result_file", "results_file", "findings_file")
UNREPORTED_STATES = PRESTART_STATES | frozenset({"cancelled", "canceled", "rescheduled", "in_progress", "no_show"})


def settle_windows(columns: Iterable[str], workflow: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    """``{status: {"after": "received_at", "days": D}}`` for a payment's settling statuses (:data:`SETTLE_DAYS`)."""
    have = list(columns)
    if "received_at" not in have or "status_changed_at" not in have:
        return {}
    return {st: {"after": "received_at", "days": SETTLE_DAYS[st]} for st in (workflow or {}).get("states", ())
            if st in SETTLE_DAYS}


#: Tracking events that report something gone wrong, which carry an exception code (every other event has none).
EXCEPTION_EVENTS = frozenset({"exception", "mishandled", "returned_to_sender", "failed_attempt", "delayed", "damaged",
                              "lost", "held"})
#: When an incident began, how long it lasted, and the statuses that end it: its length is the time between.
INCIDENT_STARTS = ("declared_at", "opened_at", "detected_at", "reported_at")
INCIDENT_LENGTHS = ("duration_minutes", "resolution_minutes", "time_to_resolve_minutes")
INCIDENT_ENDS = frozenset({"resolved", "closed"})
#: The most days an incident takes from being declared to being resolved.
INCIDENT_DAYS = 3


def incident_timing(columns: Iterable[str], workflow: dict[str, Any] | None) -> tuple[str, str, list[str]] | None:
    """``(start column, length column, ending statuses)`` of an incident whose length in minutes runs from its start
    to the change into an ending status, or None."""
    have = list(columns)
    start = next((c for c in INCIDENT_STARTS if c in have), None)
    length = next((c for c in INCIDENT_LENGTHS if c in have), None)
    ended = sorted(INCIDENT_ENDS & set((workflow or {}).get("states", ())))
    return (start, length, ended) if start and length and ended and "status_changed_at" in have else None


def verdict_columns(columns: Iterable[str]) -> tuple[str, str] | None:
    """``(verdict, score)`` where a record has a pass-or-fail and a score out of 100 it follows."""
    have = list(columns)
    verdict = next((c for c in VERDICT_COLUMNS if c in have), None)
    score = next((c for c in SCORE_COLUMNS if c in have), None)
    return (verdict, score) if verdict and score else None


def _under_when(gen: dict[str, Any]) -> dict[str, Any]:
    """The generator a ``when`` wrapper draws from once its status is reached (the generator itself otherwise)."""
    return gen["then"] if gen.get("gen") == "when" else gen


def verdict_follows_score(gens: dict[str, dict[str, Any]]) -> None:
    """An inspection passed scored at least :data:`PASS_MARK` out of 100 and found few issues; one failed scored
    less. A decided inspection has its score (no pass on a blank score). Audit 72: 3,453 of 7,581 verdicts in 77
    worlds contradicted their score ("passed" on 6 of 100, "failed" on 99)."""
    verdict, score = verdict_columns(gens) or ("", "")
    v, sc = _under_when(gens[verdict]), _under_when(gens[score])
    if v.get("gen") != "bool" or sc.get("gen") != "int" or sc.get("min", 0) < 0 or sc.get("max") != 100:
        return
    bands = {"pass": {**sc, "min": PASS_MARK, "max": 100}, "fail": {**sc, "min": 0, "max": PASS_MARK - 1}}
    by = {"gen": "by", "column": verdict, "default": sc,
          "cases": {k: bands["pass" if k in ("1", "True") else "fail"] for k in ("1", "True", "0", "False")}}
    top = {k: v for k, v in gens[score].items() if k != "null_p"}   # a decided verdict has its score
    gens[score] = {**top, "then": by} if top.get("gen") == "when" else by
    issues = next((c for c in ("issues_found", "defects_found", "findings_count") if c in gens), None)
    found = _under_when(gens[issues]) if issues else {}
    if issues and found.get("gen") == "int" and found.get("max", 0) >= 4:
        few = {**found, "min": 0, "max": 2}
        many = {**found, "min": max(1, found.get("min", 0)), "max": found["max"]}
        by = {"gen": "by", "column": verdict, "default": found,
              "cases": {k: few if k in ("1", "True") else many for k in ("1", "True", "0", "False")}}
        gens[issues] = {**gens[issues], "then": by} if gens[issues].get("gen") == "when" else by


def undecided_split(gen: dict[str, Any]) -> tuple[str | None, dict[str, Any] | None]:
    """For a generator choosing among words, its word for "not decided yet" (``UNDECIDED_VALUES``) and the
    generator of the other words; (None, None) where it has no such word or nothing else."""
    if gen.get("gen") != "choice":
        return None, None
    values, weights = list(gen["values"]), gen.get("weights")
    undecided = [v for v in values if isinstance(v, str) and v.lower() in UNDECIDED_VALUES]
    keep = [i for i, v in enumerate(values) if v not in undecided]
    if not undecided or not keep:
        return None, None
    decided = {**gen, "values": [values[i] for i in keep]}
    if weights:
        decided["weights"] = [weights[i] for i in keep]
    return undecided[0], decided


def wrap(inner: dict[str, Any], **outer: Any) -> dict[str, Any]:
    """``outer`` around ``inner``, with the inner generator's ``null_p``, ``unique`` and ``weekday`` moved outside
    (they act only on a column's top-level generator)."""
    moved = {k: inner[k] for k in ("null_p", "unique", "weekday") if k in inner}
    return {**outer, "inner": {k: v for k, v in inner.items() if k not in moved}, **moved}


def reads(gens: dict[str, dict[str, Any]], col: str) -> set[str]:
    """Every column of the row that ``col``'s generator reads, directly or through the columns it reads."""
    seen: set[str] = set()
    todo = list(sources(gens.get(col, {})))
    while todo:
        c = todo.pop()
        if c not in seen and c in gens:
            seen.add(c)
            todo += sources(gens[c])
    return seen


def made_by_date(gens: dict[str, dict[str, Any]], fk: str, column: str) -> None:
    """The key ``fk`` names a record made by the row's ``column`` (``made_by``'s ``by``), where the key's
    generator already picks by making and ``column`` is not drawn from it."""
    gen = gens.get(fk, {})
    if gen.get("gen") == "lookup":
        fk, gen = gen["via"], gens.get(gen["via"], {})
    target = gen.get("then") if gen.get("gen") == "when" else gen
    if not target or "made_by" not in target or fk in reads(gens, column) or column not in gens:
        return
    by = list(target["made_by"].get("by", ()))
    made_by = {**target["made_by"], "by": by + [column] if column not in by else by}
    if gen.get("gen") == "when":
        gens[fk] = {**gen, "then": {**target, "made_by": made_by}}
    else:
        gens[fk] = {**target, "made_by": made_by}


def dependency_order(gens: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Generators ordered so that every column a generator reads is generated before it."""
    out: dict[str, dict[str, Any]] = {}
    pending = dict(gens)
    while pending:
        progressed = False
        for name, gen in list(pending.items()):
            if all(src in out or src not in gens for src in sources(gen)):
                out[name] = pending.pop(name)
                progressed = True
        if not progressed:  # a cycle cannot arise from the rules above; keep the rest in place
            out.update(pending)
            break
    return out
