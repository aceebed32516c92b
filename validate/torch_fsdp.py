#!/usr/bin/env python3
"""What a sharding framework's per-module machinery costs on its own: training steps of LLaMA-shaped models on
one GPU, run plainly, with PyTorch FSDP2 (`fully_shard` per decoder layer, as the FSDP recipes wrap LLaMA),
and with no-op module hooks on every linear layer (the forward pre/post and backward pre/post hooks that
DeepSpeed ZeRO-3 registers on each submodule, here doing nothing: a lower bound on its per-module cost), and
with FSDP2 units at every linear layer too (DeepSpeed ZeRO-3's per-submodule granularity).

One rank (world size 1, NCCL): the collectives move nothing across a network, so the difference from the plain
step is the framework's own work per unit (hooks, copy-in/copy-out of the flat buffers, stream waits, the
collective calls' launch), which is what a simulator must add per unit on top of communication time. Tiny
layers (hidden 256) make the step CPU-bound, so the slope in layers is the per-layer CPU cost; 7B-shaped
layers show what of it survives behind real GPU work. Also the CPU issue cost of single collective calls
(all-gather, reduce-scatter, all-reduce of 4 KiB), timed back to back.

Prints CSV on stdout:
hidden,ffn_hidden,heads,layers,seq_len,micro_batch,mode,units,hooked_modules,wall_ms,forward_ms,backward_ms,step_ms,torch,device
and, after a blank line, `op,bytes,calls,cpu_us_per_call,gpu_us_per_call,torch,device`.

    python3 torch_fsdp.py [--steps 20] [--warmup 5] [--check] [--configs HxFxNxLxSxB,...]
"""
import argparse
import os
import sys
import time

import torch
import torch.distributed as dist

from torch_timing import VOCAB, llama, time_steps

# (hidden, ffn_hidden, heads, layers, seq_len, micro_batch)
CONFIGS = [(256, 688, 4, 8, 256, 1), (256, 688, 4, 16, 256, 1), (256, 688, 4, 32, 256, 1),
           (1024, 2816, 8, 8, 2048, 1), (2048, 5632, 16, 8, 2048, 1),
           (4096, 11008, 32, 4, 2048, 1), (4096, 11008, 32, 8, 2048, 1)]
MODES = ["plain", "hooks", "fsdp", "fsdp_keep", "fsdp_linear"]
# --check: other shapes (LLaMA-3B/13B-like layers, 4,096 tokens, micro-batch 2), plain and FSDP per decoder layer
# only, to hold the model's framework hooks against steps they were not fitted to.
CHECK_CONFIGS = [(3072, 8192, 24, 6, 4096, 1), (5120, 13824, 40, 4, 2048, 1), (4096, 11008, 32, 6, 4096, 1),
                 (2048, 5632, 16, 12, 4096, 2), (1024, 2816, 8, 16, 2048, 4), (512, 1408, 8, 24, 1024, 1)]
CHECK_MODES = ["plain", "fsdp"]


def noop(*args, **kwargs):
    return None


def prepare(model, mode):
    """Returns (units, hooked modules)."""
    layers = model.model.layers
    if mode == "plain":
        return 0, 0
    if mode == "hooks":
        n = 0
        for m in model.modules():
            if isinstance(m, torch.nn.Linear):
                m.register_forward_pre_hook(noop)
                m.register_forward_hook(noop)
                m.register_full_backward_pre_hook(noop)
                m.register_full_backward_hook(noop)
                n += 1
        return 0, n
    from torch.distributed.fsdp import fully_shard
    keep = mode == "fsdp_keep"  # reshard_after_forward=False: parameters stay gathered until backward (ZeRO-2-like)
    units = 0
    if mode == "fsdp_linear":  # one unit per linear layer, as DeepSpeed ZeRO-3 fetches per submodule
        for m in list(model.modules()):
            if isinstance(m, torch.nn.Linear):
                fully_shard(m)
                units += 1
    for layer in layers:
        fully_shard(layer, reshard_after_forward=not keep)
    fully_shard(model, reshard_after_forward=not keep)
    return units + len(layers) + 1, 0


def run(cfg, mode, steps, warmup):
    model = llama(cfg)
    model.train()
    units, hooked = prepare(model, mode)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5, fused=True)
    _, _, _, _, seq, mb = cfg
    ids = torch.randint(0, VOCAB, (mb, seq), device="cuda")
    wall, fwd, bwd, stp = time_steps(model, opt, ids, steps, warmup)
    del model, opt, ids
    torch.cuda.empty_cache()
    return units, hooked, wall, fwd, bwd, stp


def collective_calls(name, calls=2000):
    out = []
    n = 1024  # 4 KiB of fp32
    x = torch.ones(n, device="cuda")
    y = torch.empty(n * dist.get_world_size(), device="cuda")
    ops = {
        "all_gather": lambda: dist.all_gather_into_tensor(y, x),
        "reduce_scatter": lambda: dist.reduce_scatter_tensor(x, y),
        "all_reduce": lambda: dist.all_reduce(x),
    }
    for op, f in ops.items():
        for _ in range(50):
            f()
        torch.cuda.synchronize()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        t0 = time.perf_counter()
        a.record()
        for _ in range(calls):
            f()
        b.record()
        t1 = time.perf_counter()
        b.synchronize()
        out.append(f"{op},{4 * n},{calls},{(t1 - t0) * 1e6 / calls:.3f},{a.elapsed_time(b) * 1e3 / calls:.3f},"
                   f"{torch.__version__},{name}")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--check", action="store_true", help="the check shapes, plain and FSDP per decoder layer")
    ap.add_argument("--configs", default="", help="HIDDENxFFNxHEADSxLAYERSxSEQxMB,... instead of the built-in shapes")
    a = ap.parse_args()
    if not torch.cuda.is_available():
        print("torch_fsdp.py: no GPU visible to PyTorch", file=sys.stderr)
        return 1
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29511")
    torch.cuda.set_device(0)
    dist.init_process_group("nccl", rank=0, world_size=1, device_id=torch.device("cuda", 0))
    name = torch.cuda.get_device_name()
    print("hidden,ffn_hidden,heads,layers,seq_len,micro_batch,mode,units,hooked_modules,wall_ms,forward_ms,"
          "backward_ms,step_ms,torch,device", flush=True)
    configs = CHECK_CONFIGS if a.check else CONFIGS
    if a.configs:
        configs = [tuple(int(x) for x in c.split("x")) for c in a.configs.split(",")]
    for cfg in configs:
        for mode in CHECK_MODES if a.check else MODES:
            try:
                units, hooked, w, f, b, s = run(cfg, mode, a.steps, a.warmup)
            except Exception as e:  # one configuration failing leaves the others measured
                print(f"torch_fsdp.py: {cfg} {mode}: {type(e).__name__}: {e}", file=sys.stderr)
                torch.cuda.empty_cache()
                continue
            h, ffn, heads, layers, seq, mb = cfg
            print(f"{h},{ffn},{heads},{layers},{seq},{mb},{mode},{units},{hooked},{w:.4f},{f:.4f},{b:.4f},{s:.4f},"
                  f"{torch.__version__},{name}", flush=True)
    if a.check:
        dist.destroy_process_group()
        return 0
    print()
    print("op,bytes,calls,cpu_us_per_call,gpu_us_per_call,torch,device")
    try:
        for line in collective_calls(name):
            print(line, flush=True)
    except Exception as e:
        print(f"torch_fsdp.py: collective calls: {type(e).__name__}: {e}", file=sys.stderr)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
