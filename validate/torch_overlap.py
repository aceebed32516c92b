#!/usr/bin/env python3
"""How much a GEMM slows down while a communication-like kernel runs beside it on the same GPU, and how much
of its bandwidth that kernel keeps: the interference the compute model needs where collectives overlap compute.

NCCL and RCCL move data with kernels of one block per channel (up to 32; 512 threads on NVIDIA) that stream
through HBM. Here the same is emulated on one GPU (NCCL cannot run two ranks on one device): a copy kernel of
`blocks` blocks of 512 threads (CuPy, on its own stream) runs while bf16 GEMMs of transformer shapes run on
another stream (PyTorch / cuBLAS); also a device-to-device cudaMemcpyAsync. Times are
CUDA events; each figure the median of repetitions. Prints CSV on stdout:
m,n,k,interferer,blocks,sleep_ns,gemm_alone_us,gemm_with_us,slowdown,copy_alone_GBps,copy_with_GBps,device
(copy bandwidths count bytes read + written)."""
import sys

import cupy
import torch

from torch_timing import Gemms

SHAPES = [(4096, 4096, 4096), (8192, 11008, 4096), (16384, 5120, 5120), (8192, 8192, 8192)]
# (blocks, nanoseconds each thread waits after each 16-byte chunk): unthrottled channels, and channels held to a
# link's pace (roughly 100 and 25 GB/s of HBM traffic at 16 blocks).
VARIANTS = [(4, 0), (8, 0), (16, 0), (32, 0), (16, 1000), (16, 4000), (32, 4000)]
THREADS = 512
COPY_BYTES = 256 * 2**20

KERNEL = cupy.RawKernel(r"""
extern "C" __global__ void copy(const float4* __restrict__ src, float4* __restrict__ dst, unsigned long long n,
                                int reps, unsigned sleep_ns) {
  for (int r = 0; r < reps; ++r)
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x) {
      dst[i] = src[i];
      if (sleep_ns) __nanosleep(sleep_ns);  // a link-bound channel: the kernel waits on the wire between chunks
    }
}
""", "copy")


def events():
    return torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)


def main():
    if not torch.cuda.is_available():
        print("torch_overlap.py: no GPU", file=sys.stderr)
        return 1
    dev = torch.cuda.get_device_name()
    s_gemm, s_comm = torch.cuda.Stream(), torch.cuda.Stream()
    src = torch.randn(COPY_BYTES // 4, device="cuda")
    dst = torch.empty_like(src)
    c_src, c_dst = cupy.from_dlpack(src), cupy.from_dlpack(dst)
    comm = cupy.cuda.ExternalStream(s_comm.cuda_stream)  # deprecated in newer CuPy, still there in 14

    def copied(sleep_ns):  # bytes one pass copies: a throttled channel passes over 1/16 of the buffer
        return COPY_BYTES if sleep_ns == 0 else COPY_BYTES // 16

    def launch_copy(kind, blocks, reps, sleep_ns=0):
        if kind == "sm_copy":
            with comm:
                KERNEL((blocks,), (THREADS,),
                       (c_src, c_dst, cupy.uint64(copied(sleep_ns) // 16), cupy.int32(reps), cupy.uint32(sleep_ns)))
        else:  # cudaMemcpyAsync device to device
            with torch.cuda.stream(s_comm):
                for _ in range(reps):
                    dst.copy_(src, non_blocking=True)

    def copy_time(kind, blocks, reps, sleep_ns=0):
        a, b = events()
        a.record(s_comm)
        launch_copy(kind, blocks, reps, sleep_ns)
        b.record(s_comm)
        b.synchronize()
        return a.elapsed_time(b) * 1e-3

    print("m,n,k,interferer,blocks,sleep_ns,gemm_alone_us,gemm_with_us,slowdown,copy_alone_GBps,copy_with_GBps,device")
    for m, n, k in SHAPES:
        g = Gemms(m, n, k, s_gemm)
        g.warm_up()
        gemms = g.launch
        a, b = gemms(20)
        b.synchronize()
        alone = a.elapsed_time(b) * 1e-3 / 20
        for kind, variants in (("sm_copy", VARIANTS), ("memcpy_async", [(0, 0)])):
            for blocks, sleep_ns in variants:
                one = copy_time(kind, blocks, 1, sleep_ns)  # one pass over the buffer, alone
                copy_alone = 2 * copied(sleep_ns) / one
                # GEMMs while the copy runs throughout: the copy is sized to outlast 20 GEMMs twice over.
                reps = max(1, int(2 * 20 * alone / one) + 1)
                torch.cuda.synchronize()
                launch_copy(kind, blocks, reps, sleep_ns)
                a, b = gemms(20)
                b.synchronize()
                torch.cuda.synchronize()
                with_copy = a.elapsed_time(b) * 1e-3 / 20
                # The copy while GEMMs run throughout it.
                count = max(2, int(2 * reps * one / alone) + 2)
                gemms(count)
                t = copy_time(kind, blocks, reps, sleep_ns)
                torch.cuda.synchronize()
                copy_with = 2 * copied(sleep_ns) * reps / t
                print(f"{m},{n},{k},{kind},{blocks},{sleep_ns},{alone * 1e6:.3f},{with_copy * 1e6:.3f},{with_copy / alone:.4f},"
                      f"{copy_alone / 1e9:.1f},{copy_with / 1e9:.1f},{dev}", flush=True)
        del g, gemms
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
