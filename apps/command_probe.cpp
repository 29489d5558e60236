// `infer-plan probe --backend cpu`: measure this machine with the runtime's own kernels and write
// a hardware profile with a `measured` block, which `roofline`, `report` and every other command
// then use through --hw FILE (runtime/probe.hpp says what is measured and how).
#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <memory>

#include "apps/commands.hpp"
#include "apps/plan_options.hpp"
#include "apps/run_options.hpp"
#include "planner/input_error.hpp"
#include "runtime/probe.hpp"

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

void run(const ProbeArgs& a) {
  check_output_path(a.out_path, "--out");
  const runtime::ProbeResult r = probe_on(a.runtime, a.quick, a.copy);
  const Json profile = runtime::probe_profile_json(r, a.name);
  if (!a.out_path.empty()) write_json_file(a.out_path, profile, "--out");
  if (a.out.json) {
    fmt::print("{}\n", profile.dump(2));
    return;
  }
  fmt::print("probe: {} ({} threads)\n", r.device, r.threads);
  print_rate("memory read", r.read_bytes_per_s, 1e9, "GB/s");
  print_rate("memory copy", r.copy_bytes_per_s, 1e9, "GB/s");
  print_rate("copy thread beside compute", r.copy_beside_compute_bytes_per_s, 1e9, "GB/s");
  fmt::print("    ({})\n", r.copy_beside);
  for (const auto& [type, s] : r.matvec_bytes_per_s)
    print_rate(fmt::format("matrix-vector {} (weights)", type), s, 1e9, "GB/s", r.read_bytes_per_s.median);
  for (const auto& [type, s] : r.matmul_ops_per_s)
    print_rate(fmt::format("products {} (x{} tokens)", type, runtime::kProbeMatmulBatch), s, 1e9, "GFLOPS");
  fmt::print("  {:<30} {:>8.2f} us  (fit: time = overhead + bytes / {:.2f} GB/s)\n", "launch overhead",
             r.launch_overhead_s * 1e6, r.launch_fit_rate / 1e9);
  if (!a.out_path.empty()) fmt::print("profile written to {} (use it with --hw {})\n", a.out_path, a.out_path);
  else fmt::print("(write the profile with --out FILE, then pass --hw FILE)\n");
}

}  // namespace

runtime::ProbeResult probe_on(const RuntimeOptions& ro, bool quick, const ProbeCopy& copy) {
  if (ro.backend != "cpu")
    throw InputError(fmt::format("--backend: probe runs on cpu in this build, not '{}'", ro.backend));
  runtime::ProbeOptions po;
  po.threads = ro.threads;
  po.copy_chunk_bytes = copy.chunk_bytes;
  po.copy_beside_type = copy.type;
  po.copy_beside_tokens = copy.tokens;
  if (quick) {  // CI: smaller buffers, fewer passes (still beyond the 32 MiB L3 of the machines we run on)
    po.stream_bytes = uint64_t{256} << 20;
    po.matvec_bytes = uint64_t{128} << 20;
    po.repeats = 5;
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
  cmd->add_flag("--quick", args->quick, "Smaller buffers and fewer passes (about 4x faster, noisier)");
  args->out.add_to(*cmd);
  cmd->footer("Example:\n  infer-plan probe --backend cpu --out cpu.json\n"
              "  infer-plan roofline --hw cpu.json --model qwen3-8b --scale 0.25 --weights Q8_0 --batch 1");
  cmd->callback([args] { run(*args); });
}

}  // namespace infer_plan::apps
