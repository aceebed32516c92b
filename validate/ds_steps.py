#!/usr/bin/env python3
"""What DeepSpeed's ZeRO machinery costs on one GPU, as DeepSpeed 0.14 runs it: training steps of LLaMA-shaped
models, timed per phase (forward, backward, optimizer step, each up to the GPU's end), run plainly (PyTorch,
fused AdamW) and through the DeepSpeed engine with ZeRO stage 1, 2 and 3, ZeRO-Offload (stage 2 and 3 with
`offload_optimizer: cpu`, DeepSpeedCPUAdam) and ZeRO-3 with the parameters offloaded too (`offload_param: cpu`).

One rank (world size 1, NCCL): the collectives move nothing across a network, so what differs from the plain
step is DeepSpeed's own work (ZeRO-3's per-module fetch and release hooks, the gradient buckets' copies, the
offload's copies between GPU and host and the CPU optimizer), which is what a simulator must schedule on top of
communication. Also DeepSpeedCPUAdam alone on fp32 vectors of 2^24-2^28 elements (the host's optimizer rate).

Needs DeepSpeed 0.14 importable and a CUDA GPU. Measured with DeepSpeed 0.14.4 (0.14.0's elastic agent does not import
under PyTorch 2.11; 0.14.4's does), its Python package taken from the v0.14.4 tag with no op prebuilt: cpu_adam is
built on first use with the host's compiler; pydantic 1.10 and hjson beside it. Each case runs in a process of its
own: DeepSpeed keeps an engine's GPU memory until its process ends. Prints CSV on stdout:
hidden,ffn_hidden,heads,layers,seq_len,micro_batch,params,mode,stage,offload,modules,wall_ms,forward_ms,backward_ms,step_ms,deepspeed,torch,device
and, after a blank line, `elements,threads,step_ms,ns_per_element,deepspeed,torch,cpu`.

    python3 ds_steps.py [--steps 6] [--warmup 3] [--smoke] [--configs HxFxNxLxSxB,...] [--modes z3,...]
"""
import argparse
import os
import sys
import time

import torch

from torch_timing import VOCAB, cpu_name, llama, median

# (hidden, ffn_hidden, heads, layers, seq_len, micro_batch)
CONFIGS = [(1024, 2816, 8, 8, 2048, 1), (2048, 5632, 16, 8, 2048, 1), (4096, 11008, 32, 4, 2048, 1),
           (4096, 11008, 32, 8, 2048, 1), (2048, 5632, 16, 8, 4096, 2)]
SMOKE_CONFIGS = [(256, 688, 4, 2, 256, 1)]
# mode: (ZeRO stage, optimizer offload, parameter offload); stage None is the plain PyTorch step
MODES = {"plain": (None, False, False), "z1": (1, False, False), "z2": (2, False, False), "z3": (3, False, False),
         "z2_offload": (2, True, False), "z3_offload": (3, True, False), "z3_offload_param": (3, True, True)}


def ds_config(stage, offload_opt, offload_param, mb):
    zero = {"stage": stage}
    if offload_opt:
        zero["offload_optimizer"] = {"device": "cpu", "pin_memory": True}
    if offload_param:
        zero["offload_param"] = {"device": "cpu", "pin_memory": True}
    conf = {"train_micro_batch_size_per_gpu": mb, "gradient_accumulation_steps": 1, "bf16": {"enabled": True},
            "zero_optimization": zero, "steps_per_print": 1 << 30, "wall_clock_breakdown": False}
    if offload_opt:  # DeepSpeedCPUAdam, as DeepSpeed requires for an offloaded optimizer
        conf["optimizer"] = {"type": "AdamW", "params": {"lr": 1e-5}}
    return conf


def timed(f):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    r = f()
    torch.cuda.synchronize()
    return r, (time.perf_counter() - t0) * 1e3


def run(cfg, mode, steps, warmup):
    import deepspeed
    stage, offload_opt, offload_param = MODES[mode]
    model = llama(cfg)
    model.train()
    params = sum(p.numel() for p in model.parameters())
    modules = sum(1 for _ in model.modules())
    _, _, _, _, seq, mb = cfg
    ids = torch.randint(0, VOCAB, (mb, seq), device="cuda")
    if stage is None:
        engine = model
        opt = torch.optim.AdamW(model.parameters(), lr=1e-5, fused=True)
        fwd = lambda: model(input_ids=ids, labels=ids).loss  # noqa: E731
        bwd = lambda loss: loss.backward()  # noqa: E731

        def stp():
            opt.step()
            opt.zero_grad(set_to_none=True)
    else:
        conf = ds_config(stage, offload_opt, offload_param, mb)
        client = None if offload_opt else torch.optim.AdamW(model.parameters(), lr=1e-5, fused=True)
        engine, opt, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(), optimizer=client,
                                                 config=conf)
        fwd = lambda: engine(input_ids=ids, labels=ids).loss  # noqa: E731
        bwd = lambda loss: engine.backward(loss)  # noqa: E731
        stp = lambda: engine.step()  # noqa: E731
    f_ms, b_ms, s_ms, w_ms = [], [], [], []
    for i in range(warmup + steps):
        loss, f = timed(fwd)
        _, b = timed(lambda: bwd(loss))
        _, s = timed(stp)
        if i >= warmup:
            f_ms.append(f)
            b_ms.append(b)
            s_ms.append(s)
            w_ms.append(f + b + s)
    del engine, opt, model, ids
    torch.cuda.empty_cache()
    return params, modules, median(w_ms), median(f_ms), median(b_ms), median(s_ms)


