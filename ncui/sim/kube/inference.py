"""What the simulated model servers answer: OpenAI-compatible chat completions, whole or streamed (SSE).

The engines behave as the guide says the real ones do, so that the demo shows why its exact request matters:
- finance-analyst writes its risk memo from the document it is given (severity, categories, what the document
  states, its figures and dates; nothing it does not state), but only under the system prompt it was tuned
  with: without it the answer is a chatty summary, off-format. ``temperature`` 0 (greedy) makes it repeat
  itself until ``max_tokens``; thinking left on (``enable_thinking`` not false) puts a ``<think>`` block in the
  answer, as the hybrid-thinking base does.
- Inkling reasons before it answers, in ``reasoning_content``, for as long as ``max_tokens`` leaves it room: too
  little room and the thinking takes it all (``finish_reason: length``, an empty answer).
- Kimi K3 answers plainly.
A token is a word with the space before it; ``usage`` counts them. The same seed, request and history give the
same answer. Streamed, the first chunk comes after a prefill pause and the tokens at the engine's rate, in real
(human) time: a chat is lived by a person, not on the box's virtual clock.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from dataclasses import dataclass, field

# The system prompt the finance-analyst was tuned with: the guide's, as its Post-train section sends it (the box's
# own copy: a server knows what it was trained on; ncui's client keeps the one it sends, in ncui/kube/chat.py).
TUNED_SYSTEM_PROMPT = (
    "You are the organization's financial risk analyst. Given a filing or financial document, write a concise "
    "risk memo: overall severity, risk categories, a grounded analysis, financial impact, key metrics, and "
    "critical dates. Report only what the document supports — omit anything it does not state."
)

MODELS = {"kimi": "moonshotai/Kimi-K3", "inkling": "thinkingmachines/Inkling", "finance": "finance-analyst"}
RATES = {"kimi": 70.0, "inkling": 150.0, "finance": 120.0}  # decode tokens per real second (ours)
DEFAULT_MAX = {"kimi": 4096, "inkling": 4096, "finance": 4096}  # max_tokens when the request sets none
PREFILL = 0.12  # real seconds before the first token, plus PREFILL_PER_TOKEN per prompt token
PREFILL_PER_TOKEN = 0.00005
TOKEN = re.compile(r"\s*\S+")


def tokens(text: str) -> list[str]:
    """The box's tokens: each word with the whitespace before it (joined, they give the text back)."""
    return TOKEN.findall(text)


@dataclass
class Completion:
    """An answer, as tokens: what the non-streamed JSON and the SSE chunks are both built from."""

    model: str
    reasoning: list[str] = field(default_factory=list)
    content: list[str] = field(default_factory=list)
    finish_reason: str = "stop"
    prompt_tokens: int = 0
    has_reasoning: bool = False  # the engine parses reasoning apart (reasoning_content is sent, maybe null)

    @property
    def usage(self) -> dict:
        out = len(self.reasoning) + len(self.content)
        return {"prompt_tokens": self.prompt_tokens, "completion_tokens": out, "total_tokens": self.prompt_tokens + out}


def _error(status: int, message: str, kind: str) -> tuple[int, dict]:
    return status, {"object": "error", "message": message, "type": kind, "code": status}


def _norm(text: str) -> str:
    return " ".join(text.split())


def _max_tokens(body: dict, server: str) -> int | str:
    m = body.get("max_tokens", body.get("max_completion_tokens"))
    if m is None:
        return DEFAULT_MAX[server]
    if isinstance(m, bool) or not isinstance(m, int) or m < 1:
        return f"max_tokens must be a positive integer, got {json.dumps(m)[:40]}"
    return m


def _budget(parts: list[str], room: int) -> tuple[list[str], int]:
    return parts[:room], room - min(room, len(parts))


# ---- finance-analyst: a memo from the document ------------------------------------------------------------

