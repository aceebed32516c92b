#!/usr/bin/env python3
"""PyTorch baselines for `shardsim-validate bench --torch`: the same operations as shardsim's GPU kernels,
written in PyTorch, timed on the same GPU in the same run. Prints a results YAML (the format
`shardsim calibrate` reads) on stdout; every name starts with "torch_".

Operations: block INT8/INT4 quantisation with one fp32 scale per 8192-value block (absmax / qmax, round,
clamp; INT4 packed two per byte) and its dequantisation, a device-to-device copy, and bf16 GEMMs of the cases
gpu_bench.cu measures (--cases). ZFP has no PyTorch equivalent and is not timed here.

What only PyTorch runs, for the compute model: causal FlashAttention forward and backward
(scaled_dot_product_attention on its flash backend) for the attention cases; the memory-bound operations of a
transformer step (layer norm, RMS norm, GeLU, SwiGLU, residual add, dropout, softmax, fused AdamW) at a large
size, recorded with the bytes each reads and writes; and the time of one eager operation on a tiny tensor (host
dispatch and launch: the per-kernel overhead of a framework that runs eagerly).
"""
import argparse
import datetime
import sys
import time

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


def time_gemms(cases, dev, budget):
    """Each case with its operands laid out as gpu_bench.cu lays them (A stored k x m when transposed, B n x k)."""
    out = []
    if not cases:
        return out
    most_a = max(m * k for _, m, n, k, _, _ in cases)
    most_b = max(k * n for _, m, n, k, _, _ in cases)
    most_c = max(m * n for _, m, n, k, _, _ in cases)
    pool_a = torch.randn(most_a, device=dev, dtype=torch.bfloat16)
    pool_b = torch.randn(most_b, device=dev, dtype=torch.bfloat16)
    pool_c = torch.empty(most_c, device=dev, dtype=torch.bfloat16)
    for name, m, n, k, ta, tb in cases:
        A = pool_a[: m * k].view(k, m).t() if ta else pool_a[: m * k].view(m, k)
        B = pool_b[: k * n].view(n, k).t() if tb else pool_b[: k * n].view(k, n)
        C = pool_c[: m * n].view(m, n)
        t = median_time(lambda: torch.matmul(A, B, out=C), budget)
        out.append(f"  - {{kind: gemm, name: torch_{name}, m: {m}, n: {n}, k: {k}, seconds: {t!r}s}}")
    return out


