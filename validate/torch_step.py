#!/usr/bin/env python3
"""Whole training steps of LLaMA-shaped models on one GPU, timed for the `h100-llama-steps` validation set.

Each configuration is a Hugging Face LlamaForCausalLM (random weights; RMSNorm, SwiGLU, rotary positions, no
biases, untied embeddings) in bf16 with PyTorch's scaled_dot_product_attention (its flash backend, causal), run
eagerly as the Hugging Face Trainer runs it: forward with the loss (logits upcast to fp32 for the cross-entropy),
backward, then a fused AdamW step over the bf16 parameters. Times are CUDA-event medians over the measured steps
after warm-up, per phase. Prints CSV on stdout:
hidden,ffn_hidden,heads,kv_heads,layers,vocab,seq_len,micro_batch,forward_ms,backward_ms,step_ms,torch,device

    python3 torch_step.py [--steps 10] [--warmup 3]
"""
import argparse
import sys

import torch

from torch_timing import time_steps

# (hidden, ffn_hidden, heads, kv_heads, layers): LLaMA-1B-like, LLaMA-7B and LLaMA-13B block shapes with fewer
# layers, so that one GPU holds the model, its gradients, Adam states and activations without recomputation.
CONFIGS = [(2048, 5632, 16, 16, 8), (4096, 11008, 32, 32, 8), (5120, 13824, 40, 40, 6)]
MICRO_BATCHES = [1, 2, 4, 8]
SEQ, VOCAB = 2048, 32000


def run(cfg, mb, steps, warmup, force_flash):
    from transformers import LlamaConfig, LlamaForCausalLM
    hidden, ffn, heads, kv, layers = cfg
    conf = LlamaConfig(hidden_size=hidden, intermediate_size=ffn, num_attention_heads=heads, num_key_value_heads=kv,
                       num_hidden_layers=layers, vocab_size=VOCAB, max_position_embeddings=SEQ,
                       tie_word_embeddings=False, attn_implementation="sdpa")
    torch.manual_seed(0)
    model = LlamaForCausalLM(conf).to(device="cuda", dtype=torch.bfloat16)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5, fused=True)
    ids = torch.randint(0, VOCAB, (mb, SEQ), device="cuda")
    import contextlib
    from torch.nn.attention import SDPBackend, sdpa_kernel
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION) if force_flash else contextlib.nullcontext():
        _, fwd, bwd, stp = time_steps(model, opt, ids, steps, warmup)
    del model, opt, ids
    torch.cuda.empty_cache()
    return fwd, bwd, stp


def count_kernels(cfg, mb):
    """GPU kernels one forward and one backward launch (torch.profiler), per layer: what an eager framework
    costs in launches."""
    from transformers import LlamaConfig, LlamaForCausalLM
    hidden, ffn, heads, kv, layers = cfg
    conf = LlamaConfig(hidden_size=hidden, intermediate_size=ffn, num_attention_heads=heads, num_key_value_heads=kv,
                       num_hidden_layers=layers, vocab_size=VOCAB, max_position_embeddings=SEQ,
                       tie_word_embeddings=False, attn_implementation="sdpa")
    model = LlamaForCausalLM(conf).to(device="cuda", dtype=torch.bfloat16)
    ids = torch.randint(0, VOCAB, (mb, SEQ), device="cuda")
    for _ in range(2):
        model(input_ids=ids, labels=ids).loss.backward()
    torch.cuda.synchronize()
    counts = []
    for phase in ("forward", "backward"):
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            if phase == "forward":
                loss = model(input_ids=ids, labels=ids).loss
            else:
                loss.backward()
            torch.cuda.synchronize()
        n = sum(1 for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA)
        counts.append(n)
    print(f"torch_step.py: kernels per step of {cfg} micro-batch {mb}: forward {counts[0]}, backward {counts[1]} "
          f"({layers} layers)", file=sys.stderr)
    del model


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    a = ap.parse_args()
    if not torch.cuda.is_available():
        print("torch_step.py: no GPU visible to PyTorch", file=sys.stderr)
        return 1
    name = torch.cuda.get_device_name()
    try:
        count_kernels(CONFIGS[0], 1)
        count_kernels((CONFIGS[0][0], CONFIGS[0][1], CONFIGS[0][2], CONFIGS[0][3], 2 * CONFIGS[0][4]), 1)
    except Exception as e:  # the count is informative only
        print(f"torch_step.py: kernel count failed: {e}", file=sys.stderr)
    torch.cuda.empty_cache()
    print("hidden,ffn_hidden,heads,kv_heads,layers,vocab,seq_len,micro_batch,forward_ms,backward_ms,step_ms,"
          "attention,torch,device")
    for cfg in CONFIGS:
        for mb in MICRO_BATCHES:
            attention = "flash"
            try:
                try:
                    f, b, s = run(cfg, mb, a.steps, a.warmup, True)
                except RuntimeError as e:  # the flash backend refused the call: PyTorch's own choice, noted
                    if isinstance(e, torch.OutOfMemoryError):
                        raise
                    print(f"torch_step.py: {cfg} micro-batch {mb}: flash refused ({e}); PyTorch's default", file=sys.stderr)
                    attention = "default"
                    f, b, s = run(cfg, mb, a.steps, a.warmup, False)
            except torch.OutOfMemoryError:
                print(f"torch_step.py: {cfg} micro-batch {mb}: out of memory", file=sys.stderr)
                torch.cuda.empty_cache()
                continue
            print(f"{cfg[0]},{cfg[1]},{cfg[2]},{cfg[3]},{cfg[4]},{VOCAB},{SEQ},{mb},{f:.4f},{b:.4f},{s:.4f},"
                  f"{attention},{torch.__version__},{name}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
