"""Parse an agent's text action into a tool call.

Accepted shapes (the first tool call found is executed):

* Hermes / Qwen: ``<tool_call>{"name": "...", "arguments": {...}}</tool_call>``, with
  any text around it;
* a bare JSON object ``{"name": ..., "arguments": {...}}`` (``arguments`` may be a
  JSON-encoded string, as in OpenAI's API);
* an OpenAI assistant message ``{"role": "assistant", "tool_calls": [{"type":
  "function", "function": {"name": ..., "arguments": "..."}}]}``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

#: Longest action accepted, in characters; longer text is rejected before parsing.
MAX_ACTION_CHARS = 65_536
_TOOL_CALL = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.DOTALL)


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: Any


class ActionError(ValueError):
    def __init__(self, code: str, message: str):
        self.code, self.message = code, message
        super().__init__(message)


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise ActionError("parse_error", f"tool call is not valid JSON: {str(exc)[:200]}") from None


def _from_obj(obj: Any) -> ToolCall:
    if not isinstance(obj, dict):
        raise ActionError("parse_error", "tool call must be a JSON object with 'name' and 'arguments'")
    if "tool_calls" in obj:
        calls = obj["tool_calls"]
        if not isinstance(calls, list) or not calls:
            raise ActionError("parse_error", "'tool_calls' must be a non-empty list")
        return _from_obj(calls[0])
    if isinstance(obj.get("function"), dict):
        obj = obj["function"]
    name = obj.get("name")
    if not isinstance(name, str) or not name:
        raise ActionError("parse_error", "tool call has no 'name' string")
    args = obj.get("arguments", obj.get("parameters", {}))
    if isinstance(args, str):
        args = _loads(args) if args.strip() else {}
    if args is None:
        args = {}
    return ToolCall(name, args)


def parse_action(action: Any) -> ToolCall:
    """Return the tool call in ``action`` or raise :class:`ActionError` with a short code."""
    if isinstance(action, dict):
        return _from_obj(action)
    if not isinstance(action, str):
        raise ActionError("parse_error", f"action must be text, got {type(action).__name__}")
    if len(action) > MAX_ACTION_CHARS:
        raise ActionError("action_too_long", f"action is {len(action)} characters; the limit is {MAX_ACTION_CHARS}")
    match = _TOOL_CALL.search(action)
    text = match.group(1) if match else action.strip()
    if not text.startswith("{"):
        # Tolerate fenced code blocks and leading prose around a bare JSON object.
        start = text.find("{")
        if start < 0:
            raise ActionError("parse_error", "no tool call found: reply with <tool_call>{\"name\": ..., \"arguments\": {...}}</tool_call>")
        text = text[start:]
    if text.endswith("```"):
        text = text[:-3].rstrip()
    return _from_obj(_loads(text))


def format_call(name: str, arguments: dict[str, Any]) -> str:
    """The canonical text action for a call (Hermes/Qwen ``<tool_call>`` style)."""
    return "<tool_call>" + json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False) + "</tool_call>"
