#!/usr/bin/env python3
"""Measures the kernel-model figures parasim takes for a GPU, on this machine's GPU, with PyTorch.

    python3 scripts/gpu_microbench.py -o microbench.json

- GEMMs as a linear layer runs them (forward, data gradient, weight gradient), with the output
  width a multiple of 8 and not (GPT-2's vocabulary of 50257): the rate and the kernel cuBLAS picks.
- Optimizer steps of torch.optim (foreach and fused AdamW, foreach momentum SGD) over fp32 tensors,
  as time per parameter, next to the copy bandwidth of the same card.
Times are CUDA events over repeated calls after warm-ups, the median of the repetitions.
"""
import argparse
import json
import statistics
import time

import torch
import torch.nn.functional as F


def timed(fn, warmup=3, reps=10):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    out = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        out.append(a.elapsed_time(b))
    return statistics.median(out)


def kernel_names(fn):
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as p:
        fn()
        torch.cuda.synchronize()
    return sorted({e.name[:100] for e in p.events() if e.device_type == torch.autograd.DeviceType.CUDA})


def gemms(dtype):
    rows = []
    for m in (8192, 32768):
        for k in (768, 1600):
            for n in (50257, 50304, 3 * k):
                x = torch.randn(m, k, device="cuda", dtype=dtype)
                w = torch.randn(n, k, device="cuda", dtype=dtype)
                dy = torch.randn(m, n, device="cuda", dtype=dtype)
                for phase, fn, shape in (("fwd", lambda: F.linear(x, w), (m, n, k)),
                                         ("dgrad", lambda: dy @ w, (m, k, n)),
                                         ("wgrad", lambda: dy.t() @ x, (n, k, m))):
                    ms = timed(fn)
                    flops = 2.0 * m * n * k
                    rows.append({"phase": phase, "m": shape[0], "n": shape[1], "k": shape[2],
                                 "linear": {"tokens": m, "in": k, "out": n}, "ms": ms,
                                 "tflops": flops / ms / 1e9, "kernels": kernel_names(fn)})
                    print(f"{dtype} linear {k}->{n} x{m} {phase}: {ms:.3f} ms {flops / ms / 1e9:.1f} TFLOP/s "
                          f"{rows[-1]['kernels'][0][:60]}", flush=True)
                del x, w, dy
    sq = torch.randn(8192, 8192, device="cuda", dtype=dtype)
    ms = timed(lambda: sq @ sq, reps=20)
    rows.append({"phase": "square", "m": 8192, "n": 8192, "k": 8192, "ms": ms, "tflops": 2 * 8192**3 / ms / 1e9})
    print(f"{dtype} 8192^3: {rows[-1]['tflops']:.1f} TFLOP/s", flush=True)
    return rows


def optimizers(params_total):
    out = {}
    n = 64
    sizes = [params_total // n] * n
    buf = torch.empty(params_total, device="cuda")
    src = torch.empty_like(buf)
    ms = timed(lambda: buf.copy_(src))
    out["copy_bytes"] = 2 * 4 * params_total
    out["copy_gbps"] = out["copy_bytes"] / ms / 1e6
    del buf, src
    for name, make in (("adamw_foreach", lambda p: torch.optim.AdamW(p, lr=1e-4, weight_decay=0.1, foreach=True)),
                       ("adamw_fused", lambda p: torch.optim.AdamW(p, lr=1e-4, weight_decay=0.1, fused=True)),
                       ("sgd_momentum_foreach", lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.875,
                                                                          weight_decay=3e-5, foreach=True))):
        ps = [torch.nn.Parameter(torch.randn(s, device="cuda")) for s in sizes]
        for p in ps:
            p.grad = torch.randn_like(p)
        opt = make(ps)
        ms = timed(opt.step)
        # What a pass moving B bytes per parameter takes at the copy's rate: B = t * rate / params.
        out[name] = {"ms": ms, "ns_per_param": ms * 1e6 / params_total,
                     "bytes_per_param_at_copy_rate": ms * 1e6 * out["copy_gbps"] / params_total,
                     "kernels": kernel_names(opt.step)}
        print(f"{name}: {ms:.3f} ms for {params_total} params, {out[name]['bytes_per_param_at_copy_rate']:.1f} "
              f"B/param at the copy rate {out['copy_gbps']:.0f} GB/s", flush=True)
        del ps, opt
        torch.cuda.empty_cache()
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-o", "--output", required=True)
    a = ap.parse_args()
    t0 = time.time()
    out = {"schema": "parasim.microbench/1", "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "cuda": torch.version.cuda,
           "cublas_note": "torch's cuBLAS/cuBLASLt (CUDA " + str(torch.version.cuda) + ")"}
    out["optimizers"] = optimizers(256 * 1024 * 1024)
    json.dump(out, open(a.output, "w"), indent=1)
    out["gemm_bf16"] = gemms(torch.bfloat16)
    json.dump(out, open(a.output, "w"), indent=1)
    out["gemm_fp16"] = gemms(torch.float16)
    out["wall_s"] = time.time() - t0
    json.dump(out, open(a.output, "w"), indent=1)


if __name__ == "__main__":
    main()
