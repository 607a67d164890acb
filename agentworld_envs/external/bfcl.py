"""BFCL v4 multi-turn as a Gymnasium env, executed and scored by BFCL itself (``bfcl-eval``).

One episode is one BFCL entry: a conversation of user turns over stateful API classes (a file
system, a trading bot, a travel agency…). The agent's tool calls run through BFCL's own
executor (``execute_multi_turn_func_call``) and the episode is scored by BFCL's own
``multi_turn_checker``: the state of every instance after each turn and the gold results among
the model's results. Nothing is re-implemented here; this module only drives them.

**Episode** (the protocol every client follows):

* ``reset(options={"task_id": "multi_turn_base_0"})`` starts the entry from BFCL's initial state;
  the observation is the first user message.
* Each action holding tool calls is **one BFCL step**: its calls (several ``<tool_call>`` blocks
  are one step, as parallel calls are in BFCL) run in order, recorded as BFCL call strings of the
  arguments as sent (BFCL's ``convert_to_function_call``), erroring calls included. The
  observation is their results.
* A **text-only action** (no tool call, or a call that does not parse) ends the user turn, as an
  undecodable response does in BFCL; so does ``submit`` (after running any calls before it). It is
  not a step. The next user message is the observation (``info["observation_role"] == "user"``),
  reward 0, not terminal, except after the last turn: then the episode terminates with
  ``multi_turn_checker``'s verdict (1.0 valid, 0.0 not). Nothing terminates earlier.
* There is one user turn per element of the entry's ``question``, empty-ground-truth turns
  included. miss_func turns that hold out functions have no user message in the data; as in
  BFCL's inference, the observation is BFCL's "I have updated some more functions…" prompt and
  ``info["tools"]`` is the new full tool list.
* BFCL's step limit: the 21st step of one user turn (``MAXIMUM_STEP_LIMIT`` + 1) truncates the
  episode with reward 0, as BFCL force-terminates the entry. ``max_turns`` (default: none) caps
  the actions of a whole episode the same way.

**Safety.** BFCL ``eval``s the call strings. A call is refused with ``invalid_arguments`` before
BFCL sees it unless its name is a public method of one of the entry's classes (all of them count:
a miss_func gold call may use a method before it is offered), its arguments are a JSON object
and every argument key is a plain ASCII identifier (not a keyword, not a dunder). Values are
written with ``repr`` of JSON values, so they are Python literals. Refused calls are not sent to
BFCL and not recorded.

**Isolation.** BFCL keeps instances in its module globals keyed by model name and entry id. Every
episode uses its own model name (a random 128-bit key), and its instances (the live ones and the
checker's) are deleted when the episode is replaced, when the checker has run and at ``close``.

**Splits.** BFCL has no train/test split: ``task_ids`` are all 200 entries of the category, and
:meth:`BfclMultiTurnEnv.split_task_ids` refuses ``"train"`` (training on the benchmark would
contaminate its evaluation).
"""

from __future__ import annotations

import ast
import copy
import inspect
import keyword
import os
import re
import sys
import threading
import uuid
from functools import lru_cache
from typing import Any

from .common import (TOOL, USER, BenchmarkEnv, calls_observation, refusal, split_action, stable_hash,
                     submit_tool)

CATEGORIES = ("multi_turn_base", "multi_turn_miss_func", "multi_turn_miss_param", "multi_turn_long_context")
SUBMIT_TOOL = submit_tool("End your reply to the user's current request (do this when the request is handled, "
                          "or cannot be). The next user message, if any, follows. Replying with text only does "
                          "the same.")
#: Split names that mean "every entry" (BFCL has no train/test split).
ALL_SPLITS = ("all", "test", "base")
_NO_SPLIT = ("{env}: BFCL v4 multi-turn has no {split!r} split: its entries are all evaluation data, with no train "
             "split (training on them would contaminate the benchmark); use split 'all'")
#: Argument keys BFCL may see: plain ASCII identifiers.
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_IMPORT_LOCK = threading.Lock()
#: Most calls one reference action carries (the engine's parser caps an action at 8 calls).
_REFERENCE_CHUNK = 8


def bfcl_root() -> str:
    """The directory BFCL writes its ``result/``, ``score/`` and lock files to: one this program owns."""
    from ..engine.state import cache_dir

    root = cache_dir() / "bfcl"
    root.mkdir(parents=True, exist_ok=True)
    return str(root)


