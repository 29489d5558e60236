// The CPU backend's allocator accounting is exact per category (the runtime's memory figures
// must equal the planner's to the byte), and copies move the bytes.
#include <doctest/doctest.h>

#include <cstring>
#include <vector>

#include "planner/core/input_error.hpp"
#include "runtime/backend.hpp"
#if INFER_PLAN_HAVE_CUDA
#include "runtime/cuda_backend.hpp"
#endif

using namespace infer_plan::runtime;

TEST_CASE("allocation accounting per category") {
  auto b = make_backend("cpu");
  DeviceBuffer w = b->allocate(1000, MemoryCategory::weights);
  DeviceBuffer kv = b->allocate(147456, MemoryCategory::kv_cache);
  CHECK(b->allocated(MemoryCategory::weights) == 1000);  // as requested, not rounded to 64
  CHECK(b->allocated(MemoryCategory::kv_cache) == 147456);
  CHECK(reinterpret_cast<uintptr_t>(w.data) % 64 == 0);
  std::vector<unsigned char> src(1000), dst(1000);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<unsigned char>(i * 7);
  b->copy_to_device(w, src.data(), src.size());
  b->copy_to_host(dst.data(), w, dst.size());
  CHECK(std::memcmp(src.data(), dst.data(), src.size()) == 0);
  b->free(w);
  b->free(kv);
  CHECK(b->allocated(MemoryCategory::weights) == 0);
  CHECK(b->allocated(MemoryCategory::kv_cache) == 0);
  const uint64_t t0 = b->now_ns();
  CHECK(b->now_ns() >= t0);
}

TEST_CASE("backend names") {
  CHECK(make_backend("cpu")->name() == "cpu");
  CHECK_THROWS_WITH_AS(make_backend("tpu"), doctest::Contains("unknown backend 'tpu'"), infer_plan::InputError);
}

// make_backend("cuda") either returns the CUDA backend or says why it cannot, as an InputError
// (exit code 2 in the CLI, not a crash). Runs everywhere: CI checks the refusal, a GPU the backend.
TEST_CASE("make_backend cuda: the backend, or an InputError saying why not") {
#if INFER_PLAN_HAVE_CUDA
  if (cuda_device_count() == 0) {
    CHECK_THROWS_WITH_AS(make_backend("cuda"), doctest::Contains("--backend cuda: no CUDA device visible"),
                         infer_plan::InputError);
  } else {
    auto b = make_backend("cuda");
    CHECK(b->name() == "cuda");
  }
#else
  CHECK_THROWS_WITH_AS(make_backend("cuda"), doctest::Contains("--backend cuda: this build has no CUDA support"),
                       infer_plan::InputError);
#endif
}
