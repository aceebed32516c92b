#!/bin/sh
# The GPU validation in one command (`make validate-gpu`), for a machine with an NVIDIA GPU, nvcc and the build
# dependencies already present (it installs nothing): builds, runs the GPU-vs-CPU parity tests, runs the
# harness up to 1 GiB (with the PyTorch baselines when PyTorch is importable), and writes
#   validate/results/<device>-<date>.yaml              the measurements, device, driver and date
#   validate/results/<device>-<date>.calibration.yaml  the fit `shardsim run --calibration` uses
set -eu
BUILD=${BUILD:-build}
OUT=${OUT:-validate/results}
[ -f "$BUILD/build.ninja" ] || cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build "$BUILD" -j "$(nproc)"
"$BUILD/tests/kernels_cuda_test"
device=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1 | tr ' ' '-' | tr -cd 'A-Za-z0-9-')
stem="$OUT/$device-$(date -u +%Y-%m-%d)"
torch=""
if python3 -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
  torch="--torch validate/torch_baseline.py"
fi
mkdir -p "$OUT"
# shellcheck disable=SC2086
driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -n 1)
torch_version=$(python3 -c "import torch; print(torch.__version__)" 2>/dev/null || echo none)
# cuDNN's version decides which attention kernel an unforced scaled_dot_product_attention runs on Hopper.
cudnn_version=$(python3 -c "import torch; print(torch.backends.cudnn.version())" 2>/dev/null || echo none)
# The backend scaled_dot_product_attention picks when left to choose (causal bf16, head dim 128, 2,048 tokens).
sdpa_default=$(python3 -c "import torch; q = torch.randn(1, 8, 2048, 128, device='cuda', dtype=torch.bfloat16); \
print(torch.nn.attention.SDPBackend(torch._fused_sdp_choice(q, q, q, is_causal=True)).name)" 2>/dev/null || echo unknown)
"$BUILD/shardsim-validate" bench --max-size 1GiB --seconds 0.05 $torch --environment "nvidia_driver=$driver" \
  --environment "torch=$torch_version" --environment "cudnn=$cudnn_version" \
  --environment "sdpa_default=$sdpa_default" --environment "kernel=$(uname -r)" \
  -o "$stem.yaml"
"$BUILD/shardsim" calibrate "$stem.yaml" -o "$stem.calibration.yaml"
