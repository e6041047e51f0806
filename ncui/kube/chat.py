"""Talking to a served model: each serve recipe's request as the guide writes it, and an OpenAI-compatible
streaming (SSE) client through the cluster's service proxy. No Textual here.

The guide's requests (first-job, Serve and Post-train):
- Kimi K3 (``svc/infera``): the model and the messages, nothing else.
- Inkling (``svc/inkling``): ``max_tokens`` 1024, room for it to reason before it answers; the thinking arrives
  in a separate field of the message (``reasoning_content``).
- finance-analyst (``svc/finance-analyst``): the system prompt the model was tuned with, verbatim; ``max_tokens``
  700; ``chat_template_kwargs: {"enable_thinking": false}``; sampling left unset (never ``temperature`` 0:
  greedy decoding makes it repeat itself). The user content is a document.

A chat adds ``stream: true`` (and asks for the final usage) to the guide's body; the curl a person copies is the
guide's own (one JSON answer, after ``kubectl port-forward`` as the guide does it).
"""

from __future__ import annotations

import json
import shlex
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..textsafe import clean
from .errors import KubeError

if TYPE_CHECKING:
    from ..history import Recorder
    from .client import KubeClient

__all__ = [
    "FINANCE_SYSTEM_PROMPT",
    "ENDPOINTS",
    "Endpoint",
    "Turn",
    "Chunk",
    "Answer",
    "ChatError",
    "request_body",
    "curl_command",
    "stream_chat",
    "endpoint_ready",
    "ready_endpoint",
]

# The guide's system prompt for the tuned finance-analyst, verbatim: the one the model was tuned with.
FINANCE_SYSTEM_PROMPT = (
    "You are the organization's financial risk analyst. Given a filing or financial document, write a concise "
    "risk memo: overall severity, risk categories, a grounded analysis, financial impact, key metrics, and "
    "critical dates. Report only what the document supports — omit anything it does not state."
)


@dataclass(frozen=True)
class Endpoint:
    """A serve recipe's endpoint and the request the guide sends it."""

    service: str  # the Service (kubectl port-forward svc/<service> 8000:8000)
    port: int
    model: str
    recipe: str  # the recipe's name as a person reads it
    behind: tuple[str, ...]  # the Deployments that must be READY 1/1 before it answers
    params: Mapping[str, Any] = field(default_factory=dict)  # the guide's other fields, in its order
    system: str | None = None  # the system prompt sent with every request
    document: bool = False  # the user content is a document (one request per document, no history)
    reasoning: bool = False  # the thinking arrives apart (reasoning_content)


ENDPOINTS: dict[str, Endpoint] = {
    e.service: e
    for e in (
        Endpoint("infera", 8000, "moonshotai/Kimi-K3", "Kimi K3", ("kimi-k3-worker", "infera-router")),
        Endpoint(
            "inkling", 8000, "thinkingmachines/Inkling", "Inkling", ("inkling",), {"max_tokens": 1024}, reasoning=True
        ),
        Endpoint(
            "finance-analyst",
            8000,
            "finance-analyst",
            "Post-train (finance-analyst)",
            ("finance-analyst",),
            {"max_tokens": 700, "chat_template_kwargs": {"enable_thinking": False}},
            system=FINANCE_SYSTEM_PROMPT,
            document=True,
        ),
    )
}


def endpoint_ready(ep: Endpoint, deployments: Mapping[str, Any]) -> bool:
    """Every Deployment behind ``ep`` (``{name: Deployment}``) is READY 1/1 or more."""
    return all(int(((deployments.get(n) or {}).get("status") or {}).get("readyReplicas") or 0) >= 1 for n in ep.behind)


def ready_endpoint(deployments: Mapping[str, Any]) -> Endpoint | None:
    """The endpoint whose Deployments (``{name: Deployment}``) are all READY 1/1, if one is."""
    return next((e for e in ENDPOINTS.values() if endpoint_ready(e, deployments)), None)


@dataclass(frozen=True)
class Turn:
    """One exchange of the conversation: what the human sent, and the answer (reasoning kept apart)."""

    user: str
    answer: str = ""
    reasoning: str = ""


