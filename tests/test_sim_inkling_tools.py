"""Inkling through the guide's own client: ``kubectl port-forward svc/inkling 8000:8000`` and curl. Tool calling
works the OpenAI way (``tools`` offered, a question one fits: ``tool_calls`` and ``finish_reason: tool_calls``;
the tool's result sent back: an answer from it), whole and streamed; ``usage`` counts the prompt and exactly
what the answer returns.
"""

from __future__ import annotations

import json

import pytest

from ncui.sim.kube.inference import tokens

from .test_kube_portforward import _curl, _forward, _stop

pytestmark = pytest.mark.peers("curl")
MODEL = "thinkingmachines/Inkling"
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather in a given location",
        "parameters": {
            "type": "object",
            "properties": {
                "location": {"type": "string", "description": "The city, e.g. Paris"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            },
            "required": ["location"],
        },
    },
}
ASK = {"role": "user", "content": "What's the weather like in Paris today?"}


def _returned(msg: dict) -> int:
    """The tokens of what a message returns: its thinking, its answer, each call's name and arguments."""
    calls = [
        t for c in msg.get("tool_calls") or [] for t in [c["function"]["name"], *tokens(c["function"]["arguments"])]
    ]
    return len(tokens(msg.get("reasoning_content") or "")) + len(tokens(msg.get("content") or "")) + len(calls)


def test_tool_calls_the_openai_way_and_usage_counts_what_is_returned(kube_factory):
    k = kube_factory("k8s-market")
    k.set_bid(5.0)
    k.kubectl("apply", "-f", k.file("inkling-weights-to-shared-nvidia.yaml"))
    k.kubectl("apply", "-f", k.file("inkling-serve-nvidia.yaml"))
    k.advance_until(
        lambda: any(n.startswith("inkling-") and "weights" not in n and v == "Running 1/1"
                    for n, v in k.pod_statuses().items()),
        step=120, what="the engine READY 1/1",
    )  # fmt: skip
    w, port = _forward(k, "svc/inkling")

    def chat(body: dict, *more: str) -> dict:
        r = _curl(port, {"model": MODEL, "max_tokens": 1024, **body}, *more)
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout)

    # the guide's request: a short answer reads tens of tokens, what was returned, not most of max_tokens
    hi = chat({"messages": [{"role": "user", "content": "hi"}]})
    msg = hi["choices"][0]["message"]
    assert msg["content"] and msg["reasoning_content"] and msg["tool_calls"] == []
    assert hi["usage"]["completion_tokens"] == _returned(msg) < 60, hi["usage"]
    longer = chat({"messages": [{"role": "user", "content": "hi there, how are you doing today"}]})
    assert longer["usage"]["prompt_tokens"] - hi["usage"]["prompt_tokens"] == 6  # the prompt's own words
    offered = chat({"messages": [{"role": "user", "content": "hi"}], "tools": [WEATHER]})
    assert offered["usage"]["prompt_tokens"] > hi["usage"]["prompt_tokens"] + 20  # the tools are prompt too
    assert offered["choices"][0]["message"]["tool_calls"] == []  # a greeting calls for no tool
    assert offered["choices"][0]["finish_reason"] == "stop"

    # a question the tool fits: the call, its id, its name, its JSON arguments read off the question
    asked = chat({"messages": [ASK], "tools": [WEATHER]})
    choice = asked["choices"][0]
    assert choice["finish_reason"] == "tool_calls" and choice["message"]["content"] is None
    (call,) = choice["message"]["tool_calls"]
    assert call["id"] and call["type"] == "function" and call["function"]["name"] == "get_weather"
    assert json.loads(call["function"]["arguments"]) == {"location": "Paris"}
    assert asked["usage"]["completion_tokens"] == _returned(choice["message"])

    # the tool's result sent back: the answer uses it, and calls nothing more
    result = {"temperature": 18, "unit": "celsius", "conditions": "light rain"}
    follow = [ASK, {"role": "assistant", "content": None, "tool_calls": [call]},
              {"role": "tool", "tool_call_id": call["id"], "content": json.dumps(result)}]  # fmt: skip
    answered = chat({"messages": follow, "tools": [WEATHER]})
    choice = answered["choices"][0]
    assert choice["finish_reason"] == "stop" and choice["message"]["tool_calls"] == []
    assert "18" in choice["message"]["content"] and "light rain" in choice["message"]["content"]
    assert answered["usage"]["prompt_tokens"] > asked["usage"]["prompt_tokens"]  # the call and its result count

    # tool_choice: none answers directly; a named function is called; a name not offered is refused
    assert chat({"messages": [ASK], "tools": [WEATHER], "tool_choice": "none"})["choices"][0]["message"]["content"]
    named = {"type": "function", "function": {"name": "get_weather"}}
    hello = {"role": "user", "content": "hi"}
    assert chat({"messages": [hello], "tools": [WEATHER], "tool_choice": named})["choices"][0]["finish_reason"] == (
        "tool_calls"
    )
    bad = chat({"messages": [ASK], "tools": [WEATHER], "tool_choice": {"type": "function", "function": {"name": "x"}}})
    assert bad["code"] == 400 and "not in tools" in bad["message"]

    # streamed: the call's id and name first, then its arguments in parts; the finish says tool_calls
    body = {"messages": [ASK], "tools": [WEATHER], "stream": True, "stream_options": {"include_usage": True}}
    r = _curl(port, {"model": MODEL, "max_tokens": 1024, **body}, "-N")
    events = [json.loads(x[6:]) for x in r.stdout.splitlines() if x.startswith("data: {")]
    parts = [c["choices"][0]["delta"]["tool_calls"][0] for c in events if c["choices"] and "tool_calls" in
             c["choices"][0]["delta"]]  # fmt: skip
    assert parts[0]["id"] and parts[0]["function"]["name"] == "get_weather" and len(parts) > 2
    assert json.loads("".join(p["function"].get("arguments", "") for p in parts)) == {"location": "Paris"}
    assert [c["choices"][0]["finish_reason"] for c in events if c["choices"]][-1] == "tool_calls"
    deltas = sum(
        1 for c in events if c["choices"] and set(c["choices"][0]["delta"]) & {"tool_calls", "reasoning_content"}
    )
    assert events[-1]["usage"]["completion_tokens"] == deltas  # one token, one chunk
    assert _stop(w) == 0, w.err
