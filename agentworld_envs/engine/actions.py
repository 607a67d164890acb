"""Parse an agent's text action into tool calls.

Accepted shapes:

* Hermes / Qwen: ``<tool_call>{"name": "...", "arguments": {...}}</tool_call>``, with any
  text around it, one or more blocks (``</tool_call>`` inside a JSON string is just text); a
  block must be closed right after its JSON (an unclosed block is a ``parse_error``);
* a bare JSON object ``{"name": ..., "arguments": {...}}`` (``arguments`` may be a
  JSON-encoded string, as in OpenAI's API);
* an OpenAI assistant message ``{"role": "assistant", "tool_calls": [{"type":
  "function", "function": {"name": ..., "arguments": "..."}}, ...]}``.

**Several calls in one action run in order, all or nothing** (see
:class:`~agentworld_envs.engine.episode.Interpreter`); at most :data:`MAX_CALLS_PER_ACTION`, and a
``submit`` must be the last. A call has one reading: a key given twice anywhere in its JSON,
``name`` together with ``function``, or ``arguments`` together with ``parameters`` are
``parse_error``. Arguments must be finite JSON: ``NaN``, ``Infinity`` and lone surrogates are
rejected as ``invalid_arguments`` before anything runs.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

#: Longest action accepted, in characters; longer text is rejected before parsing.
MAX_ACTION_CHARS = 65_536
#: Most tool calls one action may carry (parallel calls run in order).
MAX_CALLS_PER_ACTION = 8
_OPEN = re.compile(r"<tool_call>\s*")
#: The end of a block: right after its JSON (past a closing code fence, if the JSON was fenced).
_CLOSE = re.compile(r"\s*(?:```\s*)?</tool_call>")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object, or ``parse_error`` when a key repeats (which value counts would be a guess)."""
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        dup = next(k for k, _ in pairs if k in seen or seen.add(k))
        raise ActionError("parse_error", f"duplicate key {dup[:60]!r} in the tool call JSON; give each key once")
    return obj


_DECODER = json.JSONDecoder(parse_constant=lambda name: _reject_constant(name), object_pairs_hook=_unique_keys)


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: Any


class ActionError(ValueError):
    def __init__(self, code: str, message: str):
        self.code, self.message = code, message
        super().__init__(message)


def _reject_constant(name: str) -> Any:
    raise ActionError("invalid_arguments", f"{name} is not a valid argument value: numbers must be finite")


def _loads(text: str) -> Any:
    try:
        return _DECODER.decode(text)
    except ActionError:
        raise
    except (ValueError, RecursionError) as exc:
        raise ActionError("parse_error", f"tool call is not valid JSON: {str(exc)[:200]}") from None


def _decode_at(text: str, start: int) -> tuple[Any, int]:
    """One JSON value starting at ``start`` (text may follow it) and where it ends."""
    try:
        return _DECODER.raw_decode(text, start)
    except ActionError:
        raise
    except (ValueError, RecursionError) as exc:
        raise ActionError("parse_error", f"tool call is not valid JSON: {str(exc)[:200]}") from None


def check_finite(value: Any, depth: int = 0) -> None:
    """Raise ``invalid_arguments`` for NaN / ±Infinity numbers and lone surrogates anywhere in ``value``."""
    if isinstance(value, float) and not math.isfinite(value):
        raise ActionError("invalid_arguments", f"{value} is not a valid argument value: numbers must be finite")
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise ActionError("invalid_arguments", "text arguments must be valid Unicode (found a lone surrogate)") from None
    elif depth < 64 and isinstance(value, dict):
        for k, v in value.items():
            check_finite(k, depth + 1)
            if type(v) is not int and v is not None:  # ints and null are always fine: skip the call
                check_finite(v, depth + 1)
    elif depth < 64 and isinstance(value, list):
        for v in value:
            check_finite(v, depth + 1)