def bfcl() -> dict[str, Any]:
    """BFCL's executor, checker, loaders and converters, imported with ``BFCL_PROJECT_ROOT`` set to
    :func:`bfcl_root` (importing BFCL creates directories there; the caller's environment is restored)."""
    with _IMPORT_LOCK:
        if "bfcl_eval.constants.eval_config" not in sys.modules:
            saved = os.environ.get("BFCL_PROJECT_ROOT")
            os.environ["BFCL_PROJECT_ROOT"] = bfcl_root()
            try:
                import bfcl_eval.constants.eval_config  # noqa: F401  (reads BFCL_PROJECT_ROOT once)
            finally:
                if saved is None:
                    os.environ.pop("BFCL_PROJECT_ROOT", None)
                else:
                    os.environ["BFCL_PROJECT_ROOT"] = saved
        from bfcl_eval.constants.default_prompts import (DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC,
                                                         MAXIMUM_STEP_LIMIT)
        from bfcl_eval.constants.enums import ModelStyle
        from bfcl_eval.constants.type_mappings import GORILLA_TO_OPENAPI
        from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils
        from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import multi_turn_checker
        from bfcl_eval.model_handler.utils import convert_to_function_call, convert_to_tool
        from bfcl_eval.utils import load_dataset_entry, load_ground_truth_entry
    return {"execute": multi_turn_utils.execute_multi_turn_func_call, "globals": vars(multi_turn_utils),
            "checker": multi_turn_checker, "load_entries": load_dataset_entry, "load_answers": load_ground_truth_entry,
            "to_call": convert_to_function_call, "to_tools": convert_to_tool, "mapping": GORILLA_TO_OPENAPI,
            "style": ModelStyle.OPENAI_COMPLETIONS, "step_limit": MAXIMUM_STEP_LIMIT,
            "added_functions_prompt": DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC}


@lru_cache(maxsize=None)
def category_data(category: str) -> tuple[dict[str, dict[str, Any]], dict[str, list[list[str]]]]:
    """The category's entries (BFCL's loader: function docs populated, miss_func holdouts split off)
    and gold call lists, by entry id, in BFCL's order. Read once per process; never mutated."""
    b = bfcl()
    entries = {e["id"]: e for e in b["load_entries"](category)}
    answers = {a["id"]: a["ground_truth"] for a in b["load_answers"](category)}
    missing = set(entries) - set(answers)
    if missing:
        raise RuntimeError(f"BFCL {category}: no ground truth for {sorted(missing)[:3]}")
    return entries, {k: answers[k] for k in entries}


@lru_cache(maxsize=64)   # bounded: memory stays flat however many entries a process plays
def _tools_for(category: str, entry_id: str, upto_turn: int) -> tuple[dict[str, Any], ...]:
    """OpenAI schemas (BFCL's ``convert_to_tool``) of the functions offered at ``upto_turn``."""
    entries, _ = category_data(category)
    entry = entries[entry_id]
    functions = list(entry["function"])
    for turn, held in sorted(((int(k), v) for k, v in (entry.get("missed_function") or {}).items())):
        if turn <= upto_turn:
            functions += held
    b = bfcl()
    return tuple(b["to_tools"](functions, b["mapping"], b["style"]))


def _user_message(turn_messages: list[dict[str, Any]]) -> str:
    return "\n\n".join(str(m.get("content", "")) for m in turn_messages)


def check_call(name: str, arguments: Any, methods: frozenset[str]) -> str | None:
    """Why BFCL must not see this call (None: it may). The rules of the module doc's *Safety*."""
    if name not in methods:
        return f"no function {name[:80]!r} among this entry's classes"
    if not isinstance(arguments, dict):
        return "arguments must be a JSON object"
    for key in arguments:
        if not (isinstance(key, str) and _IDENTIFIER.fullmatch(key)) or keyword.iskeyword(key) or key.startswith("__"):
            return f"argument name {str(key)[:80]!r} is not a plain identifier"
    return None


