"""The episode interpreter: one set of rules for turning an action into tool results.

Used by the Gymnasium env, the task gate's replays and validation, so an action means the
same thing everywhere: parse (every tool call of the action, in order), resolve the shown
tool name, validate and run each call atomically (a failed call is an error observation and
changes nothing), run an action of several calls all or nothing (a failed call undoes the
action's earlier writes and cancels its later calls, ``submit`` included), and recognise
``submit`` (its last call) with its answer. Through MCP and TRL every tool call is an action of
its own, so there a call is the unit.
"""

from __future__ import annotations

import itertools
import json
import math
from dataclasses import dataclass, field
from typing import Any

from .actions import ActionError, ToolCall, parse_calls
from .spaces import MAX_TEXT_LENGTH
from .submission import ANSWER_CONTRACT, SUBMIT, SUBMIT_TOOL, Submission, parse_submission
from .tools import Tool, ToolError, invoke

__all__ = ["ANSWER_CONTRACT", "DEFAULT_MAX_TURNS", "SUBMIT", "SUBMIT_TOOL", "ActOutcome", "CallOutcome", "Interpreter",
           "dumps", "error_obj"]

#: Codes of the calls around a failed call of a multi-call action (see :meth:`Interpreter.run_calls`).
UNIT_CODES = frozenset({"rolled_back", "not_run"})
#: Per-action savepoint names (``next()`` on itertools.count is atomic under the GIL).
_ACTIONS = itertools.count()

#: Actions per episode when neither the spec nor the caller sets ``max_turns``.
DEFAULT_MAX_TURNS = 30


try:  # a dependency; the json fallback below keeps an install without it working
    import orjson as _orjson
except ImportError:  # pragma: no cover - depends on the installation
    _orjson = None

_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str, allow_nan=False)
#: What json would write through ``default=str``, orjson writes natively unless passed through:
#: with these, dates and dataclasses reach ``default=str`` in both encoders alike.
_ORJSON_OPTIONS = (_orjson.OPT_PASSTHROUGH_DATETIME | _orjson.OPT_PASSTHROUGH_DATACLASS) if _orjson is not None else 0


def _finite(obj: Any, depth: int = 0) -> Any:
    """``obj`` with every NaN and infinity replaced by None, as orjson writes them (json's fallback only)."""
    t = type(obj)
    if t is float:
        return obj if math.isfinite(obj) else None
    if depth > 256:
        return obj
    if t is dict:
        return {k: _finite(v, depth + 1) for k, v in obj.items()}
    if t is list or t is tuple:
        return [_finite(v, depth + 1) for v in obj]
    return obj


def dumps(obj: Any) -> str:
    """Observation text: compact, strict JSON, cut at the observation space's limit.

    orjson writes it; json only what orjson cannot encode (integers beyond 64 bits, non-string
    keys, lone surrogates). Either way NaN and infinities are ``null`` (strict JSON, which json's
    ``NaN`` is not), enums are their value, other values outside JSON go through ``str``, and
    floats keep their exact value (orjson spells exponents ``1e16`` where json writes ``1e+16``).
    Checking first whether orjson would write json's exact text cost several times the encoding
    itself on retail's reads (figure in the README's Measured table).
    """
    text = None
    if _orjson is not None:
        try:
            text = _orjson.dumps(obj, default=str, option=_ORJSON_OPTIONS).decode()
        except (TypeError, _orjson.JSONEncodeError):  # non-str keys, huge ints, lone surrogates: json decides
            text = None
    if text is None:
        try:
            text = _ENCODER.encode(obj)
        except ValueError:  # NaN or an infinity: null, as orjson writes them
            text = _ENCODER.encode(_finite(obj))
    if len(text) > MAX_TEXT_LENGTH:
        text = text[: MAX_TEXT_LENGTH - 40] + "…[truncated: narrow the query]"
    return text


