"""Readable seeded text for synthesised records: titles, descriptions, notes, reasons and messages.

Random dictionary words ("responsibility owner east ball Republican") teach a model noise, so the
``text`` generator composes short English from templates about the record itself: its subject
(the service's word for the record, e.g. "upgrade campaign") and the service's title. The phrases
are operational and domain-neutral, so they read right in any theme.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from typing import Any

TEXT_KINDS = ("title", "description", "note", "reason", "justification", "message", "file", "purpose")

QUALIFIERS = ("Annual", "Spring", "Summer", "Autumn", "Winter", "Q1", "Q2", "Q3", "Q4", "North", "South", "East",
              "West", "Central", "Riverside", "Downtown", "Harbor", "Hillside", "Lakeside", "Parkview", "Main",
              "Express", "Premier", "Core", "Pilot", "Standard", "Advanced", "Intro", "Community", "Evening",
              "Morning", "Weekend", "Family", "Flagship", "Regional", "Priority", "Classic", "Starter", "Pro",
              "Essential", "Signature", "Select", "Heritage", "Summit", "Horizon", "Keystone", "Evergreen",
              "Cornerstone", "Beacon", "Meridian")

DESCRIPTION_DETAILS = (
    "covers the standard scope agreed with the customer", "prepared ahead of the next review",
    "includes the agreed terms and contacts", "set up at the customer's request",
    "tracked by the operations team", "follows the usual checklist", "with priority handling requested",
    "updated after the last review", "kept for reference and audits", "shared with the account team",
    "used for day-to-day operations", "replacing an older version",
)
NOTES = (
    "Follow up next week.", "Confirmed by phone.", "Waiting on paperwork.", "Checked against the records; all in order.",
    "Left a voicemail; no answer yet.", "Scheduled with the team lead.", "Discussed with the team; decision expected by Friday.",
    "Second reminder sent.", "No issues found.", "Needs sign-off from a manager.", "Updated details on request.",
    "Flagged for the next review.", "Double-checked the figures.", "Waiting for approval.", "All documents received.",
    "Handle this one first this week.",
)
REASONS = ("Requested by the customer", "Duplicate entry", "Entered in error", "Budget change",
           "Schedule conflict", "No longer needed", "Replaced by a newer record", "Policy update")
#: Why a record reached a status other than cancelled, by the status's stem: a denial, an appeal or a hold
#: gives the reason a person in that business would write, never a cancellation's.
STATUS_REASONS = (
    (("reject", "deni", "deny", "declin", "fail", "disqualif", "refus", "ineligib"),
     ("Did not meet the criteria", "Incomplete documentation", "Missing required information",
      "Outside the eligible period", "Could not be verified", "Failed the required checks")),
    (("appeal", "disput", "contest", "reopen", "escalat", "objection"),
     ("Disputes the decision", "New information provided", "Second review requested", "Escalated by the team lead",
      "Decision questioned by the customer")),
    (("hold", "paus", "suspend", "freez", "frozen", "block", "flag", "quarantin", "defer", "postpon", "waitlist"),
     ("Awaiting documents", "Payment issue under review", "Pending verification", "Paused at the customer's request",
      "Under investigation", "Waiting on a third party")),
    (("return", "refund", "chargeback", "exchang"),
     ("Arrived damaged", "Wrong item received", "Did not match the description", "Arrived too late",
      "No longer needed")),
    (("reschedul",), ("Schedule conflict", "Requested by the customer", "Staff unavailable", "Venue unavailable",
                      "Weather")),
)
#: Why a request was made (a purchase, an exception, a renewal): never why one was closed.
#: Why a record came about, by what it is: a visit's reason (an appointment, a consultation, a demo) or a
#: referral's. A cancellation's reasons (``REASONS``) fit neither (audit 73: "Budget change" as the reason for
#: 526 of 526 podiatry visits).
PURPOSES = {"visit": ("Requested by the client", "Review of progress", "Second opinion", "Referred by a colleague",
                      "Discuss the next steps", "New concern raised by the client", "Booked at the last visit"),
            "referral": ("Needs a specialist", "Outside our area of practice", "Client asked for a specialist",
                         "Second opinion requested", "Conflict of interest", "Fully booked this quarter",
                         "Closer to the client's home")}
JUSTIFICATIONS = ("Needed for the upcoming project", "Needed for day-to-day work", "Part of this year's approved plan",
                  "Required to stay compliant", "Asked for by the team lead", "Covers the expected growth in demand",
                  "Supports a signed contract")
MESSAGES = (
    "Hi, just checking in on the {subject}. Let me know if you need anything else.",
    "Thanks for the update on the {subject}; I will review it today.",
    "Could you confirm the details of the {subject} before Friday?",
    "The {subject} is ready for your review.",
    "Reminder: the {subject} needs your attention this week.",
    "Following up on the {subject} we discussed yesterday.",
)


#: Why money was given back where no goods changed hands (a fare, a deposit, a fee): a parking payment is never
#: refunded because the wrong item arrived.
CHARGE_REFUND_REASONS = ("Charged twice", "Billing error", "Cancelled within the free period", "Service not provided",
                         "Goodwill gesture")
#: Subjects that are goods (or their orders): the only records a "wrong item" or "arrived damaged" fits.
_GOODS = re.compile(r"order|item|product|shipment|parcel|package|purchase|return|delivery|book|part|sku|stock|kit|gift")


def status_reasons(status: str, subject: str = "") -> tuple[str, ...]:
    """The reasons a record reached ``status`` with (a cancellation's where the status is none of the others); a
    refund of a ``subject`` that is no goods gives a charge's reasons."""
    st = status.lower()
    for stems, reasons in STATUS_REASONS:
        if any(x in st for x in stems):
            if stems[0] == "return" and subject and not _GOODS.search(subject.lower()):
                return CHARGE_REFUND_REASONS
            return reasons
    return REASONS


def text_drawer(g: dict[str, Any], rng: random.Random) -> Callable[[int, dict[str, Any]], str]:
    """A ``draw(row_index, row)`` for ``{"gen": "text", "kind": K, "subject": S, "service": T}``."""
    kind = g["kind"]
    subject = str(g.get("subject", "record"))
    service = str(g.get("service", "the service"))
    if kind == "title":
        return lambda i, row: f"{rng.choice(QUALIFIERS)} {subject}"
    if kind == "description":
        head = subject[:1].upper() + subject[1:]
        return lambda i, row: f"{head} for {service}, {rng.choice(DESCRIPTION_DETAILS)}."
    if kind == "note":
        return lambda i, row: rng.choice(NOTES)
    if kind == "reason":
        by = g.get("by_status")
        if by:   # the reason a record in that status was given
            return lambda i, row: rng.choice(status_reasons(str(row.get(by) or ""), subject))
        return lambda i, row: rng.choice(REASONS)
    if kind == "purpose":
        choices = PURPOSES[g.get("of", "visit")]
        return lambda i, row: rng.choice(choices)
    if kind == "justification":
        return lambda i, row: rng.choice(JUSTIFICATIONS)
    if kind == "message":
        return lambda i, row: rng.choice(MESSAGES).format(subject=subject)
    if kind == "file":
        # A file name a person would save: the record's subject, a serial and a document extension.
        stem = "_".join(subject.lower().split()) or "file"
        exts = list(g.get("exts") or ("pdf", "docx", "xlsx", "csv", "png", "jpg"))
        return lambda i, row: f"{stem}_{i + 1:04d}.{rng.choice(exts)}"
    raise ValueError(f"unknown text kind {kind!r}; one of {', '.join(TEXT_KINDS)}")
