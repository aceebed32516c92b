// Flat partitioning on the GPU, one source for CUDA and HIP. A thread per element of the flat buffer's slice
// finds its tensor by binary search over the tensors' offsets (tensors are separate allocations, passed as a
// device array of pointers). Grid-stride loops with 64-bit indices.
#include "kernels/gpu/partition_gpu.hpp"

#include <cstdint>
#include <memory>

#include "kernels/gpu/gpu_compat.hpp"
#include "kernels/flat_layout.hpp"
#include "kernels/kernel_error.hpp"

namespace shardsim::kernels::gpu {
namespace {

// The CPU backend's layout, with the total appended to the offsets (the device's binary search needs the end).
struct Layout {
  FlatLayout flat;
  std::vector<std::uint64_t> bounds;  // tensor starts, then the total
};

Layout layout_of(const std::vector<std::size_t>& sizes, std::size_t world, std::size_t alignment) {
  Layout l{flat_layout(sizes, world, alignment), {}};
  l.bounds.assign(l.flat.offsets.begin(), l.flat.offsets.end());
  l.bounds.push_back(l.flat.total);
  return l;
}

// The tensor holding flat element g: the last t with offsets[t] <= g (offsets has count + 1 entries).
__device__ std::uint64_t tensor_of(const std::uint64_t* offsets, std::uint64_t count, std::uint64_t g) {
  std::uint64_t lo = 0, hi = count;  // answer in [lo, hi)
  while (hi - lo > 1) {
    const std::uint64_t mid = lo + (hi - lo) / 2;
    if (offsets[mid] <= g) lo = mid; else hi = mid;
  }
  return lo;
}

__global__ void flatten(const float* const* tensors, const std::uint64_t* offsets, std::uint64_t count,
                        std::uint64_t total, std::uint64_t first, std::uint64_t len, float* out) {
  const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  for (std::uint64_t j = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < len; j += stride) {
    const std::uint64_t g = first + j;
    if (g >= total) {
      out[j] = 0.0f;  // padding
      continue;
    }
    const std::uint64_t t = tensor_of(offsets, count, g);
    out[j] = tensors[t][g - offsets[t]];
  }
}

__global__ void scatter(const float* flat, const std::uint64_t* offsets, std::uint64_t count, std::uint64_t total,
                        float* const* tensors) {
  const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  for (std::uint64_t g = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; g < total; g += stride) {
    const std::uint64_t t = tensor_of(offsets, count, g);
    tensors[t][g - offsets[t]] = flat[g];
  }
}

__global__ void slice(const float* flat, std::uint64_t first, std::uint64_t len, float* out) {
  const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  for (std::uint64_t j = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < len; j += stride) {
    out[j] = flat[first + j];
  }
}

template <class T>
void upload(DeviceBuffer<T>& d, const T* host, std::size_t count) {
  if (count > 0) SHARDSIM_GPU_CHECK(gpuMemcpy(d.ptr, host, count * sizeof(T), gpuMemcpyHostToDevice));
}

}  // namespace

std::vector<float> flatten_shard_on_device(const std::vector<std::vector<float>>& tensors, std::size_t world,
                                           std::size_t alignment, std::size_t rank) {
  std::vector<std::size_t> sizes;
  for (const auto& t : tensors) sizes.push_back(t.size());
  const Layout l = layout_of(sizes, world, alignment);
  if (rank >= world) throw KernelError("rank outside the world");
  const std::size_t shard = l.flat.shard;
  std::vector<float> out(shard, 0.0f);
  if (shard == 0) return out;
  std::vector<std::unique_ptr<DeviceBuffer<float>>> owned;  // one allocation per tensor, as parameters are
  std::vector<const float*> ptrs;
  for (const auto& t : tensors) {
    owned.push_back(std::make_unique<DeviceBuffer<float>>(t.size()));
    upload(*owned.back(), t.data(), t.size());
    ptrs.push_back(owned.back()->ptr);
  }
  DeviceBuffer<const float*> d_ptrs(ptrs.size());
  upload(d_ptrs, ptrs.data(), ptrs.size());
  DeviceBuffer<std::uint64_t> d_bounds(l.bounds.size());
  upload(d_bounds, l.bounds.data(), l.bounds.size());
  DeviceBuffer<float> d_out(shard);
  flatten<<<grid_for(shard), kThreads>>>(d_ptrs.ptr, d_bounds.ptr, tensors.size(), l.flat.total, rank * shard, shard,
                                         d_out.ptr);
  SHARDSIM_GPU_CHECK(gpuGetLastError());
  SHARDSIM_GPU_CHECK(gpuMemcpy(out.data(), d_out.ptr, shard * sizeof(float), gpuMemcpyDeviceToHost));
  return out;
}

std::vector<std::vector<float>> gather_shards_on_device(const std::vector<float>& gathered,
                                                        const std::vector<std::size_t>& sizes, std::size_t world,
                                                        std::size_t alignment) {
  const Layout l = layout_of(sizes, world, alignment);
  if (gathered.size() < l.flat.padded) throw KernelError("shard input too small");
  std::vector<std::vector<float>> out;
  for (std::size_t s : sizes) out.emplace_back(s, 0.0f);
  if (l.flat.total == 0) return out;
  std::vector<std::unique_ptr<DeviceBuffer<float>>> owned;
  std::vector<float*> ptrs;
  for (std::size_t s : sizes) {
    owned.push_back(std::make_unique<DeviceBuffer<float>>(s));
    ptrs.push_back(owned.back()->ptr);
  }
  DeviceBuffer<float> d_flat(l.flat.padded);
  upload(d_flat, gathered.data(), l.flat.padded);
  DeviceBuffer<float*> d_ptrs(ptrs.size());
  upload(d_ptrs, ptrs.data(), ptrs.size());
  DeviceBuffer<std::uint64_t> d_bounds(l.bounds.size());
  upload(d_bounds, l.bounds.data(), l.bounds.size());
  scatter<<<grid_for(l.flat.total), kThreads>>>(d_flat.ptr, d_bounds.ptr, sizes.size(), l.flat.total, d_ptrs.ptr);
  SHARDSIM_GPU_CHECK(gpuGetLastError());
  for (std::size_t t = 0; t < sizes.size(); ++t) {
    if (sizes[t] > 0) {
      SHARDSIM_GPU_CHECK(gpuMemcpy(out[t].data(), ptrs[t], sizes[t] * sizeof(float), gpuMemcpyDeviceToHost));
    }
  }
  return out;
}

std::vector<float> secondary_shard_on_device(const std::vector<float>& gathered, const std::vector<std::size_t>& sizes,
                                             std::size_t world, std::size_t alignment, std::size_t group,
                                             std::size_t local_rank) {
  const Layout l = layout_of(sizes, world, alignment);
  if (group == 0 || world % group != 0) throw KernelError("the secondary group must divide the world");
  if (local_rank >= group) throw KernelError("local rank outside the group");
  if (gathered.size() < l.flat.padded) throw KernelError("shard input too small");
  const std::uint64_t size = l.flat.padded / group;
  std::vector<float> out(size, 0.0f);
  if (size == 0) return out;
  DeviceBuffer<float> d_flat(l.flat.padded), d_out(size);
  upload(d_flat, gathered.data(), l.flat.padded);
  slice<<<grid_for(size), kThreads>>>(d_flat.ptr, local_rank * size, size, d_out.ptr);
  SHARDSIM_GPU_CHECK(gpuGetLastError());
  SHARDSIM_GPU_CHECK(gpuMemcpy(out.data(), d_out.ptr, size * sizeof(float), gpuMemcpyDeviceToHost));
  return out;
}

}  // namespace shardsim::kernels::gpu
