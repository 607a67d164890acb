"""Optional instruction paraphrasing through an OpenAI-compatible chat endpoint (off by default).

Enabled only when ``AGENTWORLD_LLM_BASE_URL`` is set (``AGENTWORLD_LLM_MODEL``,
``AGENTWORLD_LLM_API_KEY`` optional). Uses only ``urllib``. A paraphrase is accepted only
if every value the user must quote (codes, e-mails, numbers) survives verbatim; otherwise
the template text is kept. Never used in tests.
"""

from __future__ import annotations

import json
import os
import urllib.request
from typing import Iterable


def enabled() -> bool:
    return bool(os.environ.get("AGENTWORLD_LLM_BASE_URL"))


def paraphrase(text: str, keep: Iterable[str], timeout: float = 20.0) -> str:
    base = os.environ.get("AGENTWORLD_LLM_BASE_URL")
    if not base:
        return text
    body = {"model": os.environ.get("AGENTWORLD_LLM_MODEL", "default"), "temperature": 0.7,
            "messages": [{"role": "system", "content": "Rewrite the user's request in natural, varied wording. Keep every "
                                                       "code, e-mail, name and number exactly. Output only the rewrite."},
                         {"role": "user", "content": text}]}
    req = urllib.request.Request(base.rstrip("/") + "/chat/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json",
                                          "Authorization": f"Bearer {os.environ.get('AGENTWORLD_LLM_API_KEY', 'none')}"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            out = json.loads(resp.read())["choices"][0]["message"]["content"].strip()
    except Exception:  # noqa: BLE001 - the hook is best effort
        return text
    return out if out and all(str(k) in out for k in keep) else text
