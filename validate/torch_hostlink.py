#!/usr/bin/env python3
"""The host link as offload uses it: how fast copies between host memory and the GPU run alone, both directions
at once, beside GEMMs on the GPU, and beside a memory-bound loop on the host's cores; and how much the GEMMs and
the host loop slow down beside the copies. ZeRO-Offload moves gradients to the host (D2H) during the backward and
updated parameters back (H2D) after the CPU optimizer; whether those transfers cost compute time beside them and
whether the two directions share the link is what a simulator of offload must know.

Copies are cudaMemcpyAsync (PyTorch's non_blocking copy_) on streams of their own, from pinned or pageable host
memory; GEMMs are bf16 cuBLAS (PyTorch) on another stream; the host loop is PyTorch's multi-threaded fp32
`add_` over 1 GiB arrays (the shape of an Adam step's streaming, on all of torch's threads) in a Python thread
(PyTorch releases the interpreter lock in its kernels). Times are CUDA events or, where two streams run together,
the host's clock from the launch to both streams' end; each figure the median of repetitions. Prints CSV on stdout:
case,bytes,h2d_GBps,d2h_GBps,gemm_alone_us,gemm_with_us,gemm_slowdown,host_GBps_alone,host_GBps_with,device,cpu

    python3 torch_hostlink.py [--reps 5]
"""
import argparse
import sys
import threading
import time

import torch

from torch_timing import Gemms, cpu_name, median

SIZES = [64 * 2**20, 256 * 2**20, 1024 * 2**20]
GEMMS = [(8192, 8192, 8192), (8192, 11008, 4096)]


class Copies:
    """Host<->device buffers of one size and the streams that copy them."""

    def __init__(self, nbytes, pinned):
        n = nbytes // 4
        self.nbytes = nbytes
        self.host_src = torch.randn(n, dtype=torch.float32).pin_memory() if pinned else torch.randn(n)
        self.host_dst = torch.empty(n, dtype=torch.float32, pin_memory=pinned)
        self.dev_src = torch.randn(n, device="cuda")
        self.dev_dst = torch.empty(n, device="cuda")
        self.s_h2d, self.s_d2h = torch.cuda.Stream(), torch.cuda.Stream()

    def launch(self, h2d, d2h, reps):
        if h2d:
            with torch.cuda.stream(self.s_h2d):
                for _ in range(reps):
                    self.dev_dst.copy_(self.host_src, non_blocking=True)
        if d2h:
            with torch.cuda.stream(self.s_d2h):
                for _ in range(reps):
                    self.host_dst.copy_(self.dev_src, non_blocking=True)


def copy_rates(c, h2d, d2h, reps, repeats):
    """GB/s of each direction (alone or together), events on each stream, median of `repeats`."""
    rates = {"h2d": [], "d2h": []}
    for _ in range(repeats):
        torch.cuda.synchronize()
        ev = {}
        for name, on, s in (("h2d", h2d, c.s_h2d), ("d2h", d2h, c.s_d2h)):
            if on:
                a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                a.record(s)
                ev[name] = (a, b, s)
        c.launch(h2d, d2h, reps)
        for name, (a, b, s) in ev.items():
            b.record(s)
        torch.cuda.synchronize()
        for name, (a, b, _) in ev.items():
            rates[name].append(c.nbytes * reps / (a.elapsed_time(b) * 1e-3) / 1e9)
    return {k: median(v) if v else float("nan") for k, v in rates.items()}