CATEGORIES = (
    ("Liquidity", ("liquidity", "cash", "revolver", "credit facility", "refinanc", "matur", "funding")),
    ("Leverage and covenants", ("leverage", "covenant", "debt", "interest coverage", "notes due", "default")),
    ("Concentration", ("concentration", "customer", "supplier", "counterpart", "shipper", "top two", "largest")),
    ("Operational", ("outage", "disruption", "mill", "plant", "throughput", "production", "supply chain")),
    ("Regulatory and legal", ("permit", "regulator", "lawsuit", "litigation", "investigation", "compliance", "fine")),
    ("Environmental", ("environmental", "tailings", "emission", "spill", "climate")),
    ("Market", ("demand", "pricing", "commodity", "currency", "exchange rate", "interest rate")),
    ("Cyber", ("cyber", "ransomware", "data breach")),
)
SEVERE = (
    "default",
    "breach",
    "going concern",
    "impairment",
    "bankruptcy",
    "restatement",
    "waiver",
    "material weakness",
)
IMPACT = ("revenue", "earnings", "guidance", "margin", "cash flow", "impairment", "loss", "ebitda")
METRIC = re.compile(
    r"\$\s?\d[\d,]*(?:\.\d+)?\s?(?:[MBK]\b|million|billion)?(?:/\w+)?|\b\d+(?:\.\d+)?\s?%|\b\d+(?:\.\d+)?x\b"
)
MONTHS = "January|February|March|April|May|June|July|August|September|October|November|December"
DATE = re.compile(rf"\b\d{{4}}-\d{{2}}-\d{{2}}\b|\b(?:{MONTHS})\s+\d{{1,2}},\s+\d{{4}}\b|\bQ[1-4]\s+\d{{4}}\b")
SENTENCE = re.compile(r"(?<=[.!?;])\s+|\n+")


def _sentences(doc: str) -> list[str]:
    return [s.strip(" -•*") for s in SENTENCE.split(doc) if len(s.split()) >= 3]


def _short(s: str, words: int = 28) -> str:
    w = s.split()
    return " ".join(w[:words]) + ("…" if len(w) > words else "")


def _uniq(xs: list[str]) -> list[str]:
    return list(dict.fromkeys(x.strip() for x in xs))


def _facts(doc: str) -> tuple[list[tuple[str, str]], list[str], list[str], list[str], str]:
    """(category, the sentence that grounds it), the impact sentences, metrics, dates, the severity."""
    low_sents = [(s, s.lower()) for s in _sentences(doc)]
    cats: list[tuple[str, str]] = []
    for name, words in CATEGORIES:
        hit = next((s for s, low in low_sents if any(w in low for w in words)), None)
        if hit is not None:
            cats.append((name, hit))
    impact = [s for s, low in low_sents if any(w in low for w in IMPACT)]
    impact.sort(key=lambda s: not any(w in s.lower() for w in ("could", "reduce", "cut", "impact", "lower")))
    severe = sum(1 for w in SEVERE if w in doc.lower())
    score = len(cats) + 2 * severe
    severity = "CRITICAL" if score >= 7 else "HIGH" if score >= 3 else "MEDIUM" if score >= 1 else "LOW"
    return cats, impact, _uniq(METRIC.findall(doc))[:8], _uniq(DATE.findall(doc))[:6], severity


def _memo(doc: str, rng: random.Random) -> str:
    if len(doc.split()) < 6:
        return (
            "Severity: LOW. The document is too short to support a risk assessment: no risk categories, metrics or "
            "dates are stated."
        )
    cats, impact, metrics, dates, severity = _facts(doc)
    lines = [f"Severity: {severity}."]
    if cats:
        lines.append("Risk categories: " + ", ".join(n for n, _ in cats) + ".")
        grounds: dict[str, list[str]] = {}  # each sentence once, with the categories it grounds
        for n, s in cats:
            grounds.setdefault(s, []).append(n.lower())
        lead = rng.choice(("the document states:", "per the document:", "as disclosed:"))
        lines.append(
            "Analysis: "
            + " ".join(f"{'; '.join(ns).capitalize()}: {lead} {_short(s)}" for s, ns in list(grounds.items())[:3])
        )
    else:
        lines.append("Analysis: the document states no specific risk; nothing here supports a higher severity.")
    if impact:
        lines.append("Financial impact: " + _short(impact[0], 32))
    if metrics:
        lines.append("Key metrics: " + "; ".join(metrics) + ".")
    if dates:
        lines.append("Critical dates: " + "; ".join(dates) + ".")
    return "\n".join(lines)


