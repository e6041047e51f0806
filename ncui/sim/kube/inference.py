"""What the simulated model servers answer through the service proxy: OpenAI-style chat completions."""

from __future__ import annotations

import hashlib
import itertools
import json

from . import profiles

SERIAL = itertools.count(1)  # completion ids are unique, as a real server's are, even for identical requests
MODELS = {"kimi": "moonshotai/Kimi-K3", "inkling": "thinkingmachines/Inkling", "finance": "finance-analyst"}


def _words(text: str) -> int:
    return max(1, len(text.split()))


def chat(server: str, body: dict, created: int) -> tuple[int, dict]:
    """(status, json) for ``POST /v1/chat/completions`` on ``server`` (kimi | inkling | finance)."""
    model = MODELS[server]
    msgs = body.get("messages")
    if not isinstance(msgs, list) or not msgs:
        return 400, {
            "object": "error",
            "message": "messages must be a non-empty list",
            "type": "BadRequestError",
            "code": 400,
        }
    asked = str(body.get("model", model))
    if asked != model:
        return 404, {
            "object": "error",
            "message": f"The model `{asked}` does not exist.",
            "type": "NotFoundError",
            "code": 404,
        }
    last = str(msgs[-1].get("content", "")) if isinstance(msgs[-1], dict) else ""
    h = hashlib.sha256(json.dumps(msgs, sort_keys=True).encode()).hexdigest()
    message: dict = {"role": "assistant", "tool_calls": []}
    if server == "kimi":
        message["content"] = (
            "Hello! I'm Kimi, served on National Compute. How can I help you today?"
            if len(last) < 40
            else f"Here is a short answer to your question ({len(last)} "
            f"characters): it depends on the details you gave, which I "
            f"have read carefully."
        )
        message["reasoning_content"] = None
    elif server == "inkling":
        message["reasoning_content"] = (
            f"The user wrote {_words(last)} word(s). A short, friendly greeting fits; no tool is needed."
        )
        message["content"] = "Hi! I'm Inkling. What would you like to work on?"
    else:
        doc = last.lower()
        memo = profiles.MEMOS[int(h[:2], 16) % len(profiles.MEMOS)][1]
        if len(doc) < 20:
            memo = (
                "Severity: LOW. The document is too short to support a risk assessment: no risk categories, "
                "metrics or dates are stated."
            )
        message["content"] = memo
        message["reasoning_content"] = None
    out_tokens = _words(message["content"]) + _words(message.get("reasoning_content") or "")
    in_tokens = sum(_words(str(m.get("content", ""))) for m in msgs if isinstance(m, dict)) + 8
    return 200, {
        "id": f"chatcmpl-{h[:16]}{next(SERIAL):08x}",
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": in_tokens, "completion_tokens": out_tokens, "total_tokens": in_tokens + out_tokens},
    }


def models(server: str, created: int) -> dict:
    return {
        "object": "list",
        "data": [
            {"id": MODELS[server], "object": "model", "created": created, "owned_by": "vllm", "max_model_len": 131072}
        ],
    }


def server_of(profile: str) -> str | None:
    return {"router": "kimi", "kimi-worker": "kimi", "inkling": "inkling", "ft-serve": "finance"}.get(profile)