class HostLoop:
    """A memory-bound loop on the host's cores in a thread: y += 0.5 x over 1 GiB fp32 arrays, GB/s counting
    bytes read and written (3 x 1 GiB a pass)."""

    def __init__(self):
        n = 2**28
        self.x = torch.randn(n)
        self.y = torch.randn(n)
        self.stop = threading.Event()
        self.passes = 0
        self.thread = None

    def rate_alone(self, passes=4):
        self.y.add_(self.x, alpha=0.5)
        t0 = time.perf_counter()
        for _ in range(passes):
            self.y.add_(self.x, alpha=0.5)
        return 3 * self.x.numel() * 4 * passes / (time.perf_counter() - t0) / 1e9

    def start(self):
        self.stop.clear()
        self.passes = 0

        def loop():
            while not self.stop.is_set():
                self.y.add_(self.x, alpha=0.5)
                self.passes += 1
        self.t0 = time.perf_counter()
        self.thread = threading.Thread(target=loop)
        self.thread.start()

    def finish(self):
        self.stop.set()
        self.thread.join()
        return 3 * self.x.numel() * 4 * self.passes / (time.perf_counter() - self.t0) / 1e9


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=5)
    a = ap.parse_args()
    if not torch.cuda.is_available():
        print("torch_hostlink.py: no GPU", file=sys.stderr)
        return 1
    dev, cpu = torch.cuda.get_device_name(), cpu_name()
    nan = float("nan")
    print("case,bytes,h2d_GBps,d2h_GBps,gemm_alone_us,gemm_with_us,gemm_slowdown,host_GBps_alone,host_GBps_with,"
          "device,cpu")

    def row(case, nbytes, r, ga=nan, gw=nan, ha=nan, hw=nan):
        print(f"{case},{nbytes},{r.get('h2d', nan):.2f},{r.get('d2h', nan):.2f},{ga:.2f},{gw:.2f},"
              f"{(gw / ga) if ga == ga and gw == gw else nan:.4f},{ha:.2f},{hw:.2f},{dev},\"{cpu}\"", flush=True)

    # 1. Alone and both directions together, pinned and pageable.
    for pinned in (True, False):
        for nbytes in SIZES:
            c = Copies(nbytes, pinned)
            c.launch(True, True, 1)
            torch.cuda.synchronize()
            kind = "pinned" if pinned else "pageable"
            reps = 4 if pinned else 2
            row(f"{kind}_h2d", nbytes, copy_rates(c, True, False, reps, a.reps))
            row(f"{kind}_d2h", nbytes, copy_rates(c, False, True, reps, a.reps))
            row(f"{kind}_both", nbytes, copy_rates(c, True, True, reps, a.reps))
            del c
            torch.cuda.empty_cache()

    # 2. GEMMs beside pinned copies (copy engines), and the copies' rate beside GEMMs.
    c = Copies(256 * 2**20, True)
    s_gemm = torch.cuda.Stream()
    for m, n, k in GEMMS:
        g = Gemms(m, n, k, s_gemm)
        g.warm_up()
        gemms = g.launch
        alone = []
        for _ in range(a.reps):
            e0, e1 = gemms(20)
            e1.synchronize()
            alone.append(e0.elapsed_time(e1) * 1e-3 / 20)
        g_alone = median(alone)
        one = c.nbytes / 60e9  # a pass at ~60 GB/s (faster than PCIe Gen5 x16); the copies are sized to outlast 20 GEMMs twice over
        reps = max(2, int(2 * 20 * g_alone / one) + 1)
        for case, h2d, d2h in (("gemm_pinned_h2d", True, False), ("gemm_pinned_d2h", False, True),
                               ("gemm_pinned_both", True, True)):
            withs = []
            for _ in range(a.reps):
                torch.cuda.synchronize()
                c.launch(h2d, d2h, reps)
                e0, e1 = gemms(20)
                e1.synchronize()
                withs.append(e0.elapsed_time(e1) * 1e-3 / 20)
                torch.cuda.synchronize()
            # The copies' rate while GEMMs run throughout them.
            torch.cuda.synchronize()
            gemms(int(2 * reps * one / g_alone) + 2)
            r = copy_rates(c, h2d, d2h, reps, 1)
            torch.cuda.synchronize()
            row(f"{case}_{m}x{n}x{k}", c.nbytes, r, g_alone * 1e6, median(withs) * 1e6)
        del g, gemms
        torch.cuda.empty_cache()

    # 3. Copies beside a memory-bound loop on the host's cores, and the loop's rate beside them.
    h = HostLoop()
    h_alone = h.rate_alone()
    for pinned in (True, False):
        cc = c if pinned else Copies(256 * 2**20, False)
        kind = "pinned" if pinned else "pageable"
        for case, h2d, d2h in (("h2d", True, False), ("d2h", False, True), ("both", True, True)):
            alone = copy_rates(cc, h2d, d2h, 4 if pinned else 2, a.reps)
            h.start()
            time.sleep(0.05)
            r = copy_rates(cc, h2d, d2h, 4 if pinned else 2, a.reps)
            hw = h.finish()
            row(f"hostloop_{kind}_{case}", cc.nbytes, r, ha=h_alone, hw=hw)
            row(f"alone_{kind}_{case}", cc.nbytes, alone)
    return 0


if __name__ == "__main__":
    sys.exit(main())