def request_body(ep: Endpoint, history: Sequence[Turn], text: str, *, stream: bool = True) -> dict[str, Any]:
    """The body the guide's request would carry for ``text`` after ``history`` (a document endpoint sends each
    document alone, as the model was tuned), plus ``stream`` for a chat that reads the answer as it comes."""
    messages: list[dict[str, str]] = []
    if ep.system is not None:
        messages.append({"role": "system", "content": ep.system})
    if not ep.document:
        for t in history:  # the answers, not the thinking: reasoning is not sent back (as OpenAI's API says)
            messages += [{"role": "user", "content": t.user}, {"role": "assistant", "content": t.answer}]
    messages.append({"role": "user", "content": text})
    body: dict[str, Any] = {"model": ep.model}
    body.update(json.loads(json.dumps(dict(ep.params))))  # a copy: the endpoint's data stays as it is
    body["messages"] = messages
    if stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    return body


def curl_command(ep: Endpoint, body: Mapping[str, Any], context: str, history: Recorder | None) -> str:
    """The guide's two lines for ``body``: the port-forward, then curl (without ``stream``: one JSON answer). The
    port-forward as ``history`` writes kubectl lines (the context merge declined: ``KUBECONFIG=…`` first)."""
    plain = {k: v for k, v in body.items() if k not in ("stream", "stream_options")}
    data = json.dumps(plain, ensure_ascii=False)
    forward = f"kubectl --context {shlex.quote(context)} port-forward svc/{ep.service} {ep.port}:{ep.port}"
    return (
        f"{history.with_kubeconfig(forward) if history is not None else forward} &\n"
        f"curl -s localhost:{ep.port}/v1/chat/completions -H 'content-type: application/json' \\\n"
        f"  -d {shlex.quote(data)}"
    )


# ---- the streaming client ------------------------------------------------------------------------------------


class ChatError(Exception):
    """The endpoint failed to answer in full: a sentence a person can act on (server text made safe)."""


@dataclass(frozen=True)
class Chunk:
    """What one SSE event added: answer text, reasoning text (either may be empty)."""

    content: str = ""
    reasoning: str = ""


@dataclass
class Answer:
    """An answer as it streams: its text so far, its timing (monotonic seconds) and, at the end, its usage."""

    content: str = ""
    reasoning: str = ""
    started: float = field(default_factory=time.monotonic)
    first_token: float | None = None  # when the first reasoning or answer text arrived
    ended: float | None = None
    finish_reason: str | None = None
    completion_tokens: int | None = None  # the server's usage (None: it sent none)
    prompt_tokens: int | None = None
    chunks: int = 0  # events that carried text (a token each on the engines the guide names)

    @property
    def ttft(self) -> float | None:
        return None if self.first_token is None else self.first_token - self.started

    @property
    def tokens(self) -> int:
        """Tokens generated: the server's count when it gave one, else the chunks that carried text."""
        return self.completion_tokens if self.completion_tokens is not None else self.chunks

    @property
    def tokens_per_second(self) -> float | None:
        """Decode rate: tokens after the first over the time since the first (None before two tokens)."""
        if self.first_token is None:
            return None
        end = self.ended if self.ended is not None else time.monotonic()
        span = end - self.first_token
        return (self.tokens - 1) / span if span > 0 and self.tokens > 1 else None

    def add(self, c: Chunk, at: float) -> None:
        if not (c.content or c.reasoning):
            return
        if self.first_token is None:
            self.first_token = at
        self.content += c.content
        self.reasoning += c.reasoning
        self.chunks += 1


def _error_text(status: int, raw: bytes) -> str:
    """The message of an OpenAI-style or Kubernetes error body, made safe."""
    msg = ""
    try:
        doc = json.loads(raw)
        if isinstance(doc, dict):
            err = doc.get("error")
            nested = err.get("message") if isinstance(err, dict) else None
            msg = str(doc.get("message") or nested or doc.get("detail") or err or "")
    except ValueError:
        msg = raw[:300].decode("utf-8", "replace")
    msg = " ".join(clean(msg).split())[:300]
    return f"HTTP {status}" + (f": {msg}" if msg else "")