class BfclMultiTurnEnv(BenchmarkEnv):
    """A BFCL v4 multi-turn category (``multi_turn_base`` …) as a text-action env; see the module doc.

    Args:
        category: ``multi_turn_base`` | ``multi_turn_miss_func`` | ``multi_turn_miss_param`` |
            ``multi_turn_long_context``.
        max_turns: cap on the actions of one episode (truncates with 0); default none (BFCL's own
            per-turn step limit always applies).
        split: ``"all"`` (``"test"``, ``"base"``: the same; BFCL has no train split).
        render_mode: ``"ansi"`` or ``"human"``.
        max_tools, show_policy: accepted so that drivers passing catalogue options work; a benchmark
            always shows its own tools and prompt.

    **Reward:** 0 until the last user turn ends; then 1.0 iff BFCL's ``multi_turn_checker`` finds
    the trajectory valid. ``info["checks"]`` holds the checker's verdict, ``info["bfcl"]`` its
    error type and message.
    """

    def __init__(self, category: str, env_id: str | None = None, max_turns: int | None = None, split: str = "all",
                 render_mode: str | None = None, max_tools: int | None = None, show_policy: bool = True):
        if category not in CATEGORIES:
            raise ValueError(f"unknown BFCL category {category!r}; choose from {', '.join(CATEGORIES)}")
        if split not in ALL_SPLITS:
            raise ValueError(_NO_SPLIT.format(env=env_id or category, split=split))
        if max_turns is not None and (not isinstance(max_turns, int) or max_turns < 1):
            raise ValueError(f"max_turns must be a positive int or None, not {max_turns!r}")
        self.category = category
        entries, self._answers = category_data(category)
        self._entries = entries
        super().__init__(env_id or f"agentworld/bfcl-{category.replace('_', '-')}-v0", "bfcl", list(entries), split,
                         render_mode)
        self.max_turns = max_turns
        self._b = bfcl()
        self._key: str | None = None
        self.entry: dict[str, Any] | None = None
        self.instances: dict[str, Any] = {}
        self._methods: frozenset[str] = frozenset()
        self.results: list[list[list[str]]] = []   # per user turn, per step: BFCL call strings
        self.user_turn = 0
        self.steps_in_turn = 0
        self.verdict: dict[str, Any] | None = None

    # ------------------------------------------------------------------ splits
    def split_task_ids(self, split: str) -> list[str]:
        """Task ids of a split: every entry for ``"all"`` (``"test"`` and ``"base"`` mean the same: the whole
        benchmark is its evaluation set); any other split, ``"train"`` included, is a ValueError."""
        if split in ALL_SPLITS:
            return self.task_ids
        raise ValueError(_NO_SPLIT.format(env=self.env_id, split=split))

    # ------------------------------------------------------------------ episode
    @property
    def _long_context(self) -> bool:
        return "long_context" in self.category

    def _execute(self, calls: list[str]) -> list[str]:
        results, instances = self._b["execute"](calls, self.entry["initial_config"], self.entry["involved_classes"],
                                                self._key, self.entry["id"], long_context=self._long_context,
                                                is_evaL_run=False)
        self.instances = instances
        return results

    def _release(self) -> None:
        """Delete this episode's instances from BFCL's globals (live and checker ones)."""
        if self._key is None:
            return
        g = self._b["globals"]
        prefix = self._key + "_"
        for name in [n for n in list(g) if n.startswith(prefix)]:
            g.pop(name, None)

    def _reset_task(self, task_id: str) -> tuple[str, dict[str, Any]]:
        self._release()
        self.entry = self._entries[task_id]
        # Per-episode model name: BFCL's instance keys are "<model>_<entry>_<class>_instance".
        self._key = f"agentworld_{uuid.uuid4().hex}"
        self.instances = {}
        self._execute([])  # BFCL creates the entry's instances from its initial config
        self._methods = frozenset(name for inst in self.instances.values()
                                  for name, _ in inspect.getmembers(inst, inspect.ismethod) if not name.startswith("_"))
        self.results = [[] for _ in self.entry["question"]]
        self.user_turn, self.steps_in_turn, self.verdict = 0, 0, None
        obs = self._turn_message(0)
        return obs, {"tools": self._tools(0), "user_turn": 0, "user_turns": len(self.entry["question"]),
                     "category": self.category, "max_turns": self.max_turns}

    def _tools(self, turn: int) -> list[dict[str, Any]]:
        return [copy.deepcopy(t) for t in _tools_for(self.category, self.entry["id"], turn)] + [copy.deepcopy(SUBMIT_TOOL)]

    def _adds_tools(self, turn: int) -> bool:
        return str(turn) in (self.entry.get("missed_function") or {})

    def _turn_message(self, turn: int) -> str:
        messages = self.entry["question"][turn]
        if self._adds_tools(turn) and not messages:
            return self._b["added_functions_prompt"]
        return _user_message(messages)

    @property
    def tools(self) -> list[dict[str, Any]]:
        return self._tools(self.user_turn) if self.entry is not None else []

    def _step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        act = split_action(action)
        if act.error and not act.text_only:   # refused whole (too many calls, too long): a step with no call
            return self._after_step([(None, refusal(act.error, act.message))], [{"tool_name": None, "error": act.error}])
        parts: list[tuple[str | None, Any]] = []
        calls_info: list[dict[str, Any]] = []
        if act.calls:
            sent: list[tuple[int, str]] = []
            for i, call in enumerate(act.calls):
                why = check_call(call.name, call.arguments, self._methods)
                if why is not None:
                    parts.append((call.name, refusal("invalid_arguments", why)))
                    calls_info.append({"tool_name": call.name, "error": "invalid_arguments"})
                    continue
                sent.append((i, self._b["to_call"]({call.name: call.arguments})[0]))
                parts.append((call.name, None))
                calls_info.append({"tool_name": call.name, "error": None})
            if sent:
                strings = [s for _, s in sent]
                self.results[self.user_turn].append(strings)
                for (i, _), result in zip(sent, self._execute(strings)):
                    parts[i] = (parts[i][0], result)
                    calls_info[i]["error"] = _result_error(result)
            if not act.submitted:
                return self._after_step(parts, calls_info)
            self.steps_in_turn += 1
            if self.steps_in_turn > self._b["step_limit"]:
                return self._truncate(parts, calls_info)
        # The user turn ends: a text-only action, or submit (after its calls ran as the turn's last step).
        return self._end_turn(parts, calls_info)

    def _after_step(self, parts, calls_info) -> tuple[str, float, bool, bool, dict[str, Any]]:
        self.steps_in_turn += 1
        if self.steps_in_turn > self._b["step_limit"]:
            return self._truncate(parts, calls_info)
        truncated = self.max_turns is not None and self.turn >= self.max_turns
        info = self._info(calls_info, TOOL)
        if truncated:
            info.update(success=False, score=0.0, checks=[], truncation="max_turns")
        return calls_observation(parts), 0.0, False, truncated, info

    def _truncate(self, parts, calls_info):
        info = self._info(calls_info, TOOL)
        info.update(success=False, score=0.0, checks=[], truncation="bfcl_step_limit")
        self._release()
        return calls_observation(parts), 0.0, False, True, info

    def _end_turn(self, parts, calls_info):
        self.user_turn += 1
        self.steps_in_turn = 0
        if self.user_turn >= len(self.entry["question"]):
            reward, checks = self._score()
            info = self._info(calls_info, TOOL)
            info.update(success=reward >= 1.0, score=reward, checks=checks, bfcl=self.verdict)
            done_obs = {"submitted": True, "score": reward, "success": reward >= 1.0}
            obs = calls_observation(parts + [("submit", done_obs)]) if parts else calls_observation([("submit", done_obs)])
            return obs, reward, True, False, info
        info = self._info(calls_info, USER)
        if self._adds_tools(self.user_turn):
            info["tools"] = self._tools(self.user_turn)
        info["user_turn"] = self.user_turn
        message = self._turn_message(self.user_turn)
        truncated = self.max_turns is not None and self.turn >= self.max_turns
        if truncated:
            info.update(success=False, score=0.0, checks=[], truncation="max_turns")
        if parts:  # calls that ran before submit: their results, then the next user message
            info["call_results"] = calls_observation(parts)
        return message, 0.0, False, truncated, info

    def _info(self, calls_info: list[dict[str, Any]], role: str) -> dict[str, Any]:
        return {"tool_name": calls_info[0]["tool_name"] if calls_info else None,
                "error": next((c["error"] for c in calls_info if c["error"]), None),
                "calls": calls_info, "observation_role": role, "user_turn": self.user_turn,
                "steps_in_turn": self.steps_in_turn}

    def _score(self) -> tuple[float, list[dict[str, Any]]]:
        """BFCL's verdict on this episode's call strings (its checker re-executes them from scratch)."""
        try:
            verdict = self._b["checker"](self.results, self._answers[self.entry["id"]], self.entry, self.category,
                                         self._key)
        finally:
            # The checker's instances ("<key>_eval_…", "<key>_ground_truth_eval_…") go at once; the
            # live ones stay readable (``instances``) until the next reset or close.
            g = self._b["globals"]
            for name in [n for n in list(g) if n.startswith(self._key + "_") and "_eval_" in n[len(self._key):]]:
                g.pop(name, None)
        valid = bool(verdict.get("valid"))
        self.verdict = {"valid": valid, "error_type": verdict.get("error_type"),
                        "error_message": verdict.get("error_message")}
        check = {"type": _CHECK_TYPES.get(verdict.get("error_type") or "", "bfcl"), "passed": valid,
                 "detail": verdict.get("error_message") or "multi_turn_checker: valid"}
        return (1.0 if valid else 0.0), [check]

    def close(self) -> None:
        with self._lock:
            self._release()
            self.instances = {}
            self._key = None

    # ------------------------------------------------------------------ reference and records
    def parse_gold_call(self, call: str) -> tuple[str, dict[str, Any]]:
        """A gold call string as ``(name, keyword arguments)``; positional arguments named from the method."""
        node = ast.parse(call, mode="eval").body
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
            raise ValueError(f"unexpected BFCL gold call {call!r}")
        name = node.func.id
        kwargs = {kw.arg: ast.literal_eval(kw.value) for kw in node.keywords}
        if node.args:
            method = next(getattr(inst, name) for inst in self.instances.values() if hasattr(inst, name))
            params = [p for p in inspect.signature(method).parameters]
            for p, arg in zip(params, node.args):
                kwargs[p] = ast.literal_eval(arg)
        return name, kwargs

    def solution_actions(self) -> list[str]:
        """BFCL's gold calls, turn by turn (at most 8 calls per action), each turn ended with ``submit``."""
        from ..engine.actions import format_call

        if self.entry is None:
            raise RuntimeError("call reset() first")
        actions = []
        for turn in self._answers[self.entry["id"]]:
            for start in range(0, len(turn), _REFERENCE_CHUNK):
                blocks = [format_call(*self.parse_gold_call(c)) for c in turn[start:start + _REFERENCE_CHUNK]]
                actions.append("".join(blocks))
            actions.append(format_call("submit", {}))
        return actions

    def gold_calls(self) -> list[list[str]]:
        """BFCL's ground truth of the current entry: call strings per user turn."""
        return copy.deepcopy(self._answers[self.entry["id"]])

    def gold_steps(self) -> list[list[tuple[str, dict[str, Any]]]]:
        """The ground truth as ``(name, keyword arguments)`` per user turn (what :meth:`solution_actions` sends)."""
        return [[self.parse_gold_call(c) for c in turn] for turn in self._answers[self.entry["id"]]]

    def state_hash(self) -> str:
        """A hash of the entry and the call strings executed so far, which determine the instances' state
        (BFCL's classes are deterministic; hashing the long_context instances themselves takes seconds)."""
        return stable_hash([self.entry["id"] if self.entry else None, self.results])

    def episode_facts(self) -> dict[str, Any]:
        gold = self._answers[self.entry["id"]]
        names = [self.parse_gold_call(c)[0] for turn in gold for c in turn] if self.instances else []
        return {"env_id": self.env_id, "split": self.split, "taxonomy": {"l1": "benchmark", "l2": "bfcl"},
                "task": {"id": self.entry["id"], "kind": self.category, "knobs": {"family": "+".join(self.entry["involved_classes"])},
                         "difficulty": None, "solution": [{"name": n} for n in names]},
                "reference_tools": names, "writes": [], "state_hash": self.state_hash()}


#: BFCL error types -> the check type agentworld's outcome classes read (``wrong_final_state`` …).
_CHECK_TYPES = {"multi_turn:instance_state_mismatch": "state", "multi_turn:execution_response_mismatch": "response",
                "multi_turn:empty_turn_model_response": "empty_turn"}


def _result_error(result: str) -> str | None:
    """An error code for a BFCL call result (for records and diagnosis; BFCL itself scores state and results)."""
    if result.startswith("Error during execution"):
        return "execution_error"
    if result.startswith('{"error"'):
        return "tool_error"
    return None