def time_attention(cases, dev, budget):
    """Causal attention through scaled_dot_product_attention, forward and backward (the backward alone, from saved
    state), on PyTorch's flash backend (FlashAttention-2's kernels: torch_flash_*) and on its cuDNN backend
    (torch_cudnn_*), which PyTorch picks by default on Hopper and Blackwell data-centre GPUs with cuDNN 9.9 or newer
    (aten/src/ATen/native/transformers/cuda/sdp_utils.cpp, check_prefer_cudnn_attention): what an unforced Hugging
    Face model runs there."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    backends = [("flash", SDPBackend.FLASH_ATTENTION)]
    if hasattr(SDPBackend, "CUDNN_ATTENTION"):
        backends.append(("cudnn", SDPBackend.CUDNN_ATTENTION))
    out = []
    for b, h, s, d in cases:
        for family, backend in backends:
            try:
                q, k, v = (torch.randn(b, h, s, d, device=dev, dtype=torch.bfloat16, requires_grad=True)
                           for _ in range(3))
                with sdpa_kernel(backend):
                    fwd = lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
                    t = median_time(fwd, budget)
                    o = fwd()
                    g = torch.randn_like(o)
                    tb = median_time(lambda: torch.autograd.grad(o, (q, k, v), g, retain_graph=True), budget)
            except (RuntimeError, torch.OutOfMemoryError) as e:
                print(f"torch_baseline.py: {family} attention {b}x{h}x{s}x{d}: {e}", file=sys.stderr)
                continue
            for name, sec in ((f"torch_{family}_fwd", t), (f"torch_{family}_bwd", tb)):
                out.append(f"  - {{kind: attention, name: {name}, batch: {b}, heads: {h}, seq: {s}, head_dim: {d}, "
                           f"seconds: {sec!r}s}}")
            del q, k, v, o, g
    torch.cuda.empty_cache()
    return out


def time_memory_bound(dev, budget):
    """A transformer step's memory-bound operations on 64 Mi bf16 values (fp32 for the optimizer), with the
    bytes each must read and write."""
    out = []
    n, h = 64 * 2**20, 8192
    x = torch.randn(n // h, h, device=dev, dtype=torch.bfloat16)
    r = torch.randn_like(x)
    w = torch.ones(h, device=dev, dtype=torch.bfloat16)
    gate = torch.randn(n // h, 2 * h, device=dev, dtype=torch.bfloat16)
    e = 2
    F = torch.nn.functional
    ops = [
        ("layer_norm", lambda: F.layer_norm(x, (h,), w, w), 2 * n * e),
        ("rms_norm", lambda: F.rms_norm(x, (h,), w), 2 * n * e),
        ("gelu", lambda: F.gelu(x, approximate="tanh"), 2 * n * e),
        ("swiglu", lambda: F.silu(gate[:, :h]) * gate[:, h:], 3 * n * e),
        ("residual_add", lambda: x + r, 3 * n * e),
        ("dropout", lambda: F.dropout(x, 0.1, training=True), 2 * n * e + n),
        ("softmax", lambda: torch.softmax(x, dim=-1), 2 * n * e),
    ]
    for name, fn, moved in ops:
        t = median_time(fn, budget)
        out.append(f"  - {{kind: memory, name: torch_{name}, bytes: {moved}B, seconds: {t!r}s}}")
    del x, r, gate
    # Fused AdamW over fp32 parameters: reads parameter, gradient and both moments, writes all but the gradient.
    p = torch.zeros(n, device=dev, dtype=torch.float32, requires_grad=True)
    p.grad = torch.randn_like(p)
    opt = torch.optim.AdamW([p], lr=1e-4, fused=True)
    t = median_time(opt.step, budget)
    out.append(f"  - {{kind: memory, name: torch_adamw_fused, bytes: {7 * 4 * n}B, seconds: {t!r}s}}")
    del p, opt
    torch.cuda.empty_cache()
    return out


def time_overhead(dev, ops=5000):
    """Wall time per eager operation on a tiny tensor, many in a row: host dispatch and launch, the floor under
    every kernel a framework launches eagerly."""
    out = []
    x = torch.ones(256, device=dev)
    lin = torch.nn.Linear(64, 64, device=dev, dtype=torch.bfloat16)
    xb = torch.ones(8, 64, device=dev, dtype=torch.bfloat16)
    for name, fn in (("torch_eager_add", lambda: x.add_(1.0)), ("torch_eager_linear", lambda: lin(xb))):
        samples = []
        for _ in range(5):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(ops):
                fn()
            torch.cuda.synchronize()
            samples.append((time.perf_counter() - t0) / ops)
        samples.sort()
        out.append(f"  - {{kind: overhead, name: {name}, seconds: {samples[len(samples) // 2]!r}s}}")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--min-bytes", type=float, default=4096)
    ap.add_argument("--max-bytes", type=float, default=64 * 2**20)
    ap.add_argument("--seconds", type=float, default=0.02)
    ap.add_argument("--gemm-seconds", type=float, default=0.01)
    ap.add_argument("--cases", help="GEMM and attention cases, as shardsim-validate writes them")
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
    gemms, attention = [], []
    if a.cases:
        with open(a.cases) as f:
            for line in f:
                w = line.split()
                if w and w[0] == "gemm":
                    gemms.append((w[1], int(w[2]), int(w[3]), int(w[4]), w[5] == "1", w[6] == "1"))
                elif w and w[0] == "attention":
                    attention.append(tuple(int(v) for v in w[1:5]))
    out += time_gemms(gemms, dev, a.gemm_seconds)
    out += time_attention(attention, dev, a.seconds)
    out += time_memory_bound(dev, a.seconds)
    out += time_overhead(dev)
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