def _chunk_of(doc: Any, answer: Answer) -> Chunk:
    """One parsed SSE event → its text; reads the usage and finish reason into ``answer``."""
    if not isinstance(doc, dict):
        raise ValueError("not a JSON object")
    if isinstance(doc.get("error"), dict) or doc.get("object") == "error":  # an engine error mid-stream
        err = doc["error"] if isinstance(doc.get("error"), dict) else doc
        raise ChatError("the endpoint stopped with an error: " + " ".join(clean(str(err.get("message", ""))).split()))
    usage = doc.get("usage")
    if isinstance(usage, dict):
        ct, pt = usage.get("completion_tokens"), usage.get("prompt_tokens")
        answer.completion_tokens = ct if isinstance(ct, int) else answer.completion_tokens
        answer.prompt_tokens = pt if isinstance(pt, int) else answer.prompt_tokens
    choices = doc.get("choices")
    if not isinstance(choices, list):
        raise ValueError("no choices list")
    if not choices:
        return Chunk()
    ch = choices[0]
    if not isinstance(ch, dict):
        raise ValueError("a choice that is not an object")
    if ch.get("finish_reason"):
        answer.finish_reason = str(ch["finish_reason"])[:40]
    delta = ch.get("delta") or {}
    if not isinstance(delta, dict):
        raise ValueError("a delta that is not an object")
    content = delta.get("content")
    reasoning = delta.get("reasoning_content", delta.get("reasoning"))
    return Chunk(
        clean(content, multiline=True) if isinstance(content, str) else "",
        clean(reasoning, multiline=True) if isinstance(reasoning, str) else "",
    )


async def stream_chat(
    kube: KubeClient, ep: Endpoint, body: Mapping[str, Any], answer: Answer, *, timeout: float = 300.0
) -> AsyncIterator[Chunk]:
    """POST ``body`` to the endpoint through the service proxy and yield its text as it streams in (chunks that
    carry text only), filling
    ``answer`` (text, timing, finish reason, usage) on the way. Raises ``ChatError`` with a sentence for an
    endpoint that refuses (4xx/5xx), a stream that drops before ``[DONE]``, or a chunk that is not an
    OpenAI chunk; ``KubeError`` when the cluster cannot be reached or refuses the sign-in."""
    answer.started = time.monotonic()
    got_done = False
    try:
        async with kube.proxy_stream(ep.service, ep.port, "v1/chat/completions", body, timeout=timeout) as r:
            if r.status_code >= 400:
                raise ChatError(f"{ep.recipe} refused the request ({_error_text(r.status_code, await r.aread())})")
            buf: list[str] = []  # the data lines of the event being read
            async for line in r.aiter_lines():
                if line.startswith(":"):  # an SSE comment (a keep-alive)
                    continue
                if line.startswith("data:"):
                    buf.append(line[5:].lstrip(" "))
                    continue
                if line.strip() or not buf:  # another field (event:, id:) or a blank line between events
                    continue
                data, buf = "\n".join(buf), []
                if data.strip() == "[DONE]":
                    got_done = True
                    break
                try:
                    c = _chunk_of(json.loads(data), answer)
                except ValueError as e:
                    raise ChatError(
                        f"{ep.recipe} sent a chunk that is not an OpenAI chunk ({e}): "
                        f"{' '.join(clean(data).split())[:80]!r}; the answer stops here"
                    ) from None
                if c.content or c.reasoning:
                    answer.add(c, time.monotonic())
                    yield c
    except KubeError:
        raise
    except ChatError:
        raise
    except Exception as e:  # httpx's transport errors: the connection dropped mid-answer
        import httpx

        if not isinstance(e, (httpx.HTTPError, OSError)):
            raise
        raise ChatError(
            f"the stream from {ep.recipe} dropped after {answer.chunks} token(s) ({type(e).__name__}); "
            "what arrived is kept: send again to retry"
        ) from None
    finally:
        answer.ended = time.monotonic()
    if not got_done:
        raise ChatError(
            f"the stream from {ep.recipe} ended after {answer.chunks} token(s) without [DONE]: the answer may be "
            "cut; send again to retry"
        )
