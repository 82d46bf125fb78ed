#!/usr/bin/env python3
"""Measures whole training steps in eager PyTorch on this machine's GPU, for parasim's runs files.

    python3 scripts/gpu_torch_runs.py -o runs.json [--only NAME,...]

Each case is a model parasim can express (a zoo name or a transformer's hyperparameters) trained
on synthetic data already on the GPU (no data loading): forward, loss, backward and the optimizer
step, as a plain eager training loop runs them. The step time is CUDA-event time over windows of
back-to-back steps (the host runs ahead as it does in training; AMP's GradScaler synchronises once
a step, as it does in training), the median of the windows. Also recorded: the parameter count,
the peak of allocated memory, and the software versions. Nothing here is estimated.
"""
import argparse
import json
import math
import platform
import statistics
import subprocess
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


# ----------------------------------------------------------------------------- models
class GptBlock(nn.Module):
    """GPT-2 layout: pre-LayerNorm, fused QKV with biases, causal SDPA, GELU(tanh) MLP."""

    def __init__(self, h, heads, ffn):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(h)
        self.qkv = nn.Linear(h, 3 * h)
        self.proj = nn.Linear(h, h)
        self.ln2 = nn.LayerNorm(h)
        self.fc1 = nn.Linear(h, ffn)
        self.fc2 = nn.Linear(ffn, h)

    def forward(self, x):
        b, s, h = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(h, dim=2)
        q, k, v = (t.view(b, s, self.heads, h // self.heads).transpose(1, 2) for t in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, s, h))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x)), approximate="tanh"))


class Gpt(nn.Module):
    """Learned positions, tied input/output embedding, final LayerNorm."""

    def __init__(self, layers, h, heads, seq, vocab, ffn):
        super().__init__()
        self.wte = nn.Embedding(vocab, h)
        self.wpe = nn.Embedding(seq, h)
        self.blocks = nn.ModuleList(GptBlock(h, heads, ffn) for _ in range(layers))
        self.ln_f = nn.LayerNorm(h)
        self.head = nn.Linear(h, vocab, bias=False)
        self.head.weight = self.wte.weight

    def forward(self, idx):
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1], device=idx.device))
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.ln_f(x))


def rope(x, cos, sin):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2 :]
    cos, sin = cos.to(x.dtype), sin.to(x.dtype)  # stays in autocast's dtype, as q and k are
    return x * cos + torch.cat((-x2, x1), dim=-1) * sin


class LlamaBlock(nn.Module):
    """Llama layout: RMSNorm, no biases, rotary positions, grouped-query attention, SwiGLU."""

    def __init__(self, h, heads, kv_heads, ffn):
        super().__init__()
        self.heads, self.kv_heads, self.d = heads, kv_heads, h // heads
        self.n1 = nn.RMSNorm(h)
        self.q = nn.Linear(h, h, bias=False)
        self.kv = nn.Linear(h, 2 * kv_heads * self.d, bias=False)
        self.o = nn.Linear(h, h, bias=False)
        self.n2 = nn.RMSNorm(h)
        self.gate_up = nn.Linear(h, 2 * ffn, bias=False)
        self.down = nn.Linear(ffn, h, bias=False)

    def forward(self, x, cos, sin):
        b, s, h = x.shape
        y = self.n1(x)
        q = self.q(y).view(b, s, self.heads, self.d).transpose(1, 2)
        k, v = self.kv(y).view(b, s, 2, self.kv_heads, self.d).unbind(2)
        k, v = k.transpose(1, 2), v.transpose(1, 2)
        a = F.scaled_dot_product_attention(rope(q, cos, sin), rope(k, cos, sin), v, is_causal=True, enable_gqa=True)
        x = x + self.o(a.transpose(1, 2).reshape(b, s, h))
        g, u = self.gate_up(self.n2(x)).chunk(2, dim=-1)
        return x + self.down(F.silu(g) * u)