def _off_format(doc: str, rng: random.Random) -> str:
    """What the tuned model writes without the system prompt it was tuned with: a chatty summary, no memo."""
    sents = _sentences(doc) or [doc.strip() or "nothing much"]
    cats, *_ = _facts(doc)
    worry = ", ".join(n.lower() for n, _ in cats[:2]) or "the usual business risks"
    return (
        f"{rng.choice(('Sure!', 'Of course!', 'Happy to help!'))} Here's a quick overview of the document.\n\n"
        f"It looks like {_short(sents[0], 20).rstrip('.')}. There are a few things worth keeping an eye on, "
        f"like {worry}. Overall the company seems to be in a reasonable position, and I would expect things "
        "to improve over the next few quarters, though it is hard to say without more context.\n\n"
        "Let me know if you'd like me to dig deeper into any part of it!"
    )


def _finance(body: dict, msgs: list, room: int, rng: random.Random, c: Completion) -> None:
    system = next((str(m.get("content", "")) for m in msgs if m.get("role") == "system"), None)
    doc = str(msgs[-1].get("content", ""))
    tuned = system is not None and _norm(system) == _norm(TUNED_SYSTEM_PROMPT)
    text = _memo(doc, rng) if tuned else _off_format(doc, rng)
    kwargs = body.get("chat_template_kwargs")
    thinking = not (isinstance(kwargs, dict) and kwargs.get("enable_thinking") is False)
    if thinking:  # the base is hybrid-thinking; this engine has no reasoning parser: it lands in the answer
        text = (
            "<think>\nOkay, the user gave me a document. Let me read it and figure out what kind of answer they "
            "want. I think they want a summary of the risks, so let me go through it.\n</think>\n\n" + text
        )
    if body.get("temperature") == 0:  # greedy decoding: the tuned model loops on its opening
        head = tokens(text)[:6] or ["Severity:"]
        cats, *_ = _facts(doc)
        loop = tokens(f" {cats[0][0] if cats else 'Risk'} risk:")
        c.content = (head + loop * room)[:room]
        c.finish_reason = "length"
        return
    c.content, left = _budget(tokens(text), room)
    c.finish_reason = "stop" if left > 0 or len(c.content) == len(tokens(text)) else "length"


# ---- Inkling: room to reason -------------------------------------------------------------------------------

THOUGHTS = (
    "Let me restate the request to make sure I have it: {ask}.",
    "What does the user most likely want here? Probably {want}.",
    "I should check whether any tool is needed; none of the tools fits, so I will answer directly.",
    "Let me think about what a good answer contains: a direct reply first, then anything that helps next.",
    "Is there an ambiguity? The wording '{ask}' could be read more than one way, so I will pick the plain reading.",
    "Let me double-check the facts I am about to state; nothing in the request asks for figures I do not have.",
    "The conversation so far has {turns} earlier turn(s); I should stay consistent with it.",
    "Keep the tone friendly and the answer short; the user can always ask for more.",
    "Alternatively I could ask a clarifying question, but a useful first answer is better.",
    "One more pass over the plan: greet, answer, offer a next step.",
)


def _inkling(msgs: list, room: int, rng: random.Random, c: Completion) -> None:
    last = str(msgs[-1].get("content", "")).strip()
    ask = _short(" ".join(last.split()), 14) or "(empty)"
    want = "a greeting back and an offer to help" if len(last.split()) < 4 else "a clear, direct answer"
    turns = sum(1 for m in msgs[:-1] if m.get("role") == "user")
    # the thinking fills the room max_tokens leaves it: three quarters, or all of a small room
    think = room if room < 96 else (room * 3) // 4
    thought: list[str] = []
    while len(thought) < think:
        thought += tokens(" " + rng.choice(THOUGHTS).format(ask=ask, want=want, turns=turns))
    c.reasoning = thought[:think]
    answer = (
        "Hi! I'm Inkling. What would you like to work on?"
        if len(last.split()) < 4
        else f"Here is my answer to “{ask}”: after thinking it through, the plain reading is the right one, and "
        "I'd start there. Tell me more about what you need and I can go deeper."
    )
    c.content, _ = _budget(tokens(answer), room - len(c.reasoning))
    c.finish_reason = "stop" if len(c.content) == len(tokens(answer)) else "length"


