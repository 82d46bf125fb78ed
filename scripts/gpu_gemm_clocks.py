#!/usr/bin/env python3
"""Measures how a GPU's GEMM rate falls from a short burst to a sustained, power-limited run.

    python3 scripts/gpu_gemm_clocks.py -o gemm-clocks.json

parasim's Hopper GEMM fraction was measured in bursts (scripts/gpu_microbench.py: medians of 10
calls after 3 warm-ups), its A100 and V100 fractions in runs of at least 3 s; a training step runs
GEMMs back to back for seconds, at the clock the card's power limit allows. This script measures,
on the same shapes and the same card (docs/fidelity.md, "Not done yet"):

- burst: each shape after 2 s idle, the median of 10 calls after 3 warm-ups;
- sustained: after a 10 s soak on 8192^3, each shape back to back for 3 s, the median call of the
  last 2 s;
- duty: 8192^3 GEMMs alternating with HBM copies sized so the GEMMs take about 50% and 80% of the
  time (a step's mix), 4 s each, the median GEMM call of the last 3 s.

Each window carries the SM clock, power and temperature nvidia-smi sampled in it (every 100 ms;
null where nvidia-smi is missing). bf16 throughout.
"""
import argparse
import json
import statistics
import subprocess
import threading
import time

import torch

SHAPES = (  # (name, m, n, k): C[m, n] = A[m, k] B[k, n]
    ("square 8192^3", 8192, 8192, 8192),
    ("llama-70b tp=8 gate/up, 8192 tokens", 8192, 7168, 8192),
    ("gpt-1.5b fc1, 8192 tokens", 8192, 6400, 1600),
    ("gpt-1.5b fc2, 8192 tokens", 8192, 1600, 6400),
)


class Sampler:
    """nvidia-smi's SM clock (MHz), power (W) and temperature (C), stamped with time.monotonic()."""

    def __init__(self):
        self.rows, self.proc = [], None
        uuid = getattr(torch.cuda.get_device_properties(torch.cuda.current_device()), "uuid", None)
        ident = None if uuid is None else str(uuid) if str(uuid).startswith("GPU-") else "GPU-" + str(uuid)
        cmd = ["nvidia-smi", "--query-gpu=clocks.sm,power.draw,temperature.gpu", "--format=csv,noheader,nounits",
               "-lms", "100"] + (["-i", ident] if ident else [])
        try:
            self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        except OSError:
            return
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            try:
                sm, watts, temp = (float(v) for v in line.split(","))
            except ValueError:
                continue
            self.rows.append((time.monotonic(), sm, watts, temp))

    def window(self, t0, t1):
        inside = [r for r in self.rows if t0 <= r[0] <= t1]
        if not inside:
            return None
        return {"sm_mhz": statistics.median(r[1] for r in inside), "power_w": statistics.median(r[2] for r in inside),
                "temperature_c": statistics.median(r[3] for r in inside), "samples": len(inside)}

    def stop(self):
        if self.proc:
            self.proc.terminate()


def operands(m, n, k):
    return torch.randn(m, k, device="cuda", dtype=torch.bfloat16), torch.randn(k, n, device="cuda",
                                                                               dtype=torch.bfloat16)


def timed_calls(fn, seconds, keep_last):
    """Calls fn back to back for `seconds`, timing each with CUDA events; the median ms of the calls
    that started in the last `keep_last` seconds, and the wall window they ran in."""
    marks, start = [], time.monotonic()
    while time.monotonic() - start < seconds:
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        marks.append((time.monotonic(), a, b))
        if len(marks) % 64 == 0:
            b.synchronize()
    torch.cuda.synchronize()
    end = time.monotonic()
    kept = [a.elapsed_time(b) for t, a, b in marks if t >= end - keep_last]
    return statistics.median(kept), end - keep_last, end


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-o", "--output", required=True)
    a = ap.parse_args()
    t0 = time.time()
    sampler = Sampler()
    out = {"schema": "parasim.gemm-clocks/1", "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "cuda": torch.version.cuda,
           "dtype": "bf16", "burst": [], "sustained": [], "duty": []}

    for name, m, n, k in SHAPES:  # bursts from idle
        x, w = operands(m, n, k)
        time.sleep(2)
        for _ in range(3):
            x @ w
        torch.cuda.synchronize()
        w0 = time.monotonic()
        calls = []
        for _ in range(10):
            ev = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            ev[0].record()
            x @ w
            ev[1].record()
            ev[1].synchronize()
            calls.append(ev[0].elapsed_time(ev[1]))
        ms = statistics.median(calls)
        out["burst"].append({"shape": name, "m": m, "n": n, "k": k, "ms": ms, "tflops": 2.0 * m * n * k / ms / 1e9,
                             "clocks": sampler.window(w0, time.monotonic())})
        print(f"burst {name}: {out['burst'][-1]['tflops']:.1f} TFLOP/s", flush=True)
        del x, w

    x, w = operands(8192, 8192, 8192)
    timed_calls(lambda: x @ w, 10, 1)  # soak: the card at its power limit before the sustained runs
    for name, m, n, k in SHAPES:
        xs, ws = operands(m, n, k)
        ms, w0, w1 = timed_calls(lambda: xs @ ws, 3, 2)
        out["sustained"].append({"shape": name, "m": m, "n": n, "k": k, "ms": ms,
                                 "tflops": 2.0 * m * n * k / ms / 1e9, "clocks": sampler.window(w0, w1)})
        print(f"sustained {name}: {out['sustained'][-1]['tflops']:.1f} TFLOP/s", flush=True)
        del xs, ws

    # Duty cycles: one 8192^3 GEMM, then a copy taking (1 - duty) / duty of its time.
    gemm_ms = out["sustained"][0]["ms"]
    probe = torch.empty(256 * 1024 * 1024, device="cuda", dtype=torch.uint8)
    src = torch.empty_like(probe)
    copy_ms, _, _ = timed_calls(lambda: probe.copy_(src), 1, 0.5)
    for duty in (0.5, 0.8):
        bytes_ = int(probe.numel() * (gemm_ms * (1 - duty) / duty) / copy_ms) // 4096 * 4096
        dst, srcs = probe[:bytes_], src[:bytes_]
        marks, start = [], time.monotonic()
        while time.monotonic() - start < 4:
            ev = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            ev[0].record()
            x @ w
            ev[1].record()
            dst.copy_(srcs)
            marks.append((time.monotonic(), ev))
            if len(marks) % 32 == 0:
                ev[1].synchronize()
        torch.cuda.synchronize()
        end = time.monotonic()
        ms = statistics.median(e[0].elapsed_time(e[1]) for t, e in marks if t >= end - 3)
        out["duty"].append({"gemm_share": duty, "copy_bytes": bytes_, "gemm_ms": ms,
                            "tflops": 2.0 * 8192**3 / ms / 1e9, "clocks": sampler.window(end - 3, end)})
        print(f"duty {duty:.0%}: GEMM {out['duty'][-1]['tflops']:.1f} TFLOP/s", flush=True)

    sampler.stop()
    out["clock_source"] = "nvidia-smi, every 100 ms" if sampler.rows else None
    out["wall_s"] = time.time() - t0
    json.dump(out, open(a.output, "w"), indent=1)


if __name__ == "__main__":
    main()
