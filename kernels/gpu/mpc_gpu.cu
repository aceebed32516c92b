// MPC on the GPU, one source for CUDA and HIP (see mpc_gpu.hpp). The chunk transform is kernels/mpc_chunk.hpp,
// the CPU backend's own code. Scans are tiles of kScanTile values scanned in shared memory, then the tiles' sums
// scanned by one thread, then added back. Grid-stride loops with 64-bit indices.
#include "kernels/gpu/mpc_gpu.hpp"

#include "kernels/gpu/gpu_compat.hpp"
#include "kernels/kernel_error.hpp"
#include "kernels/mpc_chunk.hpp"

namespace shardsim::kernels::gpu {
namespace {

constexpr unsigned kScanTile = 1024;  // threads per scan block, one value each
constexpr unsigned kChunkWords = mpc::kChunk + 1;

// Scratch for the scans and the stream walk, kept between calls and grown when a call needs more: allocating
// and freeing device memory in every call synchronised the device and cost more than the kernels on small
// inputs (and sat inside the harness's timings). One caller at a time, as the device-pointer API documents.
class Arena {
 public:
  /** @brief At least `bytes` of device memory for this call; slices are handed out by take(). */
  void reserve(std::uint64_t bytes) {
    used_ = 0;
    if (bytes <= size_) return;
    if (ptr_) (void)gpuFree(ptr_);
    ptr_ = nullptr;
    size_ = 0;
    SHARDSIM_GPU_CHECK(gpuMalloc(reinterpret_cast<void**>(&ptr_), bytes));
    size_ = bytes;
  }
  template <class T>
  T* take(std::uint64_t count) {
    const std::uint64_t bytes = (count * sizeof(T) + 255) / 256 * 256;
    if (used_ + bytes > size_) throw KernelError("MPC scratch arena too small (internal error)");
    T* p = reinterpret_cast<T*>(ptr_ + used_);
    used_ += bytes;
    return p;
  }
  /** @brief Bytes take() needs for `count` values of `bytes_each`. */
  static std::uint64_t bytes_for(std::uint64_t count, std::uint64_t bytes_each) {
    return (count * bytes_each + 255) / 256 * 256;
  }

