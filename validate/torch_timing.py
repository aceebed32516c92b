"""Timing of whole training steps for the measurement scripts beside this file (torch_step.py, torch_fsdp.py)."""
import time

import torch


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2]


def time_steps(model, opt, ids, steps, warmup):
    """Runs warmup + steps training steps of a Hugging Face causal LM on `ids` (forward with the loss, backward,
    optimizer step) and returns the medians over the measured steps, in ms: (wall, forward, backward, step). The
    GPU is idle when each step starts; forward, backward and step are CUDA-event spans, wall the host's clock
    around the whole step up to the GPU's end."""
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(4)]
    wall, fwd, bwd, stp = [], [], [], []
    for i in range(warmup + steps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        ev[0].record()
        loss = model(input_ids=ids, labels=ids).loss
        ev[1].record()
        loss.backward()
        ev[2].record()
        opt.step()
        opt.zero_grad(set_to_none=True)
        ev[3].record()
        ev[3].synchronize()
        t1 = time.perf_counter()
        if i >= warmup:
            wall.append((t1 - t0) * 1e3)
            fwd.append(ev[0].elapsed_time(ev[1]))
            bwd.append(ev[1].elapsed_time(ev[2]))
            stp.append(ev[2].elapsed_time(ev[3]))
    return median(wall), median(fwd), median(bwd), median(stp)
