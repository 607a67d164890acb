"""The ``submit`` tool: its schema, the answer contract stated to the agent, and the parsed submission.

``submit`` is validated like every tool (JSON Schema, ``invalid_arguments`` on a wrong type, an
unknown argument or an unknown outcome; the episode goes on) and its schema is the same through
gym (``info["tools"]``), MCP (``tools/list``), TRL (the generated ``submit`` method) and the arena:

* ``outcome`` — ``"done"`` (everything asked was done or answered), ``"refused"`` (the policy
  forbids the request: nothing was changed) or ``"partial"`` (the allowed part was done, the rest
  refused). The outcome is the verdict on what happened; the reward compares it with the task's,
  so no sentence about having (not) done something decides it. Omitted, it is read from the
  words: a reply that declines is a refusal, anything else ``done``.
* ``answer`` — only the requested value(s) (a number, a date, a label, a comma-separated list),
  or for a refusal the blocking record's own value (its status, amount, date or count).
* ``message`` — optional words to the user. It is read together with ``answer``: a competing
  value, a hedge or a claim there counts the same.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

SUBMIT = "submit"
OUTCOMES = ("done", "refused", "partial")

#: The answer contract, stated after the policy and in the submit tool (so through gym, MCP, TRL and the arena).
ANSWER_CONTRACT = (
    "Finishing: call `submit` once, with `outcome` \"done\" (everything asked is done or answered), \"refused\" "
    "(the policy forbids the request: change nothing) or \"partial\" (do the allowed part, refuse the rest). "
    "Put only the requested value(s) in `answer` (lists comma-separated; numbers may carry currency and "
    "separators; dates as 2026-03-05, March 5, 2026, 5 March 2026 or 03/05/2026); `message` is optional words "
    "to the user (it may name the records you worked on). Both are read: an answer fails if either names "
    "another candidate value of what was asked or puts forward a different value, hedges ('or', 'maybe', "
    "'possibly', 'either') or negates the value, or if `answer` lists further values. For a refusal, give in "
    "`answer` the record's own value that blocks the request (its status, amount, date or count, as a lookup "
    "returned it), not the rule, and never claim it was done. Text you write into a record yourself (a note, a "
    "summary, a resolution) must name what it is about (the record or the subject of the request); text the "
    "request gives (a reason, a note) must be written exactly as given."
)

SUBMIT_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": SUBMIT,
        "description": "Finish the task (ends the episode; call it once, after all allowed changes are made). "
                       + ANSWER_CONTRACT,
        "parameters": {
            "type": "object",
            "properties": {
                "outcome": {"type": "string", "enum": list(OUTCOMES),
                            "description": "done: everything asked was done or answered; refused: the policy forbids "
                                           "the request and nothing was changed; partial: the allowed part was done "
                                           "and the rest refused."},
                "answer": {"type": "string",
                           "description": "Only the requested value(s); for a refusal, the blocking record's own value "
                                          "(status, amount, date or count)."},
                "message": {"type": "string", "description": "Optional words to the user (read with the answer)."},
            },
            "additionalProperties": False,
        },
    },
}


@dataclass(frozen=True)
class Submission:
    """What ``submit`` was called with: the declared outcome (None: not given) and the words."""

    outcome: str | None = None
    answer: str | None = None
    message: str | None = None

    @property
    def text(self) -> str:
        """Everything the agent wrote: the answer, then the message."""
        return "\n".join(p for p in (self.answer, self.message) if p)

    def words(self) -> "SubmittedText | None":
        """:attr:`text` as a ``str`` that remembers this submission (what Python verifiers receive)."""
        if not self.text.strip():
            return None
        return SubmittedText(self.text, self)


class SubmittedText(str):
    """The words of a submission, as a ``str`` (what verifiers have always received) that also carries
    the :class:`Submission`, so a verifier may read the declared outcome."""

    submission: Submission
    observed: Any = None   # answers.Observed of the episode, when the verifier knows it
    lexicon: Any = None    # (category words, record nouns, today) of the environment, likewise
    policy: str = ""       # the environment's policy text (a quotation of it asserts nothing), likewise

    def __new__(cls, text: str, submission: Submission) -> "SubmittedText":
        obj = super().__new__(cls, text)
        obj.submission = submission
        return obj


_TOOL = None


def _submit_tool():
    global _TOOL
    if _TOOL is None:
        from .tools import Tool

        _TOOL = Tool(SUBMIT, SUBMIT_TOOL["function"]["description"], SUBMIT_TOOL["function"]["parameters"],
                     {"kind": "submit"}, writes=False)
    return _TOOL


def parse_submission(arguments: Any) -> Submission:
    """The submission of a ``submit`` call, or :class:`~agentworld_envs.engine.tools.ToolError` ``invalid_arguments``
    (validated against :data:`SUBMIT_TOOL`'s schema like any tool's arguments)."""
    from .tools import validate_arguments

    validate_arguments(_submit_tool(), arguments)
    return Submission(arguments.get("outcome"), arguments.get("answer"), arguments.get("message"))


def as_submission(value: Any) -> Submission:
    """A :class:`Submission` from what callers pass as "the answer": a submission, the words of one,
    ``submit``'s arguments, or a bare answer (text, or any JSON value written out)."""
    if isinstance(value, Submission):
        return value
    if isinstance(value, SubmittedText):
        return value.submission
    if isinstance(value, dict) and set(value) <= {"outcome", "answer", "message"} and \
            all(v is None or isinstance(v, str) for v in value.values()):
        return Submission(value.get("outcome"), value.get("answer"), value.get("message"))
    if value is None or isinstance(value, str):
        return Submission(None, value, None)
    import json

    return Submission(None, json.dumps(value, ensure_ascii=False, sort_keys=True), None)


def declared_outcome(sub: Submission, expected: str) -> tuple[str, bool]:
    """The outcome a submission stands for, and whether it was declared: the ``outcome`` given, else
    read from the words (a reply that declines stands for the refusal the task expects)."""
    if sub.outcome:
        return sub.outcome, True
    from . import answers

    text = sub.text
    if expected in ("refused", "partial"):
        return (expected if text and answers.refuses(text) else "done"), False
    return ("refused" if text and answers.declines_strongly(text) else "done"), False
