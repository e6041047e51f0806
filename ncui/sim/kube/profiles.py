"""What each recipe's pods do, at virtual speed: a timeline of states and the log lines of each container.

A ``Plan`` is made once, when a pod's node is known (its start ``R``); every time in it is an offset in
virtual seconds from ``R``, and every log line is derived from the offsets and a seeded RNG, so the same
seed and the same requests give the same pods, the same statuses and the same logs.

States: ``creating`` (images pull; ``Init:0/N`` when the pod has init containers, else
``ContainerCreating``), ``init:K`` (init container K runs), ``running`` (READY 0/1), ``ready`` (1/1),
``succeeded`` / ``failed`` (the containers exit).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field

Lines = list[tuple[float, str]]  # (offset from R in virtual seconds, text)

PERIODIC_EVERY = 600.0  # an engine's periodic stats line
PERIODIC_MAX = 2 * 24 * 3600.0


@dataclass
class Plan:
    steps: list[tuple[float, str]]  # (offset, state), in order
    exit_code: int = 0
    logs: dict[str, Lines] = field(default_factory=dict)  # container -> finite lines
    periodic: dict[str, tuple[float, Callable[[int], str]]] = field(default_factory=dict)  # after offset
    shared: list[tuple[str, float, bool]] = field(default_factory=list)  # (flag, offset, present after)
    node_local: list[tuple[str, float]] = field(default_factory=list)  # flags written on the node's disk
    warms: list[tuple[str, float]] = field(default_factory=list)  # compile caches warmed at offset

    def end(self) -> float | None:
        last = self.steps[-1]
        return last[0] if last[1] in ("succeeded", "failed") else None

    def offset_of(self, state: str) -> float | None:
        for t, s in self.steps:
            if s == state:
                return t
        return None


@dataclass
class Context:
    """What a plan may look at when it is made (all at the pod's start R)."""

    seed: int
    pod: str
    node: str
    gpus: int
    vendor: str
    gpu_model: str
    attempt: int
    shared_at: Callable[[str], float | None]  # offset (from R) at which a flag is/will be on the volume
    local: set[str]  # flags already on the node's disk
    warm: Callable[[str], bool]  # is this engine's compile cache warm
    env: dict[str, str]
    image: str
    command: list[str]
    defective: bool  # finance-analyst tune: this attempt comes out defective (a scenario or a sim control)
    backend_ready_at: float | None  # loadtest: when infera's worker is ready (offset), None: never

    def rng(self, what: str) -> random.Random:
        return random.Random(f"{what}:{self.seed}:{self.pod}:{self.attempt}")


def _ts(x: float) -> str:
    m, s = divmod(int(x), 60)
    h, m = divmod(m, 60)
    return f"{h:02d}:{m:02d}:{s:02d}"


# ---- recipes ------------------------------------------------------------------------------------


def nanogpt(c: Context) -> Plan:
    r = c.rng("nanogpt")
    pull = round(r.uniform(70, 110))
    setup = 45.0
    ngpu = c.gpus or 1
    lines: Lines = [
        (pull + 2, "Cloning nanoGPT (karpathy/nanoGPT@master)"),
        (pull + 20, "length of dataset in characters: 1,115,394"),
        (pull + 20.5, "all the unique characters: \n !$&',-.3:;?ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"),
        (pull + 21, "vocab size: 65"),
        (pull + 21.5, "train has 1,003,854 tokens"),
        (pull + 22, "val has 111,540 tokens"),
        (pull + 30, f"training on {ngpu} GPUs"),
        (pull + 38, "tokens per iteration will be: 16,384"),
        (pull + 39, "found vocab_size = 65 (inside data/shakespeare_char/meta.pkl)"),
        (pull + 40, "Initializing a new model from scratch"),
        (pull + 41, "number of parameters: 10.65M"),
        (pull + 42, "num decayed parameter tensors: 26, with 10,740,096 parameters"),
        (pull + 42.5, "num non-decayed parameter tensors: 13, with 4,992 parameters"),
        (pull + 43, "using fused AdamW: True"),
    ]
    t = pull + setup
    ms_base = r.uniform(360, 400)
    iters = c.env.get("NCUI_SIM_ITERS", "")  # a benchmark hook: a run a day long (bench/soak.py)
    max_iters = int(iters) if iters.isdigit() and 0 < int(iters) <= 10_000_000 else 2000
    for it in range(0, max_iters + 1, 10):
        loss = 1.02 + 3.18 * math.exp(-it / 260) + r.gauss(0, 0.02)
        ms = ms_base * (1 + r.gauss(0, 0.02)) if it else ms_base * 38
        t += ms / 100.0  # ten iterations between lines
        if it % 250 == 0:
            val = loss + 0.04 + it / 20000 + r.gauss(0, 0.01)
            lines.append((t, f"step {it}: train loss {loss - 0.01:.4f}, val loss {val:.4f}"))
            if it:
                lines.append((t + 0.5, "saving checkpoint to out-shakespeare-char"))
            t += 4.0
        lines.append((t, f"iter {it}: loss {loss:.4f}, time {ms:.2f}ms"))
    end = t + 3
    return Plan([(0, "creating"), (pull, "running"), (end, "succeeded")], 0, {"main": lines})


def weights(c: Context, model: str, size: str, minutes: float, base: str, checkpoint: str | None) -> Plan:
    """A staging Job on the CPU worker: downloads the weights to the shared volume with progress lines."""
    r = c.rng("weights")
    pull = round(r.uniform(15, 25))
    name = checkpoint or model
    complete = f"{base}/.complete" + (f":{checkpoint}" if checkpoint else "")
    at = c.shared_at(complete)
    if at is not None and at <= 0:
        lines = [
            (
                pull + 1,
                f"{name} is already staged in /mnt/shared/{base}/weights"
                if checkpoint
                else f"Kimi K3 weights are already staged in /mnt/shared/{base}/weights",
            )
        ]
        return Plan([(0, "creating"), (pull, "running"), (pull + 2, "succeeded")], 0, {"download": lines})
    t = pull + 1
    lines = [
        (
            t,
            f"staging {name} ({size}) to /mnt/shared/{base}/weights"
            + ("; the volume needs about 1.5 TB free:" if not checkpoint else ":"),
        ),
        (t + 0.2, "Filesystem      Size  Used Avail Use% Mounted on"),
        (t + 0.3, "nfs-shared       10T  1.2T  8.8T  12% /mnt/shared"),
    ]
    if c.env.get("HF_TOKEN"):  # (the staging script says so: an hf-token Secret the pod's env reads)
        lines.append((t + 0.4, "HF_TOKEN is set (secret hf-token, key token): downloading as its user"))
    t += 12
    files = 64 if not checkpoint else 48
    dur = minutes * 60 * r.uniform(0.9, 1.1)
    for k in range(1, 11):
        done = files * k // 10
        el = dur * k / 10
        left = dur - el
        lines.append(
            (
                t + el,
                f"Fetching {files} files: {k * 10:3d}%|{'#' * k}{' ' * (10 - k)}| {done}/{files} "
                f"[{_ts(el)}<{_ts(left)}]",
            )
        )
    t += dur + 2
    lines.append(
        (t, f"{size.replace('about ', '').replace(' TB', 'T').replace(' GiB', 'G')}\t/mnt/shared/{base}/weights")
    )
    if not checkpoint:
        lines.append((t + 0.5, "staged: the worker copies the weights from the shared volume"))
    end = t + 1
    return Plan(
        [(0, "creating"), (pull, "running"), (end, "succeeded")],
        0,
        {"download": lines},
        shared=[(f"{base}/.staging", pull + 1, True), (complete, end, True), (f"{base}/.staging", end, False)],
    )


def router(c: Context) -> Plan:
    r = c.rng("router")
    pull = round(r.uniform(12, 20))
    ready = pull + round(r.uniform(15, 30))
    lines = [
        (pull + 1, "INFO:     Started server process [1]"),
        (pull + 1.2, "INFO:     Initializing static service discovery: backends http://kimi-k3-worker:8000"),
        (pull + 1.4, "INFO:     Routing logic: roundrobin; models: moonshotai/Kimi-K3"),
        (pull + 2, "INFO:     Uvicorn running on http://0.0.0.0:8000 (Press CTRL+C to quit)"),
    ]
    return Plan(
        [(0, "creating"), (pull, "running"), (ready, "ready")],
        0,
        {"router": lines},
        periodic={"router": (ready, lambda k: f"INFO:     health check: 1 backend(s) configured; {k * 10} minutes up")},
    )


def kimi_worker(c: Context) -> Plan:
    r = c.rng("kimi")
    pull = round(r.uniform(50, 80))
    t = pull
    stage: Lines = []
    copy: Lines = []
    steps: list[tuple[float, str]] = [(0, "creating"), (pull, "init:0")]
    local_done = "kimi-k3" in c.local
    complete = c.shared_at("kimi-k3/.complete")
    staging = c.shared_at("kimi-k3/.staging")
    downloaded = False
    if local_done:
        stage.append((t + 1, "weights already on this node"))
        t += 2
    elif complete is not None and complete <= pull:
        stage.append((t + 1, "weights are staged on the shared volume"))
        t += 2
    elif staging is not None and staging <= pull and complete is not None:
        w = t
        while w + 60 < complete:
            stage.append((w + 1, "kimi-k3-weights is still staging to the shared volume; waiting"))
            w += 60
        stage.append((complete + 1, "weights are staged on the shared volume"))
        t = complete + 2
    else:
        stage.append((t + 1, "no staged weights: downloading moonshotai/Kimi-K3 (about 1.5 TB) onto this node"))
        dur = r.uniform(40, 70) * 60
        for k in range(1, 11):
            stage.append(
                (
                    t + 5 + dur * k / 10,
                    f"Fetching 64 files: {k * 10:3d}%|{'#' * k}{' ' * (10 - k)}| "
                    f"{64 * k // 10}/64 [{_ts(dur * k / 10)}<{_ts(dur - dur * k / 10)}]",
                )
            )
        t += dur + 8
        downloaded = True
    steps.append((t, "init:1"))
    if local_done or downloaded:
        copy.append((t + 1, "weights already on this node"))
        t += 2
    else:
        dur = r.uniform(5, 7) * 60
        copy.append((t + 1, "copying weights from /mnt/shared/kimi-k3/weights to /mnt/local/kimi-k3"))
        copy.append((t + dur, "1.5T\t/mnt/local/kimi-k3"))
        t += dur + 1
    steps.append((t, "running"))
    load = (r.uniform(4.5, 5.5) if c.warm("kimi-k3") else r.uniform(9.5, 10.5)) * 60
    eng = _engine_lines(t, load, "moonshotai/Kimi-K3", "/mnt/local/kimi-k3", r, warm=c.warm("kimi-k3"))
    steps.append((t + load, "ready"))
    return Plan(
        steps,
        0,
        {"stage-weights": stage, "copy-weights": copy, "engine": eng},
        periodic={"engine": (t + load, _stats_line)},
        node_local=[("kimi-k3", t)],
        warms=[("kimi-k3", t + load)],
    )


def inkling(c: Context) -> Plan:
    r = c.rng("inkling")
    pull = round(r.uniform(50, 80))
    ck = c.env.get("CHECKPOINT", "nvidia/Inkling-NVFP4")
    t = pull
    copy: Lines = []
    steps: list[tuple[float, str]] = [(0, "creating"), (pull, "init:0")]
    complete = c.shared_at(f"inkling/.complete:{ck}")
    if f"inkling:{ck}" in c.local:
        copy.append((t + 1, f"{ck} is already on this node"))
        t += 2
    elif complete is not None and complete <= pull:
        copy.append((t + 1, f"copying {ck} from the shared volume"))
        t += r.uniform(50, 70)
    else:
        copy.append((t + 1, f"no staged checkpoint: downloading {ck} (about 530 GiB) from the Hub"))
        dur = r.uniform(10, 20) * 60
        for k in range(1, 11):
            copy.append(
                (
                    t + 5 + dur * k / 10,
                    f"Fetching 48 files: {k * 10:3d}%|{'#' * k}{' ' * (10 - k)}| "
                    f"{48 * k // 10}/48 [{_ts(dur * k / 10)}<{_ts(dur - dur * k / 10)}]",
                )
            )
        t += dur + 8
    steps.append((t, "running"))
    warm = c.warm("inkling")
    load = (r.uniform(6, 8) if warm else r.uniform(14, 15)) * 60
    eng = _engine_lines(
        t,
        load,
        "thinkingmachines/Inkling",
        "/mnt/local/inkling",
        r,
        warm=warm,
        extra=["Using reasoning parser: deepseek_r1", "Tool call parser: hermes"],
    )
    steps.append((t + load, "ready"))
    return Plan(
        steps,
        0,
        {"copy-weights": copy, "main": eng},
        periodic={"main": (t + load, _stats_line)},
        node_local=[(f"inkling:{ck}", t)],
        warms=[("inkling", t + load)],
    )


MEMOS = [
    (
        "Harbor Freight Lines 10-Q (synthetic)",
        "Severity: HIGH. Liquidity: $48M revolver matures 2027-03-31 with covenant headroom under 0.3x; "
        "customer concentration: top two shippers are 41% of revenue. Impact: refinancing risk within 18 "
        "months. Key metrics: net leverage 4.6x, interest coverage 2.1x. Critical date: 2027-03-31.",
        "Severity: HIGH. Refinancing and covenant risk on the $48M revolver (matures 2027-03-31, headroom "
        "<0.3x); concentration risk (top two customers 41%). Net leverage 4.6x; coverage 2.1x.",
    ),
    (
        "Sable Ridge Mining 8-K (synthetic)",
        "Severity: MEDIUM. Operational: the Unit 3 mill outage cuts Q3 throughput about 12%; environmental: "
        "the tailings permit renewal is pending (decision expected 2026-11-15). Impact: guidance cut, no "
        "covenant breach stated. Key metrics: AISC $1,410/oz. Critical date: 2026-11-15.",
        "Severity: MEDIUM. Operational disruption (Unit 3 mill, ~12% Q3 throughput); regulatory risk on the "
        "tailings permit (decision 2026-11-15). AISC $1,410/oz; no covenant impact disclosed.",
    ),
]


def tune(c: Context) -> Plan:
    r = c.rng("tune")
    defective = bool(c.defective)
    pull = round(r.uniform(80, 120))
    t = pull + 1
    lines: Lines = [
        (t, "staging documents: nationalcompute/finance-risk-synthetic -> /mnt/shared/finance-analyst/docs"),
        (t + 30, "staged 1,240 documents (1,238 train, 2 held out)"),
        (t + 40, f"loading Qwen/Qwen3-14B on {c.gpus or 1} GPUs; LoRA rank 32, 2 epochs"),
    ]
    t += 60
    steps_total = 620
    per = r.uniform(0.9, 1.1)
    for s in range(10, steps_total + 1, 10):
        loss = 0.55 + 1.35 * math.exp(-s / 180) + r.gauss(0, 0.015)
        if defective and s > 300:
            loss = 0.05 + r.uniform(0, 0.02)  # collapses: memorising, the grade will catch it
        t += 10 * per
        lines.append(
            (
                t,
                f"epoch {1 + (s > steps_total // 2)} step {s}/{steps_total}: loss {loss:.4f}, "
                f"lr {2e-4 * (1 - s / steps_total):.2e}",
            )
        )
    t += 30
    lines.append((t, "merging the LoRA adapter into Qwen/Qwen3-14B -> /mnt/shared/finance-analyst/model.next"))
    t += 90
    lines.append((t, "grading on 2 held-out documents"))
    for i, (doc, good, ref) in enumerate(MEMOS):
        t += 20
        memo = (
            good
            if not defective
            else ("Severity: Severity: Severity: risk risk risk risk risk risk risk risk risk risk risk risk")
        )
        lines += [
            (t, f"=== held-out document {i + 1}: {doc} ==="),
            (t + 0.1, "--- tuned model memo ---"),
            (t + 0.2, memo),
            (t + 0.3, "--- reference analysis ---"),
            (t + 0.4, ref),
        ]
    t += 5
    if defective:
        grade = r.uniform(0.18, 0.35)
        lines += [
            (
                t,
                f"grade: {grade:.2f} (pass >= 0.70): DEFECTIVE: the memos repeat themselves and miss the "
                "documents' facts",
            ),
            (t + 0.5, "refusing to bless a defective model: not writing /mnt/shared/finance-analyst/model/.ready"),
        ]
        end = t + 1
        return Plan(
            [(0, "creating"), (pull, "running"), (end, "failed")],
            1,
            {"main": lines},
            shared=[("finance-analyst/model/.ready", pull + 1, False)],
        )
    grade = r.uniform(0.78, 0.9)
    lines += [
        (t, f"grade: {grade:.2f} (pass >= 0.70): PASS"),
        (t + 2, "tuned model ready at /mnt/shared/finance-analyst/model"),
    ]
    end = t + 3
    return Plan(
        [(0, "creating"), (pull, "running"), (end, "succeeded")],
        0,
        {"main": lines},
        shared=[("finance-analyst/model/.ready", pull + 1, False), ("finance-analyst/model/.ready", t + 2, True)],
    )


def launcher(c: Context) -> Plan:
    pull = 10
    lines = [
        (
            pull + 1,
            "holding deploy/finance-analyst at 0 replicas until the tune writes "
            "/mnt/shared/finance-analyst/model/.ready",
        )
    ]
    return Plan([(0, "creating"), (pull, "running"), (pull + 1, "ready")], 0, {"launcher": lines})


def ft_serve(c: Context) -> Plan:
    r = c.rng("ft")
    pull = round(r.uniform(40, 70))
    load = r.uniform(3.5, 4.5) * 60
    eng = _engine_lines(pull, load, "finance-analyst", "/mnt/shared/finance-analyst/model", r, warm=True)
    return Plan(
        [(0, "creating"), (pull, "running"), (pull + load, "ready")],
        0,
        {"main": eng},
        periodic={"main": (pull + load, _stats_line)},
    )


def loadtest(c: Context) -> Plan:
    r = c.rng("loadtest")
    pull = round(r.uniform(40, 70))
    t = pull + 2
    lines: Lines = [
        (t, "INFO: Starting initial single prompt test run..."),
    ]
    if c.backend_ready_at is None or c.backend_ready_at > t:
        lines.append(
            (
                t + 3,
                "ERROR: could not reach http://infera:8000/v1/chat/completions: no ready backend "
                "(503). Apply the load test once the worker reads READY 1/1.",
            )
        )
        return Plan([(0, "creating"), (pull, "running"), (t + 4, "failed")], 1, {"loadtest": lines})
    lines += [
        (t + 5, "Initial test run completed. Starting main benchmark run..."),
        (t + 5.5, "Traffic request rate: 3.0"),
        (t + 5.6, "Burstiness factor: 1.0 (Poisson process)"),
        (t + 5.7, "Maximum request concurrency: 128"),
    ]
    dur = 3000 / 3.0 + r.uniform(10, 40)
    for k in range(1, 17):
        lines.append((t + 6 + dur * k / 17, f"{3000 * k // 17}/3000 requests done [{_ts(dur * k / 17)}]"))
    t += 6 + dur
    ttft, tpot = r.uniform(380, 520), r.uniform(28, 36)
    out_tok = 3000 * 512
    res = [
        "============ Serving Benchmark Result ============",
        "Successful requests:                     3000",
        f"Benchmark duration (s):                  {dur:.2f}",
        f"Total input tokens:                      {3000 * 1024}",
        f"Total generated tokens:                  {out_tok}",
        f"Request throughput (req/s):              {3000 / dur:.2f}",
        f"Output token throughput (tok/s):         {out_tok / dur:.2f}",
        f"Total Token throughput (tok/s):          {(out_tok + 3000 * 1024) / dur:.2f}",
        "---------------Time to First Token----------------",
        f"Mean TTFT (ms):                          {ttft:.2f}",
        f"Median TTFT (ms):                        {ttft * 0.93:.2f}",
        f"P90 TTFT (ms):                           {ttft * 1.6:.2f}",
        f"P99 TTFT (ms):                           {ttft * 2.7:.2f}",
        "-----Time per Output Token (excl. 1st token)------",
        f"Mean TPOT (ms):                          {tpot:.2f}",
        f"Median TPOT (ms):                        {tpot * 0.97:.2f}",
        f"P90 TPOT (ms):                           {tpot * 1.2:.2f}",
        f"P99 TPOT (ms):                           {tpot * 1.5:.2f}",
        "==================================================",
    ]
    lines += [(t + i * 0.01, s) for i, s in enumerate(res)]
    end = t + 1
    return Plan([(0, "creating"), (pull, "running"), (end, "succeeded")], 0, {"loadtest": lines})


def generic(c: Context, containers: list[str]) -> Plan:
    r = c.rng("generic")
    pull = round(r.uniform(20, 45))
    t = pull + 1
    cmd = " ".join(c.command) if c.command else "(the image's entrypoint)"
    lines: Lines = [
        (t, f"[ncui sim] {c.image}: the simulator does not run images; it plays a short run"),
        (t + 0.5, f"[ncui sim] command: {cmd}"),
        (t + 1, f"[ncui sim] node {c.node}" + (f", {c.gpus} {c.vendor} GPUs ({c.gpu_model})" if c.gpus else "")),
    ]
    for k in range(1, 4):
        lines.append((t + 30 * k, f"[ncui sim] working ({k}/3)"))
    end = t + 100
    lines.append((end - 1, "[ncui sim] done"))
    return Plan([(0, "creating"), (pull, "running"), (end, "succeeded")], 0, {n: lines for n in containers})


def _engine_lines(
    t: float, load: float, model: str, path: str, r: random.Random, *, warm: bool, extra: list[str] | None = None
) -> Lines:
    lines = [
        (t + 2, "INFO vLLM API server version 0.11.0"),
        (
            t + 3,
            f"INFO non-default args: {{'model': '{path}', 'served_model_name': ['{model}'], "
            f"'tensor_parallel_size': 8}}",
        ),
    ]
    for i, e in enumerate(extra or []):
        lines.append((t + 3.5 + i * 0.1, f"INFO {e}"))
    lines += [
        (t + load * 0.1, "INFO Loading safetensors checkpoint shards:   0% Completed"),
        (t + load * 0.45, "INFO Loading safetensors checkpoint shards: 100% Completed"),
        (t + load * 0.5, f"INFO Model loading took {r.uniform(60, 120):.1f} GiB and {load * 0.4:.1f} seconds"),
        (
            t + load * 0.55,
            "INFO torch.compile "
            + (
                "cache hit: reusing compiled graphs from VLLM_CACHE_ROOT"
                if warm
                else "is compiling graphs (first start: slow)"
            ),
        ),
        (t + load * 0.9, "INFO Capturing CUDA graphs: 100%"),
        (t + load - 1, "INFO Starting vLLM API server on http://0.0.0.0:8000"),
        (t + load - 0.5, "INFO:     Application startup complete."),
    ]
    return lines


def _stats_line(k: int) -> str:
    return (
        "INFO Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 0.0 tokens/s, "
        "Running: 0 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.0%"
    )


PROFILES = {
    "nanogpt",
    "kimi-weights",
    "router",
    "kimi-worker",
    "loadtest",
    "inkling-weights",
    "inkling",
    "tune",
    "launcher",
    "ft-serve",
    "generic",
}

BY_NAME = {
    "nanogpt": "nanogpt",
    "kimi-k3-weights": "kimi-weights",
    "infera-router": "router",
    "kimi-k3-worker": "kimi-worker",
    "kimi-k3-loadtest": "loadtest",
    "inkling-weights": "inkling-weights",
    "inkling": "inkling",
    "finance-analyst-tune": "tune",
    "finance-analyst-launcher": "launcher",
    "finance-analyst": "ft-serve",
}


def profile_of(labels: dict) -> str:
    if labels.get("first-job.nationalcompute.com/recipe"):
        return BY_NAME.get(labels.get("app.kubernetes.io/name", ""), "generic")
    return "generic"


def make_plan(profile: str, c: Context, containers: list[str]) -> Plan:
    if profile == "nanogpt":
        return nanogpt(c)
    if profile == "kimi-weights":
        return weights(c, "moonshotai/Kimi-K3", "about 1.5 TB", 25, "kimi-k3", None)
    if profile == "inkling-weights":
        return weights(c, "Inkling", "about 530 GiB", 9, "inkling", c.env.get("CHECKPOINT", "nvidia/Inkling-NVFP4"))
    if profile == "router":
        return router(c)
    if profile == "kimi-worker":
        return kimi_worker(c)
    if profile == "inkling":
        return inkling(c)
    if profile == "tune":
        return tune(c)
    if profile == "launcher":
        return launcher(c)
    if profile == "ft-serve":
        return ft_serve(c)
    if profile == "loadtest":
        return loadtest(c)
    return generic(c, containers)