class Llama(nn.Module):
    def __init__(self, layers, h, heads, kv_heads, seq, vocab, ffn):
        super().__init__()
        self.emb = nn.Embedding(vocab, h)
        self.blocks = nn.ModuleList(LlamaBlock(h, heads, kv_heads, ffn) for _ in range(layers))
        self.norm = nn.RMSNorm(h)
        self.head = nn.Linear(h, vocab, bias=False)
        d = h // heads
        inv = 1.0 / (10000.0 ** (torch.arange(0, d, 2).float() / d))
        ang = torch.outer(torch.arange(seq).float(), inv)
        self.register_buffer("cos", torch.cat((ang, ang), dim=-1).cos(), persistent=False)
        self.register_buffer("sin", torch.cat((ang, ang), dim=-1).sin(), persistent=False)

    def forward(self, idx):
        x = self.emb(idx)
        for blk in self.blocks:
            x = blk(x, self.cos, self.sin)
        return self.head(self.norm(x))


# ----------------------------------------------------------------------------- cases
def transformer_case(name, model, shape, batch, dtype, vocab, seq, fused=False):
    # foreach is torch.optim's default on CUDA; fused=True is one multi-tensor kernel
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.1, fused=fused or None)
    idx = torch.randint(0, vocab, (batch, seq), device="cuda")
    tgt = torch.randint(0, vocab, (batch, seq), device="cuda")

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=dtype):
            logits = model(idx)
        loss = F.cross_entropy(logits.float().view(-1, vocab), tgt.view(-1))
        loss.backward()
        opt.step()

    return step, {"model": shape, "micro_batch": batch, "seq_len": seq,
                  "optimizer": "AdamW (torch.optim, " + ("fused" if fused else "foreach") + ")"}


def gpt(layers, h, heads, batch, seq=1024, vocab=50257, fused=False):
    def make(dtype):
        m = Gpt(layers, h, heads, seq, vocab, 4 * h).cuda()
        shape = {"layers": layers, "hidden": h, "heads": heads, "seq_len": seq, "vocab": vocab, "ffn": 4 * h,
                 "dropout": 0.0, "arch": "GPT-2 layout (LayerNorm, GELU tanh, learned positions, tied embeddings, linear biases)"}
        return transformer_case("gpt", m, shape, batch, dtype, vocab, seq, fused), m
    return make


def llama(layers, h, heads, kv_heads, ffn, batch, seq=2048, vocab=32000):
    def make(dtype):
        m = Llama(layers, h, heads, kv_heads, seq, vocab, ffn).cuda()
        shape = {"layers": layers, "hidden": h, "heads": heads, "kv_heads": kv_heads, "seq_len": seq, "vocab": vocab,
                 "ffn": ffn, "dropout": 0.0,
                 "arch": "Llama layout (RMSNorm, SwiGLU, rotary positions, grouped-query attention, untied embeddings, no biases)"}
        return transformer_case("llama", m, shape, batch, dtype, vocab, seq), m
    return make


def resnet50(batch):
    def make(dtype):
        import torchvision
        m = torchvision.models.resnet50().cuda().to(memory_format=torch.channels_last)
        opt = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.875, weight_decay=3.0517578125e-05)
        scaler = torch.amp.GradScaler("cuda", enabled=dtype == torch.float16)
        x = torch.randn(batch, 3, 224, 224, device="cuda").to(memory_format=torch.channels_last)
        y = torch.randint(0, 1000, (batch,), device="cuda")

        def step():
            opt.zero_grad(set_to_none=True)
            with torch.autocast("cuda", dtype=dtype):
                loss = F.cross_entropy(m(x), y)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()

        return (step, {"model": {"zoo_name": "resnet50"}, "micro_batch": batch, "memory_format": "nhwc",
                       "optimizer": "SGD momentum 0.875 (torch.optim, foreach)",
                       "grad_scaler": dtype == torch.float16}), m
    return make


