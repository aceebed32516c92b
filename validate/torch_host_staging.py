#!/usr/bin/env python3
"""DeepSpeed ZeRO-3 Offload's copies across devices and dtypes, made by several processes of one host at once: how
the host's share of them grows when the node's ranks stage their gradients and parameters together.

ZeRO-3 with offload_optimizer copies each gradient partition into the fp32 host gradients with a blocking copy_ from
a bf16 device tensor (deepspeed@v0.14.4 runtime/zero/stage3.py partition_grads: fp32_grad_tensor.copy_(grad_buffer))
and writes the updated parameters back with a blocking copy_ from the fp32 host partition into the bf16 device one
(stage3.py _reassign_or_swap_out_partitioned_parameters). PyTorch converts dtypes of a blocking host<->device copy on
the CPU (pytorch/pytorch@007aa8ae aten/src/ATen/native/cuda/Copy.cu copy_kernel_cuda: conversion_device = kCPU
unless non_blocking): the gradient goes to a fresh pageable bf16 temporary, then is converted into fp32; the
parameters are converted into a fresh pageable bf16 temporary, then staged to the device. shardsim prices them with
pageable_download_s / pageable_upload_s, each device taking its share of the host's memory bandwidth; on Polaris
(offload-polaris) four ranks' backwards take about twice what that gives while one rank's (offload-single) fit.
This script measures the same copies in 1, 2 and 4 processes on one GPU at once, with PyTorch's default thread
count in each (DeepSpeed's launcher leaves OMP_NUM_THREADS unset unless --bind_cores_to_rank) and with the host's
cores split between them. Each process times its copies with the host's clock (a blocking copy returns when done);
all processes start each repetition together. Prints CSV on stdout:
direction,procs,threads,elements,ms_median_slowest,GBps_per_proc,GBps_all,device,cpu

    python3 torch_host_staging.py [--reps 5] [--elements 33554432,268435456]
"""
import argparse
import os
import sys
import time

import torch
import torch.multiprocessing as mp

from torch_timing import cpu_name, median


def worker(rank, threads, elements, reps, barrier, out):
    """One process's copies: `reps` of each direction, every repetition started with the others (barrier)."""
    torch.set_num_threads(threads)
    dev16 = torch.randn(elements, device="cuda").to(torch.bfloat16)
    host32 = torch.empty(elements, dtype=torch.float32).pin_memory()
    times = {"d2h": [], "h2d": []}
    for direction in ("d2h", "h2d"):
        for i in range(reps + 1):
            torch.cuda.synchronize()
            barrier.wait()
            t0 = time.perf_counter()
            if direction == "d2h":
                host32.copy_(dev16)  # the gradient's path: pageable bf16 temporary, converted on the CPU
            else:
                dev16.copy_(host32)  # the parameters' path: converted on the CPU, staged from pageable memory
            torch.cuda.synchronize()
            if i > 0:  # the first repetition warms the allocator and the driver's staging buffers
                times[direction].append((time.perf_counter() - t0) * 1e3)
    out.put((rank, median(times["d2h"]), median(times["h2d"])))


def case(procs, threads, elements, reps):
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(procs)
    out = ctx.Queue()
    ps = [ctx.Process(target=worker, args=(r, threads, elements, reps, barrier, out)) for r in range(procs)]
    for p in ps:
        p.start()
    results = [out.get() for _ in ps]
    for p in ps:
        p.join()
    slowest = {"d2h": max(r[1] for r in results), "h2d": max(r[2] for r in results)}
    return slowest


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--elements", default="33554432,268435456",
                    help="elements per copy, comma-separated (bf16 on the device, fp32 on the host)")
    ap.add_argument("--procs", default="1,2,4", help="concurrent processes, comma-separated")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("torch_host_staging.py: no GPU visible to PyTorch", file=sys.stderr)
        return 1
    cores = len(os.sched_getaffinity(0))
    device = torch.cuda.get_device_name(0)
    cpu = cpu_name()
    print("direction,procs,threads,elements,ms_median_slowest,GBps_per_proc,GBps_all,device,cpu")
    for elements in (int(e) for e in args.elements.split(",")):
        for procs in (int(p) for p in args.procs.split(",")):
            # PyTorch's default (every core in each process), then the cores split between the processes.
            for threads in sorted({torch.get_num_threads(), max(1, cores // procs)}, reverse=True):
                slowest = case(procs, threads, elements, args.reps)
                for direction in ("d2h", "h2d"):
                    ms = slowest[direction]
                    gbps = elements * 2 / (ms * 1e-3) / 1e9  # the bf16 bytes that cross the link
                    print(f"{direction},{procs},{threads},{elements},{ms:.3f},{gbps:.2f},{gbps * procs:.2f},"
                          f"\"{device}\",\"{cpu}\"", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
