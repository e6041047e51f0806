"""What the simulated model servers answer: OpenAI-compatible chat completions, whole or streamed (SSE).

The engines behave as the guide says the real ones do, so that the demo shows why its exact request matters:
- finance-analyst writes its risk memo from the document it is given (severity, categories, what the document
  states, its figures and dates; nothing it does not state), but only under the system prompt it was tuned
  with: without it the answer is a chatty summary, off-format. ``temperature`` 0 (greedy) makes it repeat
  itself until ``max_tokens``; thinking left on (``enable_thinking`` not false) puts a ``<think>`` block in the
  answer, as the hybrid-thinking base does.
- Inkling reasons before it answers, in ``reasoning_content``: a few thoughts, more for a real question than for
  a greeting; too little room in ``max_tokens`` and the thinking takes it all (``finish_reason: length``, an
  empty answer). It calls tools the OpenAI way: offered ``tools`` and a question one of them fits (by its name
  and description), it answers with ``tool_calls`` (an id, ``type: function``, the function's name and JSON
  arguments read off the question) and ``finish_reason: tool_calls``; given the tool's result (a ``tool``
  message), it answers from it. ``tool_choice`` ``none``, ``auto``, ``required`` or a named function.
- Kimi K3 answers plainly.
A token is a word with the space before it; ``usage`` counts the prompt (every message, the tools offered) and
exactly what the answer returns (thinking, answer, tool calls). The same seed, request and history give the
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
    tool_calls: list[dict] = field(default_factory=list)  # OpenAI's: {"id", "type": "function", "function": {…}}

    @property
    def usage(self) -> dict:
        calls = sum(len(_call_tokens(call)) for call in self.tool_calls)
        out = len(self.reasoning) + len(self.content) + calls
        return {"prompt_tokens": self.prompt_tokens, "completion_tokens": out, "total_tokens": self.prompt_tokens + out}


def _call_tokens(call: dict) -> list[str]:
    """A tool call as tokens: its function's name, then its arguments (the stream sends one chunk for each)."""
    return [call["function"]["name"], *tokens(call["function"]["arguments"])]


def _text(content: object) -> str:
    """A message's text: a string, or the text parts of a list of content parts (None: no text)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def _prompt_tokens(msgs: list, tools: list[dict]) -> int:
    """The prompt's tokens: each message's text and tool calls (4 more for its role and separators), the tools."""
    n = 2
    for m in msgs:
        n += 4 + len(tokens(_text(m.get("content"))))
        for call in m.get("tool_calls") or []:
            fn = call.get("function") if isinstance(call, dict) else None
            if isinstance(fn, dict):
                n += len(tokens(f"{fn.get('name', '')} {fn.get('arguments', '')}"))
    return n + sum(len(tokens(json.dumps(t, ensure_ascii=False))) for t in tools)


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

THOUGHTS = (  # the first two always, then a few of the rest for a real question
    "Let me restate the request to make sure I have it: {ask}.",
    "What does the user most likely want here? Probably {want}.",
    "Let me think about what a good answer contains: a direct reply first, then anything that helps next.",
    "Is there an ambiguity? The wording '{ask}' could be read more than one way, so I will pick the plain reading.",
    "Let me double-check the facts I am about to state; nothing in the request asks for figures I do not have.",
    "The conversation so far has {turns} earlier turn(s); I should stay consistent with it.",
    "Keep the tone friendly and the answer short; the user can always ask for more.",
    "Alternatively I could ask a clarifying question, but a useful first answer is better.",
)
NO_TOOL = "I should check whether any tool is needed; none of the tools fits, so I will answer directly."
TOOL_FITS = "The {name} tool fits this: I will call it with {args} and answer from what it returns."
TOOL_SAID = "The {name} tool answered: {result}. I can answer from that now."
STOP = set(
    "a an and are be can could current do does for from get give given how i in is it me my of on or please set "
    "some tell that the this to what whats with would you your".split()
)  # words too common to say which tool a question calls for


def _words(text: str) -> set[str]:
    """Lowercased words, camelCase and snake_case split, a plural's s dropped, the common ones left out."""
    text = re.sub(r"([a-z])([A-Z])", r"\1 \2", text)
    out = {w.lower().rstrip("s") if len(w) > 3 else w.lower() for w in re.findall(r"[A-Za-z0-9]+", text)}
    return {w for w in out if w not in STOP and len(w) > 1}


