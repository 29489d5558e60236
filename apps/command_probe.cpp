// `infer-plan probe --backend cpu`: measure this machine with the runtime's own kernels and write
// a hardware profile with a `measured` block, which `roofline`, `report` and every other command
// then use through --hw FILE (runtime/probe.hpp says what is measured and how).
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <vector>

#include "apps/format.hpp"
#include "apps/commands.hpp"
#include "apps/plan_options.hpp"
#include "apps/run_options.hpp"
#include "planner/core/input_error.hpp"
#include "runtime/backend.hpp"
#include "runtime/probe.hpp"
#if INFER_PLAN_HAVE_CUDA
#include "runtime/cuda_probe.hpp"
#endif

namespace infer_plan::apps {
namespace {

struct ProbeArgs {
  RuntimeOptions runtime;
  OutputOptions out;
  std::string out_path;
  std::string name = "cpu-probed";
  bool quick = false;
  ProbeCopy copy;
};

void print_rate(const std::string& what, const runtime::RateSample& s, double unit, const char* unit_name,
                double fraction_of = 0) {
  fmt::print("  {:<30} {:>8.2f} {}  (min {:.2f}, max {:.2f}){}\n", what, s.median / unit, unit_name, s.min / unit,
             s.max / unit, fraction_of > 0 ? fmt::format("  {:.0f}% of read", 100 * s.median / fraction_of) : "");
}

#if INFER_PLAN_HAVE_CUDA
// The CUDA probe with the CLI's options (an InputError saying why when no device is visible).
runtime::CudaProbeResult probe_cuda_on(const RuntimeOptions& ro, bool quick) {
  (void)runtime::make_backend("cuda");
  runtime::CudaProbeOptions po;
  if (quick) {  // a quarter of the bytes, half the GEMM edge, fewer passes
    po.device_copy_bytes = uint64_t{256} << 20;
    po.host_copy_bytes = uint64_t{128} << 20;
    po.gemm_size = 4096;
    po.matvec_bytes = uint64_t{256} << 20;
    po.repeats = 5;
  }
  const bool tty = !ro.quiet && isatty(fileno(stderr));
  if (tty) po.progress = [](const std::string& line) { fmt::print(stderr, "\r\033[Kprobe: {}", line); };
  runtime::CudaProbeResult r = runtime::probe_cuda(po);
  if (tty) fmt::print(stderr, "\r\033[K");
  return r;
}
#endif

// `probe --backend cuda`: device copy, pinned host links, BF16 GEMM, matvec per type, launch
// overhead (runtime/cuda_probe.hpp), written as a profile like the CPU's.
void run_cuda(const ProbeArgs& a) {
#if INFER_PLAN_HAVE_CUDA
  const runtime::CudaProbeResult r = probe_cuda_on(a.runtime, a.quick);
  const std::string name = a.name == "cpu-probed" ? "cuda-probed" : a.name;
  const Json profile = runtime::cuda_probe_profile_json(r, name);
  if (!a.out_path.empty()) write_json_file(a.out_path, profile, "--out");
  if (a.out.json()) {
    print_json(profile);
    return;
  }
  fmt::print("probe: {} (sm_{}{}), {:.1f} GiB, {:.1f} GiB free before the probe\n", r.device, r.sm_major, r.sm_minor,
             static_cast<double>(r.memory_total_bytes) / (1ull << 30), static_cast<double>(r.memory_free_bytes) / (1ull << 30));
  print_rate("device copy (read + write)", r.device_copy_bytes_per_s, 1e9, "GB/s");
  print_rate("host to device (pinned)", r.host_to_device_bytes_per_s, 1e9, "GB/s");
  print_rate("device to host (pinned)", r.device_to_host_bytes_per_s, 1e9, "GB/s");
  print_rate(fmt::format("BF16 GEMM {}^3 (cuBLAS)", r.gemm_size), r.gemm_bf16_ops_per_s, 1e12, "TFLOPS");
  for (const auto& [type, s] : r.matvec_bytes_per_s)
    print_rate(fmt::format("matrix-vector {} (weights)", type), s, 1e9, "GB/s", r.device_copy_bytes_per_s.median);
  fmt::print("  {:<30} {:>8.2f} us  (graph node; {:.2f} us launched on a stream)\n", "launch overhead",
             r.launch_overhead_graph_s * 1e6, r.launch_overhead_stream_s * 1e6);
  if (!a.out_path.empty()) fmt::print("profile written to {} (use it with --hw {})\n", a.out_path, a.out_path);
  else fmt::print("(write the profile with --out FILE, then pass --hw FILE)\n");
#else
  (void)a;
  (void)runtime::make_backend("cuda");  // throws the InputError: this build has no CUDA support
#endif
}

void run(const ProbeArgs& a) {
  check_output_path(a.out_path, "--out");
  if (a.runtime.backend == "cuda") {
    run_cuda(a);
    return;
  }
  const runtime::ProbeResult r = probe_on(a.runtime, a.quick, a.copy);
  const Json profile = runtime::probe_profile_json(r, a.name);
  if (!a.out_path.empty()) write_json_file(a.out_path, profile, "--out");
  if (a.out.json()) {
    print_json(profile);
    return;
  }
  fmt::print("probe: {} ({})\n", r.device, count_of(r.threads, "thread"));
  print_rate("memory read", r.read_bytes_per_s, 1e9, "GB/s");
  print_rate("memory copy", r.copy_bytes_per_s, 1e9, "GB/s");
  print_rate("copy thread beside compute", r.copy_beside_compute_bytes_per_s, 1e9, "GB/s");
  fmt::print("    ({})\n", r.copy_beside);
  for (const auto& [type, s] : r.matvec_bytes_per_s)
    print_rate(fmt::format("matrix-vector {} (weights)", type), s, 1e9, "GB/s", r.read_bytes_per_s.median);
  for (const auto& [type, s] : r.projection_bytes_per_s)
    print_rate(fmt::format("projections {} ({} wide)", type, r.product_cols), s, 1e9, "GB/s", r.read_bytes_per_s.median);
  for (const auto& [type, s] : r.matmul_ops_per_s)
    print_rate(fmt::format("products {} (x{} tokens)", type, runtime::kProbeMatmulBatch), s, 1e9, "GFLOPS");
  fmt::print("  {:<30} {:>8.2f} us  (fit: time = overhead + bytes / {:.2f} GB/s)\n", "launch overhead",
             r.launch_overhead_s * 1e6, r.launch_fit_rate / 1e9);
  fmt::print("  products of T tokens beyond one token's, ms per GB of weights ({} columns over {} MiB):\n",
             r.product_cols, r.product_bytes >> 20);
  for (const auto& [type, points] : r.extra_product_s_per_byte) {
    std::string line;
    for (const auto& [tokens, s_per_byte] : points) line += fmt::format("  T={}: {:7.2f}", tokens, s_per_byte * 1e12);
    fmt::print("    {:<6}{}\n", type, line);
  }
  if (!a.out_path.empty()) fmt::print("profile written to {} (use it with --hw {})\n", a.out_path, a.out_path);
  else fmt::print("(write the profile with --out FILE, then pass --hw FILE)\n");
}

}  // namespace

Json probe_profile(const RuntimeOptions& ro, bool quick, const ProbeCopy& copy, const std::string& name) {
#if INFER_PLAN_HAVE_CUDA
  if (ro.backend == "cuda") return runtime::cuda_probe_profile_json(probe_cuda_on(ro, quick), name);
#endif
  return runtime::probe_profile_json(probe_on(ro, quick, copy), name);
}

std::vector<GgmlType> plan_weight_types(const Plan& plan) {
  std::vector<GgmlType> types;
  for (const TensorPlacement& t : resolve_plan(plan).weights.layout.tensors)
    if (std::find(types.begin(), types.end(), t.type) == types.end()) types.push_back(t.type);
  return types;
}

runtime::ProbeResult probe_on(const RuntimeOptions& ro, bool quick, const ProbeCopy& copy) {
  if (ro.backend == "cuda") (void)runtime::make_backend("cuda");  // says why not: no CUDA build or no device
  if (ro.backend != "cpu")
    throw InputError(fmt::format("--backend: probe measures cpu or cuda, not '{}'", ro.backend));
  runtime::ProbeOptions po;
  po.threads = ro.threads;
  po.copy_chunk_bytes = copy.chunk_bytes;
  po.copy_beside_type = copy.type;
  po.copy_beside_tokens = copy.tokens;
  po.product_cols = copy.product_cols;
  po.types = copy.types;
  if (quick) {  // CI: smaller buffers, fewer passes (still beyond the 32 MiB L3 of the machines we run on)
    po.stream_bytes = uint64_t{256} << 20;
    po.matvec_bytes = uint64_t{128} << 20;
    po.repeats = 5;
    po.product_point_s = 0.2;
  }
  const bool tty = !ro.quiet && isatty(fileno(stderr));
  if (tty) po.progress = [](const std::string& line) { fmt::print(stderr, "\r\033[Kprobe: {}", line); };
  runtime::ProbeResult r = runtime::probe_cpu(po);
  if (tty) fmt::print(stderr, "\r\033[K");
  return r;
}

void add_probe_command(CLI::App& app) {
  auto args = std::make_shared<ProbeArgs>();
  CLI::App* cmd = app.add_subcommand(
      "probe", "Measure this machine's bandwidth and per-type product rates; write a profile with a 'measured' block");
  args->runtime.add_to(*cmd);
  cmd->add_option("--out", args->out_path, "Write the profile JSON to this file")->type_name("FILE");
  cmd->add_option("--name", args->name, "Profile name (default cpu-probed)")->type_name("NAME");
  cmd->add_option("--copy-chunk-bytes", args->copy.chunk_bytes,
                  "The copy thread's memcpy size, e.g. an offload plan's group bytes (default: whole buffers)")
      ->check(kNonNegativeCount)
      ->type_name("B");
  cmd->add_option("--copy-beside-tokens", args->copy.tokens,
                  "The copy thread runs beside Q8_0 products of this many tokens, a decode batch (1 to 32, default 1)")
      ->check(CLI::Range(1, 32))
      ->type_name("N");
  cmd->add_option("--product-cols", args->copy.product_cols,
                  "Row width of the several-token products (a plan's hidden size; default 4096)")
      ->check(CLI::Range(uint64_t{32}, uint64_t{65536}))
      ->type_name("N");
  cmd->add_flag("--quick", args->quick, "Smaller buffers and fewer passes (about 4x faster, noisier)");
  // --backend cuda: device copy, pinned host-to-device and device-to-host, BF16 GEMM (cuBLAS), batch-1
  // matvec per weight type (kernels/cuda/matvec), launch overhead.
  args->out.add_to(*cmd);
  cmd->footer("Example:\n  infer-plan probe --backend cpu --out cpu.json\n"
              "  infer-plan probe --backend cuda --out gpu.json   (with CUDA and a GPU)\n"
              "  infer-plan roofline --hw cpu.json --model qwen3-8b --scale 0.25 --weights Q8_0 --batch 1");
  cmd->callback([args] { run(*args); });
}

}  // namespace infer_plan::apps
