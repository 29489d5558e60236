// kernels/cuda/gather against plain loops: gather_rows copies rows (exact), scatter_add_rows adds
// scale * row into the indexed rows (one float multiply and one add per element, the same two
// roundings as the loop: exact too). Rows wider than one thread block, indices out of order, 300
// rows in one call. Argument checks run everywhere; without a device the test exits 77 (skipped).
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cuda/device_query.hpp"
#include "kernels/cuda/gather.hpp"
#include "tests/kernels/cuda_test_support.hpp"

namespace cuda = infer_plan::kernels::cuda;

using infer_plan::cuda_test::failures;
using infer_plan::cuda_test::DeviceArray;
using infer_plan::cuda_test::expect_throw;

namespace {

void compare_exact(const std::string& what, const std::vector<float>& got, const std::vector<float>& ref) {
  int bad = 0;
  for (size_t i = 0; i < ref.size(); ++i)
    if (got[i] != ref[i] && bad++ < 5) std::printf("  mismatch %s [%zu]: got %.9g, ref %.9g\n", what.c_str(), i, got[i], ref[i]);
  if (bad) {
    std::printf("FAILED: %s: %d mismatches\n", what.c_str(), bad);
    ++failures;
  } else {
    std::printf("checked %s\n", what.c_str());
  }
}

void check_rows(uint64_t width, uint32_t src_rows, std::vector<uint32_t> idx, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(-3.0f, 3.0f);
  const auto n = static_cast<uint32_t>(idx.size());
  std::vector<float> src(src_rows * width), scale(n), rows(n * width);
  for (float& v : src) v = uniform(rng);
  for (float& v : scale) v = uniform(rng);
  for (float& v : rows) v = uniform(rng);
  // gather: dst[i] = src[idx[i]]
  std::vector<float> gathered(n * width);
  for (uint32_t i = 0; i < n; ++i)
    for (uint64_t j = 0; j < width; ++j) gathered[i * width + j] = src[idx[i] * width + j];
  DeviceArray<float> d_src(src), d_dst(std::vector<float>(n * width + 7, NAN)), d_scale(scale), d_rows(rows);
  DeviceArray<uint32_t> d_idx(idx);
  cuda::gather_rows(d_src.data, width, d_idx.data, n, d_dst.data, nullptr);
  CHECK_CUDA(cudaDeviceSynchronize());
  std::vector<float> got = d_dst.to_host(n * width + 7);
  for (size_t i = n * width; i < got.size(); ++i)  // the guard past the last row stays untouched
    if (!std::isnan(got[i])) {
      std::printf("FAILED: gather wrote past its rows at %zu\n", i);
      ++failures;
    }
  got.resize(n * width);
  compare_exact("gather_rows " + std::to_string(n) + " x " + std::to_string(width), got, gathered);
  // scatter-add: src[idx[i]] += scale[i] * rows[i] (indices distinct, as one expert's tokens are)
  std::vector<float> added = src;
  for (uint32_t i = 0; i < n; ++i)
    for (uint64_t j = 0; j < width; ++j) added[idx[i] * width + j] += scale[i] * rows[i * width + j];
  cuda::scatter_add_rows(d_src.data, width, d_rows.data, d_idx.data, d_scale.data, n, nullptr);
  CHECK_CUDA(cudaDeviceSynchronize());
  compare_exact("scatter_add_rows " + std::to_string(n) + " x " + std::to_string(width), d_src.to_host(src.size()), added);
}

}  // namespace

int main() {
  try {
    static float fake[4];  // never dereferenced: each call throws first
    static uint32_t fake_idx[4];
    expect_throw("gather_rows n = 0", [&] { cuda::gather_rows(fake, 4, fake_idx, 0, fake, nullptr); });
    expect_throw("gather_rows width = 0", [&] { cuda::gather_rows(fake, 0, fake_idx, 1, fake, nullptr); });
    expect_throw("gather_rows null idx", [&] { cuda::gather_rows(fake, 4, nullptr, 1, fake, nullptr); });
    expect_throw("scatter_add_rows null scale", [&] { cuda::scatter_add_rows(fake, 4, fake, fake_idx, nullptr, 1, nullptr); });
    expect_throw("scatter_add_rows n = 70000", [&] { cuda::scatter_add_rows(fake, 4, fake, fake_idx, fake, 70000, nullptr); });
    // A width whose blocks would exceed the grid's x limit (2^31 - 1 blocks of 256) is refused.
    expect_throw("gather_rows width beyond the grid",
                 [&] { cuda::gather_rows(fake, cuda::kGatherMaxWidth + 1, fake_idx, 1, fake, nullptr); });
    expect_throw("scatter_add_rows width beyond the grid",
                 [&] { cuda::scatter_add_rows(fake, cuda::kGatherMaxWidth + 1, fake, fake_idx, fake, 1, nullptr); });
    if (failures != 0) return 1;
    if (cuda::devices().empty()) {
      std::printf("SKIPPED: no CUDA device visible (argument checks passed)\n");
      return 77;
    }
    check_rows(5, 3, {2}, 1);                       // one row, narrower than a warp
    check_rows(4096, 9, {8, 0, 3, 5}, 2);           // the head's input: sequences' last tokens
    check_rows(1000, 16, {15, 1, 7, 2, 9, 4}, 3);   // a width that is not a multiple of the block
    std::vector<uint32_t> many(300);                // MoE at a prefill: many tokens to one expert
    for (uint32_t i = 0; i < 300; ++i) many[i] = (i * 11) % 301;  // distinct: 11 is prime to 301 = 7 x 43
    check_rows(512, 301, many, 4);
  } catch (const std::exception& e) {
    std::printf("FAILED: %s\n", e.what());
    return 1;
  }
  if (failures) std::printf("%d failure(s)\n", failures);
  return failures ? 1 : 0;
}
