#!/usr/bin/env python3
"""Host time of DeepSpeed ZeRO-3's per-rank Python loops, as a function of the data-parallel world size W.

DeepSpeed 0.14 (deepspeed@v0.14.0) walks every rank of the group for every parameter tensor in two places:
  - `reduce_scatter_coalesced` (deepspeed/runtime/comm/coalesced_collectives.py), run for every gradient bucket
    of ZeRO-3: one slice per rank of each gradient, then the slices interleaved rank by rank (a numel check and a
    list append each) and concatenated into the buffer the reduce-scatter reads (torch.cat of W x T tensors);
    after the call, one view per tensor of this rank's share;
  - `AllGatherCoalescedHandle.wait` (deepspeed/runtime/zero/partition_parameters.py), run when a gather of more
    than one parameter completes: per parameter, one narrow per rank of the gathered partitions, a torch.cat of
    them into the parameter, and (on a GPU) a record_stream per rank.
Neither touches the collective itself, so they can be timed without peers: this script does the same operations
on tensors of one element per rank (so the copies are negligible and what is timed is the host's work) for W
from 8 to 1,024 and T tensors, and prints CSV rows: the median host time per call and per (rank x tensor).

Runs on the CPU (PyTorch's CPU tensors; no record_stream) or, where CUDA is available, on the GPU with
record_stream and with the host clock read before the kernels finish (host time, not GPU time).

    python3 validate/ds_host_loops.py > validate/results/<host>-<date>-ds-host-loops.csv
"""
import argparse
import math
import platform
import sys
import time

import torch

from torch_timing import cpu_name


def layout_for_reduce_scatter(grads, world):
    """The host part of a ZeRO-3 bucket's reduce-scatter (DeepSpeed 0.14's reduce_scatter_coalesced): per-rank
    slices of every gradient, interleaved rank-major with padding where a gradient does not divide, concatenated,
    pre-divided and chunked; then this rank's views of its share."""
    slices = []
    for g in grads:
        flat = g.view(-1)
        chunk = math.ceil(flat.numel() / world)
        slices.append([flat[r * chunk:r * chunk + chunk] for r in range(world)])
    padded = tuple(math.ceil(g.numel() / world) for g in grads)
    pieces = []
    for r in range(world):
        for t in range(len(grads)):
            piece = slices[t][r]
            pieces.append(piece)
            pad = padded[t] - piece.numel()
            if pad > 0:
                pieces.append(torch.empty(pad, dtype=piece.dtype, device=piece.device))
    flat = torch.cat(pieces)
    flat.div_(world)
    shares = torch.chunk(flat, world)
    out, offset = [], 0
    for t in range(len(grads)):
        out.append(shares[0].narrow(0, offset, slices[t][0].numel()))
        offset += padded[t]
    return out


def split_gathered(partitions, numels, world, stream):
    """The host part of a completed multi-parameter gather (DeepSpeed 0.14's AllGatherCoalescedHandle.wait): per
    parameter, its piece of every rank's partition, concatenated into the parameter; on a GPU each piece is
    recorded on the compute stream."""
    offset = 0
    params = []
    for numel in numels:
        share = math.ceil(numel / world)
        pieces = []
        for r in range(world):
            start = r * share
            if start < numel:
                pieces.append(partitions[r].narrow(0, offset, min(numel - start, share)))
        params.append(torch.cat(pieces))
        if stream is not None:
            for p in pieces:
                p.record_stream(stream)
        offset += share
    return params


def time_call(fn, repeats, warmup, cuda):
    """Median host seconds of fn() over `repeats` calls (the GPU drained before each, not after)."""
    samples = []
    for i in range(warmup + repeats):
        if cuda:
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        t1 = time.perf_counter()
        if i >= warmup:
            samples.append(t1 - t0)
    samples.sort()
    return samples[len(samples) // 2]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worlds", default="8,32,128,512,1024")
    ap.add_argument("--tensors", default="1,4,16")
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--cpu", action="store_true", help="time on the CPU even where CUDA is available")
    args = ap.parse_args()
    cuda = torch.cuda.is_available() and not args.cpu
    device = torch.device("cuda" if cuda else "cpu")
    stream = torch.cuda.current_stream() if cuda else None
    where = torch.cuda.get_device_name() if cuda else "cpu"
    cpu = cpu_name(platform.processor() or platform.machine())
    print("op,world,tensors,host_us_per_call,host_us_per_rank_tensor,torch,device,cpu")
    for world in [int(w) for w in args.worlds.split(",")]:
        for tensors in [int(t) for t in args.tensors.split(",")]:
            # One element per rank and tensor: the work left is the host's.
            grads = [torch.ones(world, dtype=torch.bfloat16, device=device) for _ in range(tensors)]
            flat = torch.ones(world * tensors, dtype=torch.bfloat16, device=device)
            partitions = [flat[r * tensors:(r + 1) * tensors] for r in range(world)]
            numels = [world] * tensors
            for op, fn in (
                ("reduce_scatter_layout", lambda: layout_for_reduce_scatter(grads, world)),
                ("gather_split", lambda: split_gathered(partitions, numels, world, stream)),
            ):
                t = time_call(fn, args.repeats, args.warmup, cuda)
                print(f"{op},{world},{tensors},{t * 1e6:.1f},{t * 1e6 / (world * tensors):.3f},"
                      f"{torch.__version__},{where},\"{cpu}\"")
                sys.stdout.flush()


if __name__ == "__main__":
    main()