def _tools(body: dict) -> tuple[list[dict], str | None, str | None]:
    """The request's function tools, ``tool_choice`` as ``none``/``auto``/``required`` or the named function's
    name, and an error message (None: valid), as the engine checks them."""
    tools, choice = body.get("tools"), body.get("tool_choice")
    if tools is None:
        tools = []
    if not isinstance(tools, list) or not all(
        isinstance(t, dict)
        and t.get("type") == "function"
        and isinstance(t.get("function"), dict)
        and isinstance(t["function"].get("name"), str)
        and re.fullmatch(r"[A-Za-z0-9_-]{1,64}", t["function"]["name"])
        for t in tools
    ):
        return [], None, 'tools must be a list of {"type": "function", "function": {"name": …}} (names: a-z 0-9 _ -)'
    names = [t["function"]["name"] for t in tools]
    if choice is None:
        return tools, "auto" if tools else "none", None
    if isinstance(choice, dict):
        fn = choice.get("function")
        name = fn.get("name") if isinstance(fn, dict) else None
        if choice.get("type") != "function" or not isinstance(name, str):
            return [], None, 'tool_choice must be "none", "auto", "required" or {"type": "function", "function": …}'
        choice = name
        if name not in names:
            return [], None, f"tool_choice names the function {name[:64]}, which is not in tools"
        return tools, name, None
    if choice not in ("none", "auto", "required"):
        return [], None, 'tool_choice must be "none", "auto", "required" or {"type": "function", "function": …}'
    if choice == "required" and not tools:
        return [], None, "When using `tool_choice`, `tools` must be set."
    return tools, choice, None


def _pick(tools: list[dict], choice: str | None, question: str) -> dict | None:
    """The tool the question calls for: the one whose name (twice) and description share most of its words."""
    if not tools or choice in (None, "none"):
        return None
    named = {t["function"]["name"]: t for t in tools}
    if choice in named:
        return named[choice]
    asked = _words(question)

    def score(t: dict) -> int:
        fn = t["function"]
        return 2 * len(asked & _words(fn["name"])) + len(asked & _words(str(fn.get("description", ""))))

    best = max(tools, key=score)
    return best if score(best) >= 2 or choice == "required" else None


def _arguments(tool: dict, question: str) -> dict:
    """The call's arguments, read off the question: what its JSON schema requires (every property when it names
    none): a place after "in"/"for"/"at", a quoted or capitalised phrase, a number, an enum value it names."""
    params = tool["function"].get("parameters")
    props = params.get("properties") if isinstance(params, dict) else None
    if not isinstance(props, dict):
        return {}
    wanted = [k for k in (params.get("required") or []) if k in props] or list(props)
    q = question.strip().rstrip("?!. ")
    place = re.search(r"\b(?:in|for|at|near|of)\s+([A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)*)", q)
    quoted = re.search(r"[\"“']([^\"”']+)[\"”']", q)
    proper = re.search(r"(?<=\s)([A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)*)", q)
    number = re.search(r"-?\d+(?:\.\d+)?", q)
    out: dict = {}
    for key in wanted:
        spec = props[key] if isinstance(props[key], dict) else {}
        kind, enum = spec.get("type"), spec.get("enum")
        if isinstance(enum, list) and enum:
            out[key] = next((e for e in enum if str(e).lower() in q.lower()), enum[0])
        elif kind in ("integer", "number"):
            value = float(number.group()) if number else 1
            out[key] = int(value) if kind == "integer" else value
        elif kind == "boolean":
            out[key] = False
        elif kind == "array":
            out[key] = []
        elif kind == "object":
            out[key] = {}
        elif re.search(r"query|question|text|prompt|input|search|^q$", key, re.I):
            out[key] = q
        else:  # a place for a place; else what the question quotes or names
            where = re.search(r"location|city|place|where|country|region", key, re.I)
            found = (place or proper) if where else (quoted or place or proper)
            out[key] = found.group(1) if found else q
    return out


def _results(msgs: list) -> list[tuple[str, str]]:
    """(function name, result) of the ``tool`` messages the conversation ends with (the answers to its last
    tool calls); [] when it does not end with them."""
    tail: list[dict] = []
    for m in reversed(msgs):
        if m.get("role") != "tool":
            break
        tail.insert(0, m)
    if not tail:
        return []
    calls = {}
    for m in msgs:
        for call in (m.get("tool_calls") or []) if m.get("role") == "assistant" else []:
            if isinstance(call, dict) and isinstance(call.get("function"), dict):
                calls[call.get("id")] = str(call["function"].get("name", "the tool"))
    return [(calls.get(m.get("tool_call_id"), "the tool"), _text(m.get("content")).strip()) for m in tail]