def error_obj(code: str, message: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": message}}


@dataclass
class CallOutcome:
    """One tool call of an action: its (shown) name and result, or an error code and message."""

    name: str | None
    result: Any = None
    error: str | None = None
    message: str = ""

    def payload(self) -> Any:
        return error_obj(self.error, self.message) if self.error else self.result


@dataclass
class ActOutcome:
    """What an action did: its calls' outcomes, and whether it submitted (with which answer)."""

    calls: list[CallOutcome] = field(default_factory=list)
    submitted: bool = False
    answer: Any = None
    submission: Submission | None = None

    @property
    def error(self) -> str | None:
        """The error code of the call that failed (None when every call succeeded): the cause, not the
        ``rolled_back`` / ``not_run`` of the calls around it."""
        return next((c.error for c in self.calls if c.error and c.error not in UNIT_CODES), None)

    @property
    def tool_name(self) -> str | None:
        return self.calls[0].name if self.calls else None

    def observation(self, submit_result: dict[str, Any] | None = None) -> str:
        """One call: its result (or error). Several: a list of ``{"tool", "result" | "error"}`` in call order."""
        parts = [(c.name, c.payload()) for c in self.calls]
        if submit_result is not None:
            parts.append((SUBMIT, submit_result))
        if len(parts) == 1:
            return dumps(parts[0][1])
        return dumps([{"tool": n, **(p if isinstance(p, dict) and set(p) == {"error"} else {"result": p})} for n, p in parts])


class Interpreter:
    """Runs actions on an episode connection with a fixed set of tools and a frozen clock.

    ``shown`` maps the names the agent sees to the spec's tool names (they differ with
    ``obscure_tools``, and an episode may show a subset of the tools)."""

    def __init__(self, tools: dict[str, Tool], now: str, shown: dict[str, str] | None = None):
        self.tools, self.now = tools, now
        self.shown = shown if shown is not None else {n: n for n in tools}

    def act(self, conn: Any, action: Any) -> ActOutcome:
        """Parse ``action`` and run its calls in order (text, an OpenAI message dict, or a list of
        ``{"name", "arguments"}`` spec-level steps)."""
        try:
            calls = parse_calls(action)
        except ActionError as exc:
            return ActOutcome([CallOutcome(None, error=exc.code, message=exc.message)])
        return self.run_calls(conn, calls)

    def run_calls(self, conn: Any, calls: list[ToolCall]) -> ActOutcome:
        """Run ``calls`` in order. Several calls are one unit, all or nothing: at the first call that
        fails, every write of the action is rolled back, the earlier calls report ``rolled_back``, the
        later ones (a ``submit`` included) ``not_run``, and the episode goes on."""
        out = ActOutcome()
        atomic = len(calls) > 1
        savepoint = f"action_{next(_ACTIONS)}" if atomic else ""
        if atomic:
            conn.execute(f"SAVEPOINT {savepoint}")
        try:
            for call in calls:
                if call.name == SUBMIT:
                    # validated like any tool (a wrong type, an unknown argument or a control character is
                    # invalid_arguments, and the episode goes on); see agentworld_envs.engine.submission for the contract
                    try:
                        sub = parse_submission(call.arguments)
                    except ToolError as exc:
                        out.calls.append(CallOutcome(SUBMIT, error=exc.code, message=exc.message))
                    else:
                        out.submitted, out.answer, out.submission = True, sub.answer, sub
                    break
                out.calls.append(self.call(conn, call.name, call.arguments))
                if atomic and out.calls[-1].error:
                    break
        except BaseException:
            if atomic:
                conn.execute(f"ROLLBACK TO {savepoint}")
                conn.execute(f"RELEASE {savepoint}")
            raise
        if not atomic:
            return out
        failed = next((i for i, c in enumerate(out.calls) if c.error), None)
        if failed is None:
            conn.execute(f"RELEASE {savepoint}")
            return out
        conn.execute(f"ROLLBACK TO {savepoint}")
        conn.execute(f"RELEASE {savepoint}")
        cause = out.calls[failed]
        undone = (f"undone: call {failed + 1} of this action failed ({cause.error}), so none of its calls took "
                  "effect; send the calls again, fixed")
        skipped = f"not run: call {failed + 1} of this action failed ({cause.error})"
        out.calls[:failed] = [CallOutcome(c.name, error="rolled_back", message=undone) for c in out.calls[:failed]]
        out.calls += [CallOutcome(self._shown_or_none(c.name), error="not_run", message=skipped)
                      for c in calls[failed + 1:]]
        out.submitted, out.answer, out.submission = False, None, None
        return out

    def _shown_or_none(self, name: str) -> str | None:
        return name if name == SUBMIT or name in self.shown else None

    def call(self, conn: Any, name: str, arguments: Any) -> CallOutcome:
        real = self.shown.get(name)
        if real is None:
            available = ", ".join(list(self.shown)[:60])
            return CallOutcome(None, error="unknown_tool",
                               message=f"no tool named {name[:80]!r}; available: {available}, {SUBMIT}")
        try:
            return CallOutcome(name, invoke(conn, self.tools[real], arguments, self.now))
        except ToolError as exc:
            return CallOutcome(name, error=exc.code, message=exc.message)
        except Exception as exc:  # noqa: BLE001 - a bug in a tool must not kill the episode; invoke() rolled back
            return CallOutcome(name, error="internal_error", message=f"{type(exc).__name__}: {exc}"[:300])