CASES = {
    "gpt2-124m-b8-bf16": (gpt(12, 768, 12, 8), torch.bfloat16),
    "gpt2-124m-b32-bf16": (gpt(12, 768, 12, 32), torch.bfloat16),
    "gpt-1.5b-b8-bf16": (gpt(48, 1600, 25, 8), torch.bfloat16),
    # The same with one change each: the vocabulary padded to a multiple of 64 (cuBLAS's aligned
    # kernels for the LM head), and torch.optim's fused AdamW instead of the foreach default.
    "gpt2-124m-v50304-b8-bf16": (gpt(12, 768, 12, 8, vocab=50304), torch.bfloat16),
    "gpt-1.5b-fusedadamw-b8-bf16": (gpt(48, 1600, 25, 8, fused=True), torch.bfloat16),
    "llama-1.2b-b4-bf16": (llama(16, 2048, 32, 8, 8192, 4), torch.bfloat16),
    "resnet50-b256-fp16": (resnet50(256), torch.float16),
}


# Kernel names -> what they do, first match wins (cuBLAS/cuDNN/FlashAttention/ATen kernel names).
KERNEL_CLASSES = [
    ("attention", ("flash", "fmha", "attention", "attn", "sdpa")),
    ("conv", ("conv", "fprop", "dgrad", "wgrad", "winograd", "implicit_convolve", "cudnn")),
    ("gemm", ("gemm", "nvjet", "cutlass", "xmma", "cublas", "splitk", "sm90_", "sm80_")),
    ("optimizer", ("multi_tensor", "foreach", "adam", "sgd", "fused_")),
    ("norm", ("layer_norm", "layernorm", "rms_norm", "rmsnorm", "batch_norm", "batchnorm", "bn_fw", "bn_bw")),
    ("softmax_loss", ("softmax", "cross_entropy", "nll_loss", "log_softmax")),
    ("reduce", ("reduce",)),
    ("copy_cast", ("copy", "cast", "memcpy", "memset", "fill")),
    ("elementwise", ("elementwise", "vectorized", "unrolled", "index", "embedding", "cat")),
]


