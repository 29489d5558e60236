#include "apps/run_options.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <thread>
#include <utility>

#include "apps/format.hpp"
#include "apps/plan_options.hpp"
#include "planner/core/input_error.hpp"
#include "runtime/backend.hpp"
#include "runtime/interrupt.hpp"
#include "runtime/server.hpp"

namespace infer_plan::apps {

void RuntimeOptions::add_to(CLI::App& cmd) {
  cmd.add_option("--backend", backend, "Where to execute: cpu, or cuda when built with CUDA (default cpu)")
      ->type_name("NAME");
  // More threads than hardware threads only spin against each other (the pool busy-waits).
  const unsigned hardware = std::max(1u, std::thread::hardware_concurrency());
  cmd.add_option("--threads,-t", threads, fmt::format("CPU threads, 1 to {} (this machine's hardware threads); default "
                                                   "one per hardware thread", hardware))
      ->check(CLI::Range(0u, hardware))
      ->type_name("N");
  cmd.add_option("--seed", seed, "Seed of the synthetic weights, prompts and sampling (default 1)")
      ->check(kNonNegativeCount)
      ->type_name("N");
  cmd.add_flag("--quiet,-q", quiet, "No progress lines on stderr");
}

namespace {

// Runs `body` on the chosen backend with the runtime's options and, on a terminal, a status line.
template <typename Body>
auto with_backend(const RuntimeOptions& options, Body body, runtime::RunOptions ro = {}) {
  auto backend = runtime::make_backend(options.backend);  // an InputError saying why when it cannot run here
  ro.threads = options.threads;
  ro.seed = options.seed;
  const bool tty = !options.quiet && isatty(fileno(stderr));
  if (tty) ro.progress = [](const std::string& line) { fmt::print(stderr, "\r\033[K{}", line); };
  const runtime::InterruptGuard interrupts;  // a first SIGINT ends the run after its step, with figures
  auto r = body(*backend, ro);
  if (tty) fmt::print(stderr, "\r\033[K");
  return r;
}

}  // namespace

runtime::RunResult execute_plan(const ResolvedPlan& rp, const RuntimeOptions& options, runtime::RunOptions base) {
  return with_backend(
      options, [&](runtime::Backend& b, const runtime::RunOptions& ro) { return runtime::run_plan(rp, b, ro); },
      std::move(base));
}

runtime::PdRunResult execute_pd_plan(const ResolvedPlan& rp, const RuntimeOptions& options) {
  return with_backend(options, [&](runtime::Backend& b, const runtime::RunOptions& ro) {
    return runtime::run_pd_plan(rp, b, ro);
  });
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

}  // namespace infer_plan::apps