def _said(result: str) -> str:
    """A tool's result in a sentence: an object's fields as "key value", else its text."""
    try:
        doc = json.loads(result)
    except ValueError:
        return _short(" ".join(result.split()), 40) or "nothing"
    if isinstance(doc, dict):
        parts = [f"{str(k).replace('_', ' ')} {v}" for k, v in doc.items() if not isinstance(v, (dict, list))]
        return _short(", ".join(parts), 40) or "nothing"
    if isinstance(doc, list):
        return _short(", ".join(str(x) for x in doc), 40) or "nothing"
    return str(doc)


def _inkling(msgs: list, room: int, rng: random.Random, c: Completion, tools: list[dict], choice: str | None) -> None:
    users = [m for m in msgs if m.get("role") == "user"]
    last = _text(users[-1].get("content")).strip() if users else ""
    ask = _short(" ".join(last.split()), 14) or "(empty)"
    greeting = len(last.split()) < 4
    want = "a greeting back and an offer to help" if greeting else "a clear, direct answer"
    results = _results(msgs)
    tool = None if results else _pick(tools, choice, last)
    args = _arguments(tool, last) if tool is not None else {}
    plan = [THOUGHTS[0], THOUGHTS[1]]
    if not greeting:  # a real question: a few more thoughts, each once
        plan += rng.sample(THOUGHTS[2:], rng.randint(2, 4))
    lines = [t.format(ask=ask, want=want, turns=max(0, len(users) - 1)) for t in plan]
    if results:
        lines += [TOOL_SAID.format(name=n, result=_said(r)) for n, r in results]
    elif tool is not None:
        lines.append(TOOL_FITS.format(name=tool["function"]["name"], args=json.dumps(args, ensure_ascii=False)))
    elif tools and choice != "none":
        lines.append(NO_TOOL)
    thought = [t for line in lines for t in tokens(" " + line)]
    c.reasoning = thought[:room]  # too little room: the thinking takes it all
    left = room - len(c.reasoning)
    if tool is not None:
        call = {
            "id": f"chatcmpl-tool-{rng.getrandbits(128):032x}",
            "type": "function",
            "function": {"name": tool["function"]["name"], "arguments": json.dumps(args, ensure_ascii=False)},
        }
        fits = left >= len(_call_tokens(call))
        c.tool_calls, c.finish_reason = ([call], "tool_calls") if fits else ([], "length")
        return
    if results:
        answer = " ".join(f"Going by {n}: {_said(r)}." for n, r in results) + f" That answers “{ask}”."
    elif greeting:
        answer = "Hi! I'm Inkling. What would you like to work on?"
    else:
        answer = (
            f"Here is my answer to “{ask}”: after thinking it through, the plain reading is the right one, and "
            "I'd start there. Tell me more about what you need and I can go deeper."
        )
    c.content, _ = _budget(tokens(answer), left)
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
    tools, choice, bad = _tools(body)
    if bad is not None:
        return _error(400, bad, "BadRequestError")
    digest = hashlib.sha256(json.dumps([server, msgs, body.get("temperature")], sort_keys=True).encode()).hexdigest()
    rng = random.Random(f"chat:{seed}:{digest}")
    c = Completion(model, has_reasoning=server == "inkling")
    c.prompt_tokens = _prompt_tokens(msgs, tools)
    if server == "finance":
        _finance(body, msgs, room, rng, c)
    elif server == "inkling":
        _inkling(msgs, room, rng, c, tools, choice)
    else:
        _kimi(msgs, room, c)
    return c


def whole(c: Completion, cid: str, created: int) -> dict:
    """The non-streamed answer (``chat.completion``)."""
    text = "".join(c.content).lstrip()
    message: dict = {"role": "assistant", "content": None if c.tool_calls and not text else text}
    message["tool_calls"] = c.tool_calls
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
    for i, call in enumerate(c.tool_calls):  # as vLLM streams a call: its id and name, then its arguments in parts
        name, *args = _call_tokens(call)
        head = {"id": call["id"], "type": "function", "function": {"name": name, "arguments": ""}}
        out.append({"tool_calls": [{"index": i, **head}]})
        out += [{"tool_calls": [{"index": i, "function": {"arguments": a}}]} for a in args]
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