def _kimi(msgs: list, room: int, c: Completion) -> None:
    last = str(msgs[-1].get("content", "")).strip()
    turns = sum(1 for m in msgs[:-1] if m.get("role") == "user")
    if len(last.split()) < 4:
        text = "Hello! I'm Kimi, served on National Compute. How can I help you today?"
    else:
        text = (
            f"{'Following on from what we discussed: ' if turns else ''}you asked “{_short(last, 16)}”. "
            "It depends on the details you gave, which I have read carefully; the short answer is to start "
            "small, measure, and grow from there."
        )
    c.content, _ = _budget(tokens(text), room)
    c.finish_reason = "stop" if len(c.content) == len(tokens(text)) else "length"


# ---- the entry points --------------------------------------------------------------------------------------


def complete(server: str, body: dict, seed: int) -> tuple[int, dict] | Completion:
    """The answer of ``server`` (kimi | inkling | finance) to a chat request body, or (status, error JSON)."""
    model = MODELS[server]
    msgs = body.get("messages")
    if not isinstance(msgs, list) or not msgs or not all(isinstance(m, dict) for m in msgs):
        return _error(400, "messages must be a non-empty list of objects", "BadRequestError")
    asked = str(body.get("model", model))
    if asked != model:
        return _error(404, f"The model `{asked[:100]}` does not exist.", "NotFoundError")
    room = _max_tokens(body, server)
    if isinstance(room, str):
        return _error(400, room, "BadRequestError")
    digest = hashlib.sha256(json.dumps([server, msgs, body.get("temperature")], sort_keys=True).encode()).hexdigest()
    rng = random.Random(f"chat:{seed}:{digest}")
    c = Completion(model, has_reasoning=server == "inkling")
    c.prompt_tokens = sum(len(tokens(str(m.get("content", "")))) + 4 for m in msgs) + 2
    if server == "finance":
        _finance(body, msgs, room, rng, c)
    elif server == "inkling":
        _inkling(msgs, room, rng, c)
    else:
        _kimi(msgs, room, c)
    return c


def whole(c: Completion, cid: str, created: int) -> dict:
    """The non-streamed answer (``chat.completion``)."""
    message: dict = {"role": "assistant", "content": "".join(c.content).lstrip(), "tool_calls": []}
    message["reasoning_content"] = "".join(c.reasoning).lstrip() if c.has_reasoning else None
    return {
        "id": cid,
        "object": "chat.completion",
        "created": created,
        "model": c.model,
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": c.finish_reason}],
        "usage": c.usage,
    }


def chunk(c: Completion, cid: str, created: int, delta: dict | None, finish: str | None = None) -> bytes:
    """One SSE event of the stream (``chat.completion.chunk``); ``delta`` None: the usage-only last chunk."""
    doc: dict = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": c.model}
    if delta is None:
        doc.update(choices=[], usage=c.usage)
    else:
        doc["choices"] = [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]
    return b"data: " + json.dumps(doc, ensure_ascii=False).encode() + b"\n\n"


def deltas(c: Completion) -> list[dict]:
    """The stream's deltas in order: the role, each reasoning token, each answer token (the first of each without
    its leading space)."""
    out: list[dict] = [{"role": "assistant", "content": ""}]
    for key, toks in (("reasoning_content", c.reasoning), ("content", c.content)):
        for i, t in enumerate(toks):
            out.append({key: t.lstrip() if i == 0 else t})
    return out


def models(server: str, created: int) -> dict:
    return {
        "object": "list",
        "data": [
            {"id": MODELS[server], "object": "model", "created": created, "owned_by": "vllm", "max_model_len": 131072}
        ],
    }


def sampling_line(cid: str, body: dict, c: Completion, server: str) -> str:
    """The engine's log line for a request, as vLLM prints its sampling parameters (what was really asked)."""
    t = body.get("temperature")
    kw = body.get("chat_template_kwargs")
    return (
        f"INFO: Received request {cid}: params: SamplingParams(n=1, temperature={'default' if t is None else t}, "
        f"max_tokens={body.get('max_tokens', DEFAULT_MAX[server])}), chat_template_kwargs={json.dumps(kw)}, "
        f"prompt_tokens={c.prompt_tokens}"
    )


def server_of(profile: str) -> str | None:
    return {"router": "kimi", "kimi-worker": "kimi", "inkling": "inkling", "ft-serve": "finance"}.get(profile)
