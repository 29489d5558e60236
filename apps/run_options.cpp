#include "apps/run_options.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "apps/plan_options.hpp"
#include "planner/core/input_error.hpp"
#include "runtime/backend.hpp"
#include "runtime/server.hpp"

namespace infer_plan::apps {

void RuntimeOptions::add_to(CLI::App& cmd) {
  cmd.add_option("--backend", backend, "Where to execute: cpu, or cuda when built with CUDA (default cpu)")
      ->type_name("NAME");
  cmd.add_option("--threads", threads, "CPU threads (default: one per hardware thread)")
      ->check(kNonNegativeCount)
      ->type_name("N");
  cmd.add_option("--seed", seed, "Seed of the synthetic weights and prompts (default 1)")
      ->check(kNonNegativeCount)
      ->type_name("N");
  cmd.add_flag("--quiet,-q", quiet, "No progress lines on stderr");
}

namespace {

// Runs `body` on the chosen backend with the runtime's options and, on a terminal, a status line.
template <typename Body>
auto with_backend(const RuntimeOptions& options, Body body) {
  auto backend = runtime::make_backend(options.backend);  // an InputError saying why when it cannot run here
  runtime::RunOptions ro;
  ro.threads = options.threads;
  ro.seed = options.seed;
  const bool tty = !options.quiet && isatty(fileno(stderr));
  if (tty) ro.progress = [](const std::string& line) { fmt::print(stderr, "\r\033[K{}", line); };
  auto r = body(*backend, ro);
  if (tty) fmt::print(stderr, "\r\033[K");
  return r;
}

}  // namespace

runtime::RunResult execute_plan(const ResolvedPlan& rp, const RuntimeOptions& options) {
  return with_backend(options, [&](runtime::Backend& b, const runtime::RunOptions& ro) { return runtime::run_plan(rp, b, ro); });
}

runtime::SpecSweepResult execute_speculative_sweep(const ResolvedPlan& rp, const RuntimeOptions& options,
                                                   uint64_t repeats) {
  return with_backend(options, [&](runtime::Backend& b, const runtime::RunOptions& ro) {
    return runtime::run_speculative_sweep(rp, b, ro, repeats);
  });
}

void add_spec_repeats_option(CLI::App& cmd, uint64_t& repeats) {
  cmd.add_option("--spec-repeats", repeats,
                 "With a speculative section: generations of the plan's output per block length, interleaved "
                 "over plain and m = 1..max_block so that a drifting machine shifts every m alike")
      ->check(CLI::Range(uint64_t{1}, uint64_t{100}))
      ->capture_default_str();
}

void check_output_path(const std::string& path, std::string_view flag) {
  if (path.empty()) return;
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (!parent.empty() && !std::filesystem::is_directory(parent))
    throw InputError(fmt::format("{}: cannot write '{}': folder '{}' does not exist", flag, path, parent.string()));
}

void write_json_file(const std::string& path, const Json& j, std::string_view flag) {
  std::ofstream out(path);
  if (!out) throw InputError(fmt::format("{}: cannot write '{}'", flag, path));
  out << j.dump(2) << "\n";
}

}  // namespace infer_plan::apps