def _from_obj(obj: Any) -> list[ToolCall]:
    if not isinstance(obj, dict):
        raise ActionError("parse_error", "tool call must be a JSON object with 'name' and 'arguments'")
    # Two readings of one object (which call, which arguments) are refused rather than guessed.
    if "tool_calls" in obj and ("name" in obj or "function" in obj):
        raise ActionError("parse_error", "a message with 'tool_calls' cannot also be a call ('name' / 'function')")
    if "name" in obj and "function" in obj:
        raise ActionError("parse_error", "a tool call has 'name' or 'function', not both")
    if "tool_calls" in obj:
        calls = obj["tool_calls"]
        if not isinstance(calls, list) or not calls:
            raise ActionError("parse_error", "'tool_calls' must be a non-empty list")
        return [c for item in calls for c in _from_obj(item)]
    if isinstance(obj.get("function"), dict):
        obj = obj["function"]
    name = obj.get("name")
    if not isinstance(name, str) or not name:
        raise ActionError("parse_error", "tool call has no 'name' string")
    if "arguments" in obj and "parameters" in obj:
        raise ActionError("parse_error", "a tool call has 'arguments' or 'parameters', not both")
    args = obj.get("arguments", obj.get("parameters", {}))
    if isinstance(args, str):
        args = _loads(args) if args.strip() else {}
    if args is None:
        args = {}
    check_finite(name)
    check_finite(args)
    return [ToolCall(name, args)]


def _tagged_calls(action: str) -> list[ToolCall] | None:
    """Every ``<tool_call>`` block, each parsed as one JSON value (so a ``</tool_call>`` inside a
    string argument is text, not the end of the block); None when there is no block."""
    calls: list[ToolCall] = []
    pos = 0
    while True:
        m = _OPEN.search(action, pos)
        if m is None:
            return calls or None
        start = m.end()
        if action.startswith("```", start):   # a fenced block inside the tag
            start = action.find("\n", start) + 1 or start + 3
        obj, end = _decode_at(action, start)
        close = _CLOSE.match(action, end)
        if close is None:   # cut off (e.g. at the token limit) or followed by more text: nothing runs
            raise ActionError("parse_error", "a <tool_call> block must end with </tool_call> right after its JSON")
        calls += _from_obj(obj)
        pos = close.end()


def parse_calls(action: Any, max_calls: int = MAX_CALLS_PER_ACTION) -> list[ToolCall]:
    """Every tool call in ``action``, in order, or raise :class:`ActionError` with a short code
    (``max_calls``: the most calls one action may carry; benchmark envs allow as many as their benchmark)."""
    if isinstance(action, dict):
        calls = _from_obj(action)
    elif not isinstance(action, str):
        raise ActionError("parse_error", f"action must be text, got {type(action).__name__}")
    elif len(action) > MAX_ACTION_CHARS:
        raise ActionError("action_too_long", f"action is {len(action)} characters; the limit is {MAX_ACTION_CHARS}")
    else:
        tagged = _tagged_calls(action)
        if tagged is not None:
            calls = tagged
        else:
            text = action.strip()
            start = text.find("{")
            if start < 0:
                raise ActionError("parse_error", "no tool call found: reply with <tool_call>{\"name\": ..., \"arguments\": {...}}</tool_call>")
            # Tolerate fenced code blocks and prose around one bare JSON object.
            calls = _from_obj(_decode_at(text, start)[0])
    if len(calls) > max_calls:
        raise ActionError("too_many_calls", f"{len(calls)} tool calls in one action; the limit is {max_calls}")
    if len(calls) > 1 and any(c.name == "submit" for c in calls[:-1]):
        raise ActionError("parse_error", "submit must be the last tool call of an action")
    return calls


def parse_action(action: Any) -> ToolCall:
    """The single tool call in ``action`` (an action with several calls is an error here)."""
    calls = parse_calls(action)
    if len(calls) != 1:
        raise ActionError("parse_error", f"expected one tool call, got {len(calls)}")
    return calls[0]


def format_call(name: str, arguments: dict[str, Any]) -> str:
    """The canonical text action for a call (Hermes/Qwen ``<tool_call>`` style)."""
    return "<tool_call>" + json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False) + "</tool_call>"