def cpu_adam_rows(sizes, ds_version):
    from deepspeed.ops.adam import DeepSpeedCPUAdam
    out = []
    cpu = cpu_name()
    for n in sizes:
        p = torch.nn.Parameter(torch.randn(n, dtype=torch.float32))
        p.grad = torch.randn(n, dtype=torch.float32)
        opt = DeepSpeedCPUAdam([p], lr=1e-5, adamw_mode=True)
        times = []
        for i in range(5):
            t0 = time.perf_counter()
            opt.step()
            t = (time.perf_counter() - t0) * 1e3
            if i >= 1:
                times.append(t)
        ms = median(times)
        out.append(f"{n},{torch.get_num_threads()},{ms:.4f},{ms * 1e6 / n:.4f},{ds_version},{torch.__version__},"
                   f"\"{cpu}\"")
        del opt, p
    return out


def case_row(cfg, mode, steps, warmup, ds_version):
    stage, oo, op = MODES[mode]
    params, modules, w, f, b, s = run(cfg, mode, steps, warmup)
    h, ffn, heads, layers, seq, mb = cfg
    offload = "param+optimizer" if op else ("optimizer" if oo else "none")
    return (f"{h},{ffn},{heads},{layers},{seq},{mb},{params},{mode},{stage if stage else 0},{offload},{modules},"
            f"{w:.3f},{f:.3f},{b:.3f},{s:.3f},{ds_version},{torch.__version__},{torch.cuda.get_device_name()}")


def child(args, a):
    """One case in this process (DeepSpeed keeps its engines, and their GPU memory, alive until the process ends)."""
    import logging
    import deepspeed
    from deepspeed.utils import logger
    logger.setLevel(logging.ERROR)  # DeepSpeed logs its configuration on stdout, where the CSV goes
    deepspeed.init_distributed(dist_backend="nccl", verbose=False)
    if args[0] == "cpu_adam":
        for line in cpu_adam_rows([int(x) for x in args[1:]], deepspeed.__version__):
            print(line, flush=True)
        return 0
    cfg = tuple(int(x) for x in args[0].split("x"))
    print(case_row(cfg, args[1], a.steps, a.warmup, deepspeed.__version__), flush=True)
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--smoke", action="store_true", help="one tiny model, every mode, two steps")
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--configs", default="", help="HIDDENxFFNxHEADSxLAYERSxSEQxMB,... (default: the built-in list)")
    ap.add_argument("--timeout", type=float, default=300, help="seconds per case")
    ap.add_argument("--no-cpu-adam", action="store_true", help="leave out DeepSpeedCPUAdam's own rows")
    ap.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if not torch.cuda.is_available():
        print("ds_steps.py: no GPU visible to PyTorch", file=sys.stderr)
        return 1
    for k, v in (("MASTER_ADDR", "127.0.0.1"), ("MASTER_PORT", "29512"), ("RANK", "0"), ("LOCAL_RANK", "0"),
                 ("WORLD_SIZE", "1")):
        os.environ.setdefault(k, v)
    torch.cuda.set_device(0)
    if a.child:
        return child(a.child, a)
    import subprocess
    if a.configs:
        configs = [tuple(int(x) for x in c.split("x")) for c in a.configs.split(",")]
    else:
        configs = SMOKE_CONFIGS if a.smoke else CONFIGS
    steps, warmup = (2, 1) if a.smoke else (a.steps, a.warmup)

    def spawn(args):
        cmd = [sys.executable, os.path.abspath(__file__), "--steps", str(steps), "--warmup", str(warmup), "--child"]
        try:
            r = subprocess.run(cmd + args, stdout=subprocess.PIPE, text=True, timeout=a.timeout)
        except subprocess.TimeoutExpired:
            print(f"ds_steps.py: {args}: over {a.timeout:.0f} s", file=sys.stderr, flush=True)
            return 1
        rows = [line for line in r.stdout.splitlines() if line[:1].isdigit()]
        for line in rows:
            print(line, flush=True)
        if r.returncode != 0 or not rows:
            print(f"ds_steps.py: {args}: failed (exit {r.returncode})", file=sys.stderr, flush=True)
            return 1
        return 0

    failed = 0
    if a.modes:
        print("hidden,ffn_hidden,heads,layers,seq_len,micro_batch,params,mode,stage,offload,modules,wall_ms,"
              "forward_ms,backward_ms,step_ms,deepspeed,torch,device", flush=True)
        for cfg in configs:
            for mode in a.modes.split(","):
                failed += spawn(["x".join(str(x) for x in cfg), mode])
        print()
    if a.no_cpu_adam:
        return 1 if failed else 0
    print("elements,threads,step_ms,ns_per_element,deepspeed,torch,cpu", flush=True)
    sizes = [1 << 20] if a.smoke else [1 << 24, 1 << 26, 1 << 28]
    failed += spawn(["cpu_adam"] + [str(n) for n in sizes])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