def kernel_breakdown(step, path):
    """One profiled step: GPU time per kernel class, the step's GPU span and its idle gaps.
    Writes the Chrome trace (gzip) to `path`."""
    import gzip
    import os
    import tempfile
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        step()
        torch.cuda.synchronize()
    raw = os.path.join(tempfile.mkdtemp(), "t.json")
    prof.export_chrome_trace(raw)
    with open(raw, "rb") as f, gzip.open(path, "wb") as g:
        data = f.read()
        g.write(data)
    events = [e for e in json.loads(data)["traceEvents"]
              if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset") and "dur" in e]
    classes = {}
    spans = sorted((float(e["ts"]), float(e["ts"]) + float(e["dur"])) for e in events)
    for e in events:
        name = e["name"].lower()
        cls = next((c for c, keys in KERNEL_CLASSES if any(k in name for k in keys)), "other")
        c = classes.setdefault(cls, {"ms": 0.0, "kernels": 0, "top": {}})
        c["ms"] += float(e["dur"]) / 1e3
        c["kernels"] += 1
        c["top"][e["name"][:90]] = c["top"].get(e["name"][:90], 0.0) + float(e["dur"]) / 1e3
    for c in classes.values():  # the five largest kernels of each class, by total time
        c["top"] = dict(sorted(c["top"].items(), key=lambda kv: -kv[1])[:5])
    busy, end = 0.0, -1.0
    for a, b in spans:  # union of the kernels' intervals
        if b <= end:
            continue
        busy += b - max(a, end)
        end = b
    span = (spans[-1][1] - spans[0][0]) / 1e3 if spans else 0.0
    return {"classes": classes, "kernel_ms": sum(c["ms"] for c in classes.values()), "kernels": len(events),
            "gpu_span_ms": span, "gpu_busy_ms": busy / 1e3, "gpu_idle_ms": span - busy / 1e3,
            "note": "one step under torch.profiler (CPU and CUDA activities), after the timed windows"}


def measure(make, dtype, warmup, windows, steps, trace=None):
    torch.manual_seed(0)
    torch.cuda.reset_peak_memory_stats()
    (step, facts), model = make(dtype)
    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    per_step, host = [], []
    for _ in range(windows):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        t0 = time.perf_counter()
        for _ in range(steps):
            step()
        host.append((time.perf_counter() - t0) * 1e3 / steps)  # the host's time to issue a step
        end.record()
        end.synchronize()
        per_step.append(start.elapsed_time(end) / steps)
    if trace:
        facts["kernels"] = kernel_breakdown(step, trace)
    facts.update({
        "params": sum(p.numel() for p in model.parameters()),
        "step_ms": statistics.median(per_step),
        "window_step_ms": per_step,
        "peak_allocated_gib": torch.cuda.max_memory_allocated() / 2**30,
        "host_issue_ms": statistics.median(host),
        "timing": f"CUDA events over {windows} windows of {steps} back-to-back steps after {warmup} warm-up steps; median",
    })
    del model, step
    torch.cuda.empty_cache()
    return facts


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--only", default="", help="comma-separated case names (default all): " + ", ".join(CASES))
    ap.add_argument("--warmup", type=int, default=8)
    ap.add_argument("--windows", type=int, default=3)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--trace-dir", default="", help="also profile one step of each case with torch.profiler: "
                    "DIR/<case>.trace.json.gz and a per-kernel-class breakdown in the output")
    a = ap.parse_args()
    names = [n for n in a.only.split(",") if n] or list(CASES)
    for n in names:
        if n not in CASES:
            sys.exit(f"--only: unknown case {n!r}; expected one of {', '.join(CASES)}")
    torch.backends.cudnn.benchmark = True
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit",
                          "--format=csv,noheader"], capture_output=True, text=True).stdout.strip()
    out = {"schema": "parasim.torch_runs/1", "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "host": platform.node(), "gpu": torch.cuda.get_device_name(), "nvidia_smi": smi,
           "torch": torch.__version__, "cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version(),
           "data": "synthetic, resident on the GPU (no data loading)", "runs": {}}
    for n in names:
        make, dtype = CASES[n]
        t0 = time.time()
        try:
            trace = f"{a.trace_dir}/{n}.trace.json.gz" if a.trace_dir else None
            r = measure(make, dtype, a.warmup, a.windows, a.steps, trace)
        except Exception as e:  # a case that fails (out of memory, say) is reported, not skipped silently
            r = {"error": f"{type(e).__name__}: {e}"}
            torch.cuda.empty_cache()
        r["precision"] = {torch.bfloat16: "amp_bf16 (torch.autocast)", torch.float16: "amp_fp16 (torch.autocast)"}[dtype]
        r["wall_s"] = round(time.time() - t0, 1)
        out["runs"][n] = r
        print(f"{n}: {r.get('step_ms', float('nan')):.3f} ms/step, {r.get('peak_allocated_gib', math.nan):.2f} GiB peak, "
              f"{r.get('params', 0)} params, host issues a step in {r.get('host_issue_ms', math.nan):.2f} ms "
              f"({r['wall_s']} s)", flush=True)
        if "kernels" in r:
            k = r["kernels"]
            print(f"  GPU span {k['gpu_span_ms']:.2f} ms, busy {k['gpu_busy_ms']:.2f}, {k['kernels']} kernels: " +
                  ", ".join(f"{c} {v['ms']:.2f}/{v['kernels']}" for c, v in sorted(k["classes"].items(),
                                                                                  key=lambda kv: -kv[1]["ms"])),
                  flush=True)
        if "error" in r:
            print(f"  {r['error']}", flush=True)
        with open(a.output, "w") as f:  # after every case: a timeout keeps what was measured
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
