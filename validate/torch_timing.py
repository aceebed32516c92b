"""Timing of whole training steps, and the LLaMA-shaped models they time, for the measurement scripts beside this
file (torch_step.py, torch_fsdp.py, ds_steps.py); GEMMs on a stream of their own, to time beside other work
(torch_overlap.py, torch_hostlink.py); the host CPU's name for their CSV rows."""
import time

import torch


VOCAB = 32000


def llama(cfg):
    """A Hugging Face LLaMA of (hidden, ffn_hidden, heads, layers, seq_len, ...) in bf16 on the GPU: full
    multi-head attention, untied embeddings, PyTorch's scaled_dot_product_attention, seeded."""
    from transformers import LlamaConfig, LlamaForCausalLM
    hidden, ffn, heads, layers, seq = cfg[:5]
    conf = LlamaConfig(hidden_size=hidden, intermediate_size=ffn, num_attention_heads=heads,
                       num_key_value_heads=heads, num_hidden_layers=layers, vocab_size=VOCAB,
                       max_position_embeddings=seq, tie_word_embeddings=False, attn_implementation="sdpa")
    torch.manual_seed(0)
    return LlamaForCausalLM(conf).to(device="cuda", dtype=torch.bfloat16)


def cpu_name(default=""):
    """The host CPU's model name as /proc/cpuinfo gives it (`default` where it cannot be read)."""
    try:
        with open("/proc/cpuinfo") as f:
            return next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), default)
    except OSError:
        return default


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


class Gemms:
    """bf16 GEMMs (m x k) @ (k x n) through PyTorch (cuBLAS) on `stream`, to run beside other work."""

    def __init__(self, m, n, k, stream):
        self.A = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        self.B = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
        self.C = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
        self.stream = stream

    def launch(self, count):
        """Launches `count` GEMMs one after the other; returns the CUDA events recorded around them."""
        with torch.cuda.stream(self.stream):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record(self.stream)
            for _ in range(count):
                torch.matmul(self.A, self.B, out=self.C)
            b.record(self.stream)
        return a, b

    def warm_up(self):
        """Three batches of five, then the device idle: cuBLAS's heuristics and the clocks settled."""
        for _ in range(3):
            self.launch(5)
        torch.cuda.synchronize()
