#!/usr/bin/env python3
"""PyTorch baselines for `shardsim-validate bench --torch`: the same operations as shardsim's GPU kernels,
written in PyTorch, timed on the same GPU in the same run. Prints a results YAML (the format
`shardsim calibrate` reads) on stdout; every name starts with "torch_".

Operations: block INT8/INT4 quantisation with one fp32 scale per 8192-value block (absmax / qmax, round,
clamp; INT4 packed two per byte) and its dequantisation, a device-to-device copy, and bf16 GEMMs of the shapes
gpu_bench.cu measures. ZFP has no PyTorch equivalent and is not timed here.
"""
import argparse
import datetime
import sys

import torch


def median_time(fn, budget):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    fn()
    torch.cuda.synchronize()
    samples, total = [], 0.0
    while len(samples) < 3 or total < budget:
        start.record()
        fn()
        end.record()
        end.synchronize()
        t = start.elapsed_time(end) * 1e-3
        samples.append(t)
        total += t
        if len(samples) > 10000:
            break
    samples.sort()
    return samples[len(samples) // 2]


def quantize(x, block, qmax):
    n = x.numel()
    pad = (-n) % block
    xb = torch.nn.functional.pad(x, (0, pad)).view(-1, block)
    scales = xb.abs().amax(dim=1) / qmax
    q = torch.clamp(torch.round(xb / scales.clamp_min(torch.finfo(torch.float32).tiny)[:, None]), -qmax, qmax)
    q = q.to(torch.int8).view(-1)[:n]
    if qmax == 7:
        if n % 2:
            q = torch.nn.functional.pad(q, (0, 1))
        q = ((q[0::2] & 0x0F) | ((q[1::2] & 0x0F) << 4)).to(torch.int8)
    return q, scales


def dequantize(q, scales, n, block, qmax):
    if qmax == 7:
        lo = (q << 4) >> 4  # sign-extend the low nibble
        hi = q >> 4
        q = torch.stack((lo, hi), dim=1).view(-1)[:n]
    pad = (-n) % block
    v = torch.nn.functional.pad(q.to(torch.float32), (0, pad)).view(-1, block) * scales[:, None]
    return v.view(-1)[:n]


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--min-bytes", type=float, default=4096)
    ap.add_argument("--max-bytes", type=float, default=64 * 2**20)
    ap.add_argument("--seconds", type=float, default=0.02)
    a = ap.parse_args()
    if not torch.cuda.is_available():
        print("torch_baseline.py: no GPU visible to PyTorch", file=sys.stderr)
        return 1
    dev = torch.device("cuda")
    props = torch.cuda.get_device_properties(dev)
    out = ["# PyTorch baselines (validate/torch_baseline.py)",
           f'device: {{name: "{props.name}", driver: "torch {torch.__version__}, CUDA {torch.version.cuda}", '
           f'backend: cuda, date: "{datetime.date.today().isoformat()}"}}',
           "measurements:"]
    block = 8192
    size = a.min_bytes
    while size <= a.max_bytes:
        n = int(size) // 4
        x = torch.sin(torch.arange(n, device=dev, dtype=torch.float32) * 0.001) * 3.0
        y = torch.empty_like(x)
        t = median_time(lambda: y.copy_(x), a.seconds)
        out.append(f"  - {{kind: copy, name: torch_d2d, bytes: {n * 4}B, seconds: {t!r}s}}")
        for tag, qmax in (("int8", 127), ("int4", 7)):
            t = median_time(lambda: quantize(x, block, qmax), a.seconds)
            out.append(f"  - {{kind: kernel, name: torch_quantize_{tag}, bytes: {n * 4}B, seconds: {t!r}s}}")
            q, s = quantize(x, block, qmax)
            t = median_time(lambda: dequantize(q, s, n, block, qmax), a.seconds)
            out.append(f"  - {{kind: kernel, name: torch_dequantize_{tag}, bytes: {n * 4}B, seconds: {t!r}s}}")
        size *= 4
    shapes = [("square", d, d, d) for d in (1024, 2048, 4096, 8192)]
    for h in (5120, 6144):
        t_ = 4096
        shapes += [("qkv", 3 * h, t_, h), ("attn_out", h, t_, h), ("mlp_up", 4 * h, t_, h), ("mlp_down", h, t_, 4 * h)]
    for what, m, n, k in shapes:
        w = torch.full((m, k), 0.01, device=dev, dtype=torch.bfloat16)
        x = torch.full((k, n), 0.01, device=dev, dtype=torch.bfloat16)
        t = median_time(lambda: torch.matmul(w, x), a.seconds)
        out.append(f"  - {{kind: gemm, name: torch_bf16_{what}, m: {m}, n: {n}, k: {k}, seconds: {t!r}s}}")
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
