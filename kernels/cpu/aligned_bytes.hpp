// Byte vectors whose data starts on a cache line (64 bytes), as the runtime's weight buffers do
// (runtime/cpu_backend): a 64-byte load from a row start then never straddles two lines. glibc's
// malloc gives 16-byte alignment, which left BF16 products 5-8% slower on AVX-512 (bench_tokens
// 14336 x 4096, 2 threads), so activations, the probe's matrices and the benches' use these.
#pragma once
#include <cstddef>
#include <cstdint>
#include <new>
#include <vector>

namespace infer_plan::kernels {

inline constexpr std::size_t kCacheLineBytes = 64;

template <class T>
struct CacheLineAllocator {
  using value_type = T;
  CacheLineAllocator() = default;
  template <class U>
  CacheLineAllocator(const CacheLineAllocator<U>&) noexcept {}  // NOLINT(google-explicit-constructor): rebinding
  T* allocate(std::size_t n) {
    return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t{kCacheLineBytes}));
  }
  void deallocate(T* p, std::size_t) noexcept { ::operator delete(p, std::align_val_t{kCacheLineBytes}); }
  template <class U>
  bool operator==(const CacheLineAllocator<U>&) const noexcept {
    return true;
  }
};

using AlignedBytes = std::vector<uint8_t, CacheLineAllocator<uint8_t>>;

}  // namespace infer_plan::kernels
