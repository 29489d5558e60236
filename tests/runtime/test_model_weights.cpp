// runtime/model_weights: synthetic rows of every type the runtime multiplies decode to values that
// are bounded by the amplitude asked for and centred on zero, as a trained model's are (a row of
// one sign would make every projection collapse onto one direction: logits that do not depend on
// the tokens, which a conformance check cannot tell from right).
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "kernels/cpu/matmul.hpp"
#include "kernels/cpu/quantize.hpp"
#include "planner/catalog/catalog.hpp"
#include "planner/core/ggml_type.hpp"
#include "planner/core/input_error.hpp"
#include "planner/weights/weights_size.hpp"
#include "runtime/cpu_backend.hpp"
#include "runtime/model_weights.hpp"
#include "runtime/thread_pool.hpp"

using namespace infer_plan;
using namespace infer_plan::runtime;

TEST_CASE("synthetic rows are bounded by the amplitude and centred, for every type the runtime multiplies") {
  constexpr uint64_t cols = 4096;
  constexpr float amplitude = 0.05f;
  uint64_t checked = 0;
  for (const GgmlTypeInfo& info : ggml_types()) {
    if (!kernels::has_matmul(info.type)) continue;
    CAPTURE(info.name);
    std::vector<float> all;
    for (uint64_t seed = 1; seed <= 16; ++seed) {
      std::vector<uint8_t> row(ggml_row_bytes(info.type, cols, "test"));
      fill_synthetic_row(info.type, cols, amplitude, seed, row.data());
      std::vector<float> values(cols);
      kernels::dequantize_row(info.type, row, values, "test");
      all.insert(all.end(), values.begin(), values.end());
    }
    double sum = 0, sum2 = 0, peak = 0;
    for (float v : all) {
      sum += v;
      sum2 += static_cast<double>(v) * v;
      peak = std::max(peak, static_cast<double>(std::fabs(v)));
    }
    const double n = static_cast<double>(all.size()), mean = sum / n, rms = std::sqrt(sum2 / n);
    CAPTURE(mean);
    CAPTURE(rms);
    CHECK(peak <= 1.05 * amplitude);  // fp16 scales round up by at most 2^-11
    CHECK(rms >= 0.1 * amplitude);    // not all zero
    // Q4_0's codes -8..7 drawn uniformly average -d / 2, 11% of their RMS; a row of one sign is at 100%
    CHECK(std::fabs(mean) <= 0.15 * rms);
    ++checked;
  }
  CHECK(checked >= 13);
}

TEST_CASE("weights that cannot be built give back every buffer they took") {
  // An IQ2_XS layout (no CPU product) is refused before anything is allocated; a conversion whose
  // source lacks the last tensor fails after every other tensor was allocated and filled: both
  // leave the backend with the source's bytes only (a leak would also trip CpuBackend's
  // destructor assertion in a debug build).
  CpuBackend backend;
  ThreadPool pool(1);
  const ModelSpec spec = load_model("tests/conformance/models/llama.json");
  const ModelWeights source(backend, spec, uniform_weights_layout(spec, "F16"), 1, pool);
  const uint64_t held = backend.allocated(MemoryCategory::weights);
  CHECK(held == source.bytes());
  CHECK_THROWS_AS(ModelWeights(backend, spec, uniform_weights_layout(spec, "IQ2_XS"), 1, pool), InputError);
  CHECK(backend.allocated(MemoryCategory::weights) == held);
  WeightsLayout renamed = uniform_weights_layout(spec, "Q8_0");
  renamed.tensors.back().tensor.name += ".missing";
  CHECK_THROWS_WITH_AS(ModelWeights(backend, source, renamed, pool), doctest::Contains(".missing"), InputError);
  CHECK(backend.allocated(MemoryCategory::weights) == held);
}
