// The CUDA probe on a device, with small buffers: every figure is positive and finite, the device
// copy beats the host link (HBM vs PCIe), the BF16 GEMM and each matvec type passed their own
// element checks, and the profile parses. Skipped (77) without a device. Bounds are sanity, not
// targets: the targets are judged by tools/device-check.sh on the full-size probe.
#include <doctest/doctest.h>

#include <cmath>

#include "planner/catalog/catalog.hpp"
#include "planner/model/hw_profile.hpp"
#include "runtime/cuda_probe.hpp"

using namespace infer_plan;
using namespace infer_plan::runtime;

TEST_CASE("probe_cuda: small buffers give sane figures and a profile that parses") {
  CudaProbeOptions o;
  o.device_copy_bytes = uint64_t{256} << 20;
  o.host_copy_bytes = uint64_t{64} << 20;
  o.gemm_size = 2048;  // the element check still runs (|ref| ~ 15)
  o.gemms_per_pass = 4;
  o.launches = 200;
  o.matvec_bytes = uint64_t{128} << 20;  // still beyond an H200's 50 MiB L2
  o.repeats = 3;
  const CudaProbeResult r = probe_cuda(o);
  MESSAGE("device ", r.device, " sm_", r.sm_major, r.sm_minor, ": copy ", r.device_copy_bytes_per_s.median / 1e9,
          " GB/s, h2d ", r.host_to_device_bytes_per_s.median / 1e9, " GB/s, d2h ",
          r.device_to_host_bytes_per_s.median / 1e9, " GB/s, gemm ", r.gemm_bf16_ops_per_s.median / 1e12,
          " TFLOPS, launch ", r.launch_overhead_stream_s * 1e6, " us (graph ", r.launch_overhead_graph_s * 1e6, " us)");
  for (const RateSample* s : {&r.device_copy_bytes_per_s, &r.host_to_device_bytes_per_s, &r.device_to_host_bytes_per_s,
                              &r.gemm_bf16_ops_per_s}) {
    CHECK(std::isfinite(s->median));
    CHECK(s->min > 0);
    CHECK(s->min <= s->median);
    CHECK(s->median <= s->max);
  }
  // Any GPU's memory outruns its host link by far (H200: ~4300 vs ~55 GB/s; a laptop GPU ~10x).
  CHECK(r.device_copy_bytes_per_s.median > 2 * r.host_to_device_bytes_per_s.median);
  CHECK(r.launch_overhead_stream_s > 0);
  CHECK(r.launch_overhead_stream_s < 100e-6);  // ~2-5 us expected; 100 us would mean something is wrong
  CHECK(r.launch_overhead_graph_s > 0);
  CHECK(r.launch_overhead_graph_s < 100e-6);
  CHECK(r.memory_free_bytes < r.memory_total_bytes);
  // Every matvec type measured (each passed its own element check), and reading weights from HBM
  // outruns the host link too.
  REQUIRE(r.matvec_bytes_per_s.size() == 4);
  for (const auto& [type, s] : r.matvec_bytes_per_s) {
    MESSAGE("matvec ", type, ": ", s.median / 1e9, " GB/s (", 100 * s.median / r.device_copy_bytes_per_s.median,
            "% of the copy)");
    CHECK(std::isfinite(s.median));
    CHECK(s.min > 0);
    CHECK(s.min <= s.median);
    CHECK(s.median <= s.max);
    CHECK(s.median > 2 * r.host_to_device_bytes_per_s.median);
  }

  const HwProfile p = hw_profile_from_json(cuda_probe_profile_json(r, "probed"), "probed", "probe", load_link);
  CHECK(p.memory_bandwidth_bytes_per_s == doctest::Approx(r.device_copy_bytes_per_s.median).epsilon(1e-3));
}
