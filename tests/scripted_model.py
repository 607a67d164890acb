"""A scripted "model" behind an OpenAI-compatible chat-completions endpoint on 127.0.0.1, for framework tests.

Frameworks that drive an LLM (verifiers' evaluation) are tested end to end without one: this
server reads the conversation it is sent, finds the agentworld task whose instruction the first
user turn holds, and answers with the next tool call of a fixed policy, as native tool calls:

* model ``reference``: the task's reference solution, one call per turn, then a text reply;
* model ``noop``: ``submit`` at once (scores 0: every kept task rejects a no-op);
* model ``silent``: a text reply and no tool call (never submits: scores 0);
* model ``fumble``: the reference solution after one call with an argument the tool does not
  have (the env answers ``invalid_arguments`` and changes nothing, so it still scores 1.0);
* model ``script``: per task, the policy ``policies[task id]`` names (default ``reference``).

It speaks both the plain JSON and the streamed (SSE) form of ``/v1/chat/completions``. It runs
with the system Python of the test session, which has agentworld installed; the framework under
test runs in its own venv and reaches it over loopback.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

POLICIES = ("reference", "noop", "silent", "fumble", "script")
#: The argument the ``fumble`` policy adds to its first call.
BOGUS_ARGUMENT = "no_such_argument"


class ScriptedModel:
    """Serve the policies for the tasks of ``env_ids`` at ``self.base_url`` (``.../v1``) until :meth:`close`."""

    def __init__(self, env_ids: list[str], policies: dict[str, str] | None = None):
        from agentworld_envs.catalogue.catalog import load_bundle

        self.policies = dict(policies or {})
        self.solutions: list[tuple[str, str, list[dict[str, Any]]]] = []
        for env_id in env_ids:
            for task in load_bundle(env_id).tasks:
                self.solutions.append((task["instruction"], task["id"], task["solution"]))
        # Longest first: an instruction that contains another's must win.
        self.solutions.sort(key=lambda s: -len(s[0]))
        self.requests: list[dict[str, Any]] = []
        model = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith("/models"):
                    self._json({"object": "list", "data": [{"id": p, "object": "model"} for p in POLICIES]})
                else:
                    self._json({"error": {"message": "not found"}}, 404)

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"{}")
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._json({"error": {"message": f"no route {self.path}"}}, 404)
                    return
                model.requests.append(body)
                message = model.reply(body.get("model", "reference"), body.get("messages", []))
                if body.get("stream"):
                    self._stream(body.get("model", ""), message)
                else:
                    finish = "tool_calls" if message.get("tool_calls") else "stop"
                    self._json({"id": "chatcmpl-scripted", "object": "chat.completion", "created": 0,
                                "model": body.get("model", ""), "choices": [
                                    {"index": 0, "message": message, "finish_reason": finish}],
                                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}})

            def _json(self, payload: dict[str, Any], status: int = 200) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _stream(self, name: str, message: dict[str, Any]) -> None:
                head = {"id": "chatcmpl-scripted", "object": "chat.completion.chunk", "created": 0, "model": name}
                delta: dict[str, Any] = {"role": "assistant", "content": message.get("content")}
                if message.get("tool_calls"):
                    delta["tool_calls"] = [{"index": i, **c} for i, c in enumerate(message["tool_calls"])]
                finish = "tool_calls" if message.get("tool_calls") else "stop"
                events = [{**head, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
                          {**head, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]},
                          {**head, "choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 1,
                                                            "total_tokens": 2}}]
                data = b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events) + b"data: [DONE]\n\n"
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def task_for(self, messages: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]]] | None:
        """``(task id, reference steps)`` of the task the conversation is about."""
        text = "\n".join(_text(m.get("content")) for m in messages if m.get("role") in ("user", "system"))
        return next(((tid, steps) for instruction, tid, steps in self.solutions if instruction in text), None)

    def reply(self, policy: str, messages: list[dict[str, Any]]) -> dict[str, Any]:
        """The assistant message of ``policy`` for the conversation so far."""
        done = sum(1 for m in messages if m.get("role") == "tool")
        found = self.task_for(messages)
        if policy == "script":
            policy = self.policies.get(found[0], "reference") if found else "reference"
        if policy in ("reference", "fumble"):
            if found is None:
                return {"role": "assistant", "content": "I do not know this task."}
            steps = found[1]
            if policy == "fumble":
                first = steps[0]
                steps = [{"name": first["name"], "arguments": {**first["arguments"], BOGUS_ARGUMENT: 1}}, *steps]
        elif policy == "noop":
            steps = [{"name": "submit", "arguments": {}}]
        else:
            steps = []
        if done >= len(steps):
            return {"role": "assistant", "content": "Done."}
        step = steps[done]
        return {"role": "assistant", "content": None, "tool_calls": [{
            "id": f"call_{done}", "type": "function",
            "function": {"name": step["name"], "arguments": json.dumps(step["arguments"])}}]}

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _text(content: Any) -> str:
    if isinstance(content, list):
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content or "")