 private:
  std::uint8_t* ptr_ = nullptr;
  std::uint64_t size_ = 0, used_ = 0;
};

Arena& arena() {
  static Arena a;  // the process's: freed with the context at exit
  return a;
}

// Scratch an inclusive scan of n values of 8 bytes or less takes: every level's tile sums.
std::uint64_t scan_scratch(std::uint64_t n) {
  std::uint64_t bytes = 0;
  for (std::uint64_t tiles = (n + kScanTile - 1) / kScanTile; n > kScanTile; n = tiles, tiles = (n + kScanTile - 1) / kScanTile) {
    bytes += Arena::bytes_for(tiles, 8);
  }
  return bytes + Arena::bytes_for(1, 8);
}

// ---------------------------------------------------------------- inclusive scan, wrapping unsigned addition

template <class T>
__global__ void scan_tiles(T* data, std::uint64_t n, T* tile_sums) {
  __shared__ T s[kScanTile];
  const std::uint64_t i = static_cast<std::uint64_t>(blockIdx.x) * kScanTile + threadIdx.x;
  s[threadIdx.x] = i < n ? data[i] : T(0);
  __syncthreads();
  for (unsigned off = 1; off < kScanTile; off *= 2) {
    const T add = threadIdx.x >= off ? s[threadIdx.x - off] : T(0);
    __syncthreads();
    s[threadIdx.x] += add;
    __syncthreads();
  }
  if (i < n) data[i] = s[threadIdx.x];
  if (threadIdx.x == kScanTile - 1) tile_sums[blockIdx.x] = s[threadIdx.x];
}

// data[i] += the inclusive sum of the tiles before i's (tile_sums already scanned inclusively).
template <class T>
__global__ void add_tile_offsets(T* data, std::uint64_t n, const T* tile_sums) {
  const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  for (std::uint64_t i = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const std::uint64_t tile = i / kScanTile;
    if (tile > 0) data[i] += tile_sums[tile - 1];
  }
}

// In-place inclusive scan of n values on the device: tiles scanned in shared memory, the tiles' sums scanned the
// same way (recursively), then added back.
template <class T>
void inclusive_scan(T* data, std::uint64_t n) {
  if (n == 0) return;
  const std::uint64_t tiles = (n + kScanTile - 1) / kScanTile;
  struct Sums {
    T* ptr;
  } sums{arena().take<T>(tiles)};
  // Tiles beyond 65535 blocks: one launch per 65535 tiles.
  for (std::uint64_t first = 0; first < tiles; first += 65535) {
    const std::uint64_t count = tiles - first < 65535 ? tiles - first : 65535;
    const std::uint64_t lo = first * kScanTile;
    scan_tiles<T><<<static_cast<unsigned>(count), kScanTile>>>(data + lo, n - lo, sums.ptr + first);
    SHARDSIM_GPU_CHECK(gpuGetLastError());
  }
  if (tiles == 1) return;
  inclusive_scan(sums.ptr, tiles);
  add_tile_offsets<T><<<grid_for(n), kThreads>>>(data, n, sums.ptr);
  SHARDSIM_GPU_CHECK(gpuGetLastError());
}

// ---------------------------------------------------------------- compression

__device__ std::uint32_t bits_of(float f) { return __float_as_uint(f); }

__global__ void encode_chunks(const float* in, std::uint64_t n, std::uint64_t stride, std::uint32_t* words,
                              std::uint64_t* sizes) {
  const std::uint64_t chunks = (n + mpc::kChunk - 1) / mpc::kChunk;
  const std::uint64_t grid = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  for (std::uint64_t c = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; c < chunks; c += grid) {
    std::uint32_t m[mpc::kChunk];
    for (unsigned i = 0; i < mpc::kChunk; ++i) {
      const std::uint64_t k = c * mpc::kChunk + i;
      m[i] = 0;
      if (k < n) m[i] = mpc::fold(bits_of(in[k]) - (k >= stride ? bits_of(in[k - stride]) : 0u));
    }
    mpc::transpose(m);
    const std::uint32_t bitmap = mpc::nonzero_bitmap(m);
    std::uint32_t* w = words + c * kChunkWords;
    w[0] = bitmap;
    for (unsigned j = 0; j < mpc::kChunk; ++j) w[1 + j] = m[j];
    sizes[c] = 1 + static_cast<std::uint64_t>(__popc(bitmap));
  }
}

// `ends` holds the inclusive scan of the chunk sizes: chunk c starts at ends[c] - size(c).
__global__ void compact_chunks(const std::uint32_t* words, const std::uint64_t* ends, std::uint64_t chunks,
                               std::uint32_t* out) {
  const std::uint64_t grid = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  for (std::uint64_t c = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; c < chunks; c += grid) {
    const std::uint32_t* w = words + c * kChunkWords;
    const std::uint32_t bitmap = w[0];
    std::uint64_t pos = ends[c] - 1 - static_cast<std::uint64_t>(__popc(bitmap));
    out[pos++] = bitmap;
    for (unsigned j = 0; j < mpc::kChunk; ++j) {
      if ((bitmap >> j) & 1u) out[pos++] = w[1 + j];
    }
  }
}

// ---------------------------------------------------------------- decompression

// Chunk starts from the bitmaps. A chunk is 1 + popcount(bitmap) words, so where each starts depends on every
// chunk before it; the stream is walked in parallel by segments instead of once. A chunk
// starting in a segment begins within its first kChunkWords words (the chunk before is at most that long), so:
//   1. for every segment and every such entry offset, one thread walks the chunks from there to the segment's
//      end and notes where the walk leaves it (the entry offset of the next segment) and how many chunks it
//      started;
//   2. one thread follows the true entries from the stream's start, segment by segment (a few thousand steps
//      for a GiB instead of millions), giving each segment its entry offset and first chunk index;
//   3. every segment is walked again from its true entry, writing the chunk starts.
// *bad = 1 when the stream ends before the last chunk does. Steps 1 and 3 take a segment's words / ~25 dependent
// loads, step 2 one per segment: segments of about sqrt(32 x words) words balance the two (a 1 MiB stream: 64 of
// 4,096 words; a GiB: 2,048 of 131,072). Fixed 65,536-word segments took 1.7 ms on a 1 MiB stream.
std::uint64_t segment_words(std::uint64_t span) {
  std::uint64_t w = 1024;
  while (w * w < 32 * span) w *= 2;
  return w;
}

struct SegmentExit {
  std::uint32_t next_entry;  ///< offset into the next segment where the walk leaves this one
  std::uint32_t chunks;      ///< chunks started in this segment
};

__global__ void walk_segments(const std::uint32_t* stream, std::uint64_t size, std::uint64_t segment,
                              std::uint64_t segments, SegmentExit* exits) {
  const std::uint64_t work = segments * kChunkWords;
  const std::uint64_t grid = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  for (std::uint64_t t = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; t < work; t += grid) {
    const std::uint64_t seg = t / kChunkWords;
    const std::uint64_t end = (seg + 1) * segment;
    std::uint64_t pos = seg * segment + t % kChunkWords;
    std::uint32_t chunks = 0;
    while (pos < end && pos < size) {
      pos += 1 + static_cast<std::uint64_t>(__popc(stream[pos]));
      ++chunks;
    }
    exits[t] = SegmentExit{static_cast<std::uint32_t>(pos >= end ? pos - end : 0), chunks};
  }
}

// entries[s] = (entry offset of segment s, index of its first chunk), following the walks from offset 0.
__global__ void chain_segments(const SegmentExit* exits, std::uint64_t segments, std::uint64_t* entries) {
  std::uint64_t offset = 0, first = 0;
  for (std::uint64_t s = 0; s < segments; ++s) {
    entries[2 * s] = offset;
    entries[2 * s + 1] = first;
    const SegmentExit e = exits[s * kChunkWords + offset];
    first += e.chunks;
    offset = e.next_entry;
  }
}

__global__ void write_starts(const std::uint32_t* stream, std::uint64_t size, std::uint64_t chunks,
                             std::uint64_t segment, std::uint64_t segments, const std::uint64_t* entries,
                             std::uint64_t* starts, int* bad) {
  const std::uint64_t grid = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  for (std::uint64_t seg = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; seg < segments;
       seg += grid) {
    const std::uint64_t end = (seg + 1) * segment;
    std::uint64_t pos = seg * segment + entries[2 * seg];
    std::uint64_t c = entries[2 * seg + 1];
    while (pos < end && c < chunks) {
      if (pos >= size) {
        *bad = 1;
        return;
      }
      starts[c++] = pos;
      pos += 1 + static_cast<std::uint64_t>(__popc(stream[pos]));
    }
    // The segment holding the last chunk's start checks that the chunk ends inside the stream; a stream that
    // ends with chunks still to start is caught by the segment where the walk runs out.
    if (c == chunks && pos > size && (c > entries[2 * seg + 1])) *bad = 1;
    if (seg + 1 == segments && c < chunks) *bad = 1;
  }
}

void chunk_offsets(const std::uint32_t* stream, std::uint64_t size, std::uint64_t chunks, std::uint64_t* starts,
                   int* bad) {
  // Segments cover the words that chunk starts can occupy: the stream's size, bounded by the longest stream
  // `chunks` chunks can make (longer streams are refused by the walk).
  const std::uint64_t span = size < chunks * kChunkWords ? size : chunks * kChunkWords;
  const std::uint64_t segment = segment_words(span);
  const std::uint64_t segments = span / segment + 1;
  arena().reserve(Arena::bytes_for(segments * kChunkWords, sizeof(SegmentExit)) + Arena::bytes_for(2 * segments, 8));
  struct {
    SegmentExit* ptr;
  } exits{arena().take<SegmentExit>(segments * kChunkWords)};
  struct {
    std::uint64_t* ptr;
  } entries{arena().take<std::uint64_t>(2 * segments)};
  walk_segments<<<grid_for(segments * kChunkWords), kThreads>>>(stream, size, segment, segments, exits.ptr);
  SHARDSIM_GPU_CHECK(gpuGetLastError());
  chain_segments<<<1, 1>>>(exits.ptr, segments, entries.ptr);
  SHARDSIM_GPU_CHECK(gpuGetLastError());
  write_starts<<<grid_for(segments), kThreads>>>(stream, size, chunks, segment, segments, entries.ptr, starts, bad);
  SHARDSIM_GPU_CHECK(gpuGetLastError());
}

// Element k of stride class r = k % stride, position j = k / stride, sits at v = r * per + j of the
// class-major order in which the deltas are summed.
__device__ std::uint64_t class_major(std::uint64_t k, std::uint64_t stride, std::uint64_t per) {
  return (k % stride) * per + k / stride;
}

__global__ void decode_chunks(const std::uint32_t* stream, const std::uint64_t* starts, std::uint64_t n,
                              std::uint64_t stride, std::uint64_t per, std::uint32_t* deltas) {
  const std::uint64_t chunks = (n + mpc::kChunk - 1) / mpc::kChunk;
  const std::uint64_t grid = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  for (std::uint64_t c = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; c < chunks; c += grid) {
    std::uint64_t pos = starts[c];
    const std::uint32_t bitmap = stream[pos++];
    std::uint32_t m[mpc::kChunk];
    for (unsigned j = 0; j < mpc::kChunk; ++j) m[j] = ((bitmap >> j) & 1u) ? stream[pos++] : 0u;
    mpc::transpose(m);
    for (unsigned i = 0; i < mpc::kChunk; ++i) {
      const std::uint64_t k = c * mpc::kChunk + i;
      if (k < n) deltas[class_major(k, stride, per)] = mpc::unfold(m[i]);
    }
  }
}

// After the scan, sums[v] is the running sum over the class-major order; a class starts from zero.
__global__ void restore_values(const std::uint32_t* sums, std::uint64_t n, std::uint64_t stride, std::uint64_t per,
                               float* out) {
  const std::uint64_t grid = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  for (std::uint64_t k = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; k < n; k += grid) {
    const std::uint64_t r = k % stride;
    const std::uint64_t v = class_major(k, stride, per);
    const std::uint32_t before = r > 0 ? sums[r * per - 1] : 0u;
    out[k] = __uint_as_float(sums[v] - before);
  }
}

}  // namespace

std::uint64_t mpc_words_scratch(std::uint64_t n) { return (n + mpc::kChunk - 1) / mpc::kChunk * kChunkWords; }

std::uint64_t mpc_deltas_scratch(std::uint64_t n, std::size_t stride) {
  if (stride == 0) throw KernelError("MPC stride must be positive");
  return (n + stride - 1) / stride * stride;  // per class, as many positions as the first class has
}

void mpc_compress_device_ptrs(const float* in, std::uint64_t n, std::size_t stride, std::uint32_t* words,
                              std::uint64_t* ends, std::uint32_t* out) {
  if (stride == 0) throw KernelError("MPC stride must be positive");
  if (n == 0) return;
  const std::uint64_t chunks = (n + mpc::kChunk - 1) / mpc::kChunk;
  encode_chunks<<<grid_for(chunks), kThreads>>>(in, n, stride, words, ends);
  SHARDSIM_GPU_CHECK(gpuGetLastError());
  arena().reserve(scan_scratch(chunks));
  inclusive_scan(ends, chunks);
  compact_chunks<<<grid_for(chunks), kThreads>>>(words, ends, chunks, out);
  SHARDSIM_GPU_CHECK(gpuGetLastError());
}

namespace {

// Decoding once the chunk starts are known: deltas in class-major order, their scan, the values.
void decode_from_starts(const std::uint32_t* stream, std::uint64_t n, std::size_t stride, const std::uint64_t* starts,
                        std::uint32_t* deltas, float* out) {
  const std::uint64_t virtual_n = mpc_deltas_scratch(n, stride);
  const std::uint64_t chunks = (n + mpc::kChunk - 1) / mpc::kChunk;
  const std::uint64_t per = virtual_n / stride;
  SHARDSIM_GPU_CHECK(gpuMemset(deltas, 0, virtual_n * sizeof(std::uint32_t)));  // class tails stay zero
  decode_chunks<<<grid_for(chunks), kThreads>>>(stream, starts, n, stride, per, deltas);
  SHARDSIM_GPU_CHECK(gpuGetLastError());
  arena().reserve(scan_scratch(virtual_n));
  inclusive_scan(deltas, virtual_n);
  restore_values<<<grid_for(n), kThreads>>>(deltas, n, stride, per, out);
  SHARDSIM_GPU_CHECK(gpuGetLastError());
}

}  // namespace

void mpc_decompress_device_ptrs(const std::uint32_t* stream, std::uint64_t size, std::uint64_t n, std::size_t stride,
                                std::uint64_t* starts, std::uint32_t* deltas, int* bad, float* out) {
  (void)mpc_deltas_scratch(n, stride);  // validates the stride
  if (n == 0) return;
  chunk_offsets(stream, size, (n + mpc::kChunk - 1) / mpc::kChunk, starts, bad);
  decode_from_starts(stream, n, stride, starts, deltas, out);
}

std::vector<std::uint32_t> mpc_compress_on_device(const std::vector<float>& in, std::size_t stride) {
  if (stride == 0) throw KernelError("MPC stride must be positive");
  const std::uint64_t n = in.size();
  if (n == 0) return {};
  const std::uint64_t chunks = (n + mpc::kChunk - 1) / mpc::kChunk;
  DeviceBuffer<float> d_in(n);
  DeviceBuffer<std::uint32_t> words(mpc_words_scratch(n)), out(mpc_words_scratch(n));
  DeviceBuffer<std::uint64_t> ends(chunks);
  SHARDSIM_GPU_CHECK(gpuMemcpy(d_in.ptr, in.data(), n * sizeof(float), gpuMemcpyHostToDevice));
  mpc_compress_device_ptrs(d_in.ptr, n, stride, words.ptr, ends.ptr, out.ptr);
  std::uint64_t total = 0;
  SHARDSIM_GPU_CHECK(gpuMemcpy(&total, ends.ptr + (chunks - 1), sizeof total, gpuMemcpyDeviceToHost));
  std::vector<std::uint32_t> stream(total);
  SHARDSIM_GPU_CHECK(gpuMemcpy(stream.data(), out.ptr, total * sizeof(std::uint32_t), gpuMemcpyDeviceToHost));
  return stream;
}

void mpc_decompress_on_device(const std::vector<std::uint32_t>& stream, std::size_t stride, std::vector<float>& out) {
  const std::uint64_t virtual_n = mpc_deltas_scratch(out.size(), stride);  // validates the stride
  const std::uint64_t n = out.size();
  if (n == 0) return;
  const std::uint64_t chunks = (n + mpc::kChunk - 1) / mpc::kChunk;
  DeviceBuffer<std::uint32_t> d_stream(stream.size() > 0 ? stream.size() : 1), deltas(virtual_n);
  DeviceBuffer<std::uint64_t> starts(chunks);
  DeviceBuffer<int> bad(1);
  DeviceBuffer<float> d_out(n);
  if (!stream.empty()) {
    SHARDSIM_GPU_CHECK(gpuMemcpy(d_stream.ptr, stream.data(), stream.size() * sizeof(std::uint32_t),
                                 gpuMemcpyHostToDevice));
  }
  // The stream's chunk offsets first, to refuse a truncated stream before decoding it.
  SHARDSIM_GPU_CHECK(gpuMemset(bad.ptr, 0, sizeof(int)));
  chunk_offsets(d_stream.ptr, stream.size(), chunks, starts.ptr, bad.ptr);
  int h_bad = 0;
  SHARDSIM_GPU_CHECK(gpuMemcpy(&h_bad, bad.ptr, sizeof h_bad, gpuMemcpyDeviceToHost));
  if (h_bad) throw KernelError("MPC stream ends early");
  decode_from_starts(d_stream.ptr, n, stride, starts.ptr, deltas.ptr, d_out.ptr);
  SHARDSIM_GPU_CHECK(gpuMemcpy(out.data(), d_out.ptr, n * sizeof(float), gpuMemcpyDeviceToHost));
}

}  // namespace shardsim::kernels::gpu
