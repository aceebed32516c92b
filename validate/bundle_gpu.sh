#!/bin/sh
# `make gpu-bundle`: a self-contained copy of the GPU validation for a GPU node that has the NVIDIA driver and a
# CUDA 13 runtime with cuBLAS (a CUDA toolkit, or PyTorch's nvidia-* wheels) but none of shardsim's build
# dependencies: cluster compute nodes usually have no compiler packages or package registry. Built on a Debian
# machine with nvcc (the CUDA kernels for sm_90), it holds
#   bin/      shardsim, shardsim-validate and the kernel test programs
#   lib/      every shared library they load that a bare GPU node may lack (yaml-cpp, fmt, Boost, SimGrid, zfp,
#             libcsv, the CUDA runtime, ...): not the C library, libstdc++ or the driver, which the node has and
#             which must match its kernel and driver; not cuBLAS (hundreds of MB), found on the node at run time
#   validate/torch_baseline.py
#   run.sh    what `make validate-gpu` does, with these binaries: the GPU parity tests, the harness with the
#             PyTorch baselines, the results and their calibration under the directory given
# Copy the directory to the node and run `sh BUNDLE/run.sh OUTDIR`.
set -eu
BUILD=${BUILD:-build}
DEST=${DEST:-$BUILD/gpu-bundle}
[ -f "$BUILD/build.ninja" ] || cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build "$BUILD" -j "$(nproc)" --target shardsim shardsim-validate kernels_test kernels_cuda_test
[ -x "$BUILD/tests/kernels_cuda_test" ] || { echo "gpu-bundle: no CUDA build (nvcc not found by CMake)" >&2; exit 1; }
rm -rf "$DEST"
mkdir -p "$DEST/bin" "$DEST/lib" "$DEST/validate"
programs="$BUILD/shardsim $BUILD/shardsim-validate $BUILD/tests/kernels_test $BUILD/tests/kernels_cuda_test"
cp $programs "$DEST/bin/"
cp validate/torch_baseline.py "$DEST/validate/"
# Libraries the node provides itself (its C library, compiler runtime and driver) or that are found there.
keep_out='^(linux-vdso|ld-linux|libc\.|libm\.|libdl\.|libpthread\.|librt\.|libutil\.|libstdc\+\+\.|libgcc_s\.|libcuda\.|libcublas|libcublasLt)'
for p in $programs; do
  ldd "$p" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}'
done | sort -u | while read -r name path; do
  if ! echo "$name" | grep -Eq "$keep_out"; then cp -L "$path" "$DEST/lib/$name"; fi
done
cat >"$DEST/run.sh" <<'EOF'
#!/bin/sh
# The GPU validation from this bundle: sh run.sh OUTDIR (see validate/bundle_gpu.sh in shardsim).
set -u
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-results}
mkdir -p "$out"
# cuBLAS of the node: a CUDA toolkit's, else PyTorch's wheel.
blas=$(find /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local /opt /usr/lib -name 'libcublas.so.13*' 2>/dev/null | head -n 1)
[ -n "$blas" ] || { echo "run.sh: no libcublas.so.13 on this machine" >&2; exit 1; }
export LD_LIBRARY_PATH="$here/lib:$(dirname "$blas")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
{
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv
  python3 -c "import torch; print('torch', torch.__version__, 'CUDA', torch.version.cuda)" 2>&1
  nvcc --version 2>/dev/null | tail -n 1
  uname -r
} | tee "$out/environment.txt"
status=0
# The CPU kernels' tests, then the GPU parity tests (GPU against the CPU reference), into tests.log.
"$here/bin/kernels_test" --gtest_brief=1 >"$out/tests.log" 2>&1 || status=1
if ! "$here/bin/kernels_cuda_test" >>"$out/tests.log" 2>&1; then
  status=1
  # Where a parity test fails, the same tests under compute-sanitizer name the faulting access, if any.
  if command -v compute-sanitizer >/dev/null; then
    compute-sanitizer --print-limit 20 "$here/bin/kernels_cuda_test" >>"$out/tests.log" 2>&1
  fi
fi
grep -E '^\[ +(FAILED|PASSED|OK) ' "$out/tests.log" | head -n 60
device=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1 | tr ' ' '-' | tr -cd 'A-Za-z0-9-')
stem="$out/$device-$(date -u +%Y-%m-%d)"
torch=""
if python3 -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
  torch="--torch $here/validate/torch_baseline.py"
fi
driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -n 1)
torch_version=$(python3 -c "import torch; print(torch.__version__)" 2>/dev/null || echo none)
# cuDNN's version decides which attention kernel an unforced scaled_dot_product_attention runs on Hopper.
cudnn_version=$(python3 -c "import torch; print(torch.backends.cudnn.version())" 2>/dev/null || echo none)
# The backend scaled_dot_product_attention picks when left to choose (causal bf16, head dim 128, 2,048 tokens).
sdpa_default=$(python3 -c "import torch; q = torch.randn(1, 8, 2048, 128, device='cuda', dtype=torch.bfloat16); \
print(torch.nn.attention.SDPBackend(torch._fused_sdp_choice(q, q, q, is_causal=True)).name)" 2>/dev/null || echo unknown)
# shellcheck disable=SC2086
"$here/bin/shardsim-validate" bench --max-size "${MAX_SIZE:-1GiB}" --seconds "${SECONDS_PER_POINT:-0.05}" $torch \
  --environment "nvidia_driver=$driver" --environment "torch=$torch_version" --environment "cudnn=$cudnn_version" \
  --environment "sdpa_default=$sdpa_default" --environment "kernel=$(uname -r)" \
  -o "$stem.yaml" >"$out/bench-summary.txt" 2>"$out/bench.log" || status=1
cat "$out/bench-summary.txt"
"$here/bin/shardsim" calibrate "$stem.yaml" -o "$stem.calibration.yaml" >"$out/calibrate.txt" 2>&1 || status=1
exit $status
EOF
chmod +x "$DEST/run.sh"
du -sh "$DEST"
