#include "runtime/probe.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <thread>
#include <vector>

#include "kernels/cpu/aligned_bytes.hpp"
#include "kernels/cpu/matmul.hpp"
#include "kernels/cpu/stream_read.hpp"
#include "planner/core/ggml_type.hpp"
#include "runtime/model_weights.hpp"
#include "runtime/projection.hpp"
#include "runtime/thread_pool.hpp"

namespace infer_plan::runtime {
namespace {

constexpr uint64_t kMatvecCols = 4096;       // a Qwen3-8B-wide row
constexpr uint64_t kMatmulRows = 1024;       // 1024 x 1024: about 1 MiB at Q8_0, resident in L2/L3,
constexpr uint64_t kMatmulCols = 1024;       // the shape of a small model's attention projections
const GgmlType kProbedTypes[] = {GgmlType::F32,  GgmlType::F16,  GgmlType::BF16, GgmlType::Q8_0,   GgmlType::Q4_0,
                                 GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::Q4_K, GgmlType::Q5_K,   GgmlType::Q6_K,
                                 GgmlType::IQ4_NL, GgmlType::IQ4_XS, GgmlType::MXFP4};

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Runs `pass` once to warm up, then `repeats` timed passes; rates = work / seconds.
RateSample measure(int repeats, double work, const std::function<void()>& pass) {
  pass();
  std::vector<double> rates;
  for (int i = 0; i < repeats; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    pass();
    rates.push_back(work / seconds_since(t0));
  }
  std::sort(rates.begin(), rates.end());
  return {rates[rates.size() / 2], rates.front(), rates.back()};
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown CPU";
}

// Read: each thread sums its part (kernels/cpu/stream_read, the GEMV bench's reference too).
volatile uint64_t g_sink;
void read_pass(ThreadPool& pool, const uint64_t* words, uint64_t n) {
  pool.parallel_for(n, [&](uint64_t b, uint64_t e) { g_sink = kernels::read_sum(words + b, e - b); }, 512);
}

// The rate of one extra thread copying `bytes` (in memcpys of `chunk` bytes) while `work` runs on
// the calling thread's pool again and again until the copy is done. Timed by the copy thread
// itself (the work in flight when it finishes is not its time); the median of `repeats`.
RateSample copy_beside(int repeats, const uint64_t* src, uint64_t* dst, uint64_t bytes, uint64_t chunk,
                       const std::function<void()>& work) {
  auto once = [&] {
    std::atomic<bool> copied{false};
    double copy_s = 0;
    std::thread copier([&] {
      const auto t0 = std::chrono::steady_clock::now();
      for (uint64_t at = 0; at < bytes; at += chunk)
        std::memcpy(reinterpret_cast<uint8_t*>(dst) + at, reinterpret_cast<const uint8_t*>(src) + at, chunk);
      copy_s = seconds_since(t0);
      copied = true;
    });
    while (!copied) work();
    copier.join();
    return static_cast<double>(bytes) / copy_s;
  };
  once();
  std::vector<double> rates;
  for (int i = 0; i < repeats; ++i) rates.push_back(once());
  std::sort(rates.begin(), rates.end());
  return {rates[rates.size() / 2], rates.front(), rates.back()};
}

// The last-level cache (sysfs; 32 MiB, this project's CI machines, when it cannot be read).
uint64_t last_level_cache_bytes() {
  uint64_t best = 0;
  for (int index = 0; index < 8; ++index) {
    std::ifstream in(fmt::format("/sys/devices/system/cpu/cpu0/cache/index{}/size", index));
    std::string text;
    if (!(in >> text) || text.empty()) continue;
    uint64_t v = std::strtoull(text.c_str(), nullptr, 10);
    if (text.back() == 'K') v <<= 10;
    else if (text.back() == 'M') v <<= 20;
    best = std::max(best, v);
  }
  return best ? best : uint64_t{32} << 20;
}

// Median of (T-token pass - 1-token pass), the two passes alternating, for at least `min_s`
// (and 5 pairs): each pair sees the same moment of a drifting machine.
double extra_product_s(double min_s, const std::function<void(uint64_t)>& pass, uint64_t tokens,
                       std::vector<double>* one_token_s) {
  pass(1);
  pass(tokens);
  std::vector<double> diffs;
  double spent = 0;
  while (diffs.size() < 5 || spent < min_s) {
    const auto t0 = std::chrono::steady_clock::now();
    pass(1);
    const double one = seconds_since(t0);
    const auto t1 = std::chrono::steady_clock::now();
    pass(tokens);
    const double many = seconds_since(t1);
    diffs.push_back(many - one);
    one_token_s->push_back(one);
    spent += one + many;
  }
  std::sort(diffs.begin(), diffs.end());
  return std::max(0.0, diffs[diffs.size() / 2]);
}

// The order the decoder keeps `type` in (ModelWeights): interleaved where this CPU multiplies it
// faster so. Rearranges `w` (`rows` rows of `cols`, projected `unit` rows at a time) into that
// order and returns it, so that the probe times the decoder's products.
kernels::RowOrder decoder_order(GgmlType type, uint64_t unit, uint64_t rows, uint64_t cols, kernels::AlignedBytes& w) {
  if (!kernels::prefers_interleaved(type, unit) || rows % unit != 0) return kernels::RowOrder::ggml;
  kernels::interleave_rows(type, w.data(), rows, cols);
  return kernels::RowOrder::interleaved;
}

}  // namespace

ProbeResult probe_cpu(const ProbeOptions& options) {
  ProbeOptions o = options;
  // The copy runs beside a type the CPU multiplies (Q8_0 otherwise), probed with the rest, and at
  // most the batch x holds.
  if (std::find(std::begin(kProbedTypes), std::end(kProbedTypes), o.copy_beside_type) == std::end(kProbedTypes))
    o.copy_beside_type = GgmlType::Q8_0;
  std::vector<GgmlType> types;
  for (GgmlType t : kProbedTypes)
    if (o.types.empty() || t == o.copy_beside_type || std::find(o.types.begin(), o.types.end(), t) != o.types.end())
      types.push_back(t);
  o.copy_beside_tokens = std::clamp<uint64_t>(o.copy_beside_tokens, 1, kProbeMatmulBatch);
  ThreadPool pool(o.threads);
  ProbeResult r;
  r.device = cpu_model();
  r.threads = pool.threads();
  r.memory_bytes = static_cast<uint64_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<uint64_t>(sysconf(_SC_PAGE_SIZE));
  auto say = [&](const std::string& s) { if (o.progress) o.progress(s); };

  {
    say(fmt::format("read and copy bandwidth over {} MiB", o.stream_bytes >> 20));
    const uint64_t words = o.stream_bytes / 8;
    std::vector<uint64_t> a(words, 1), b(words, 2);
    r.read_bytes_per_s = measure(o.repeats, static_cast<double>(o.stream_bytes), [&] { read_pass(pool, a.data(), words); });
    // Copy: bytes moved = read + written, counted once (as the offload copy's size is).
    r.copy_bytes_per_s = measure(o.repeats, static_cast<double>(o.stream_bytes), [&] {
      pool.parallel_for(words, [&](uint64_t lo, uint64_t hi) { std::memcpy(&b[lo], &a[lo], (hi - lo) * 8); }, 512);
    });
  }
  std::vector<float> x(kProbeMatmulBatch * kMatvecCols), y;
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 7919) % 201) / 100.0f - 1.0f;
  kernels::Activations act;
  for (GgmlType type : types) {
    const std::string name(ggml_type_info(type).name);
    say(fmt::format("{} matrix-vector over {} MiB", name, o.matvec_bytes >> 20));
    const uint64_t row_bytes = ggml_row_bytes(type, kMatvecCols, "probe");
    const uint64_t rows = std::max(o.matvec_bytes / row_bytes / kernels::kInterleavedRows, uint64_t{1}) *
                          kernels::kInterleavedRows;  // whole groups, for the interleaved order
    kernels::AlignedBytes w(rows * row_bytes);
    pool.parallel_for(rows, [&](uint64_t b, uint64_t e) {
      for (uint64_t i = b; i < e; ++i) fill_synthetic_row(type, kMatvecCols, 0.05f, i + 1, &w[i * row_bytes]);
    });
    // The small products' matrix: the first bytes read as rows of kMatmulCols (whole blocks).
    kernels::AlignedBytes small(w.begin(), w.begin() + static_cast<std::ptrdiff_t>(
                                                          kMatmulRows * ggml_row_bytes(type, kMatmulCols, "probe")));
    const kernels::RowOrder order = decoder_order(type, rows, rows, kMatvecCols, w);
    const kernels::RowOrder small_order = decoder_order(type, kMatmulRows, kMatmulRows, kMatmulCols, small);
    y.resize(std::max(rows, kProbeMatmulBatch * kMatmulRows));
    r.matvec_bytes_per_s[name] = measure(o.repeats, static_cast<double>(w.size()), [&] {
      project(pool, type, w.data(), rows, kMatvecCols, x.data(), 1, y.data(), act, order);
    });
    if (type == o.copy_beside_type) {
      // The copy thread's rate while the pool runs this type's product of copy_beside_tokens
      // tokens over the matrix (a decode step's projections), again and again. It copies in
      // pieces of copy_chunk_bytes, one memcpy each, as the prefetcher copies one group at a
      // time: the size decides how memcpy copies (glibc streams past the caches with
      // non-temporal stores only above a fraction of the L3).
      say(fmt::format("copy thread beside {} products of {} tokens", name, o.copy_beside_tokens));
      const uint64_t chunk = o.copy_chunk_bytes == 0 ? o.stream_bytes : std::min(o.copy_chunk_bytes, o.stream_bytes);
      std::vector<uint64_t> from(o.stream_bytes / 8, 1), to(o.stream_bytes / 8, 2);
      std::vector<float> y_beside(rows * o.copy_beside_tokens);
      // A pass is ~50 ms: 15 of them cost little and steady the median on a shared machine.
      r.copy_beside_compute_bytes_per_s =
          copy_beside(std::max(15, o.repeats), from.data(), to.data(), o.stream_bytes / chunk * chunk, chunk, [&] {
            project(pool, type, w.data(), rows, kMatvecCols, x.data(), o.copy_beside_tokens, y_beside.data(), act, order);
          });
      r.copy_beside = fmt::format("one copy thread, {} B at a time, beside {} products of {} tokens on {} threads",
                                  chunk, name, o.copy_beside_tokens, r.threads);
    }
    say(fmt::format("{} products of {} tokens", name, kProbeMatmulBatch));
    const double ops = 2.0 * kMatmulRows * kMatmulCols * kProbeMatmulBatch;
    // A pass is ~2 ms: many passes cost little, and on a shared VM that flips between a fast and
    // a slow mode for tens of ms at a time, a short window gives a bimodal median.
    r.matmul_ops_per_s[name] = measure(std::max(61, o.repeats), ops, [&] {
      project(pool, type, small.data(), kMatmulRows, kMatmulCols, x.data(), kProbeMatmulBatch, y.data(), act, small_order);
    });
  }
  {
    // Several-token products over a matrix far beyond the caches, in the plan's row width: the
    // step model's extra-token curve per type (a decode batch, a verify pass, a prompt).
    r.last_level_cache_bytes = last_level_cache_bytes();
    r.product_cols = o.product_cols ? o.product_cols : kMatvecCols;
    const uint64_t max_tokens = kProbeProductTokens[std::size(kProbeProductTokens) - 1];
    std::vector<float> xs(max_tokens * r.product_cols);
    for (size_t i = 0; i < xs.size(); ++i) xs[i] = static_cast<float>((i * 7919) % 201) / 100.0f - 1.0f;
    for (GgmlType type : types) {
      const std::string name(ggml_type_info(type).name);
      const uint64_t row_bytes = ggml_row_bytes(type, r.product_cols, "probe");
      // One projection at a time, each `product_cols` rows (a square projection of the plan's
      // width), as a decode step dispatches them: per call, its activations are converted and
      // its rows split between the threads. Whole calls only.
      const uint64_t all_rows = std::max(4 * r.last_level_cache_bytes, o.matvec_bytes) / row_bytes;
      const uint64_t call_rows = std::min(all_rows, r.product_cols);
      const uint64_t rows = all_rows / call_rows * call_rows;
      r.product_bytes = rows * row_bytes;
      kernels::AlignedBytes w(rows * row_bytes);
      pool.parallel_for(rows, [&](uint64_t b, uint64_t e) {
        for (uint64_t i = b; i < e; ++i) fill_synthetic_row(type, r.product_cols, 0.05f, i + 1, &w[i * row_bytes]);
      });
      const kernels::RowOrder order = decoder_order(type, call_rows, rows, r.product_cols, w);
      std::vector<float> out(rows * max_tokens);
      const auto pass = [&](uint64_t tokens) {
        for (uint64_t at = 0; at < rows; at += call_rows)
          project(pool, type, &w[at * row_bytes], call_rows, r.product_cols, xs.data(), tokens, out.data(), act, order);
      };
      std::vector<double> one_token_s;  // every 1-token pass of the pairs: the read rate in the plan's shape
      for (uint64_t tokens : kProbeProductTokens) {
        say(fmt::format("{} products of {} tokens against one, {} columns over {} MiB", name, tokens, r.product_cols,
                        w.size() >> 20));
        r.extra_product_s_per_byte[name][tokens] =
            extra_product_s(o.product_point_s, pass, tokens, &one_token_s) / static_cast<double>(w.size());
      }
      std::sort(one_token_s.begin(), one_token_s.end());
      r.projection_bytes_per_s[name] = {static_cast<double>(w.size()) / one_token_s[one_token_s.size() / 2],
                                        static_cast<double>(w.size()) / one_token_s.back(),
                                        static_cast<double>(w.size()) / one_token_s.front()};
    }
  }
  {
    // Launch overhead: projections of several sizes, each over fresh memory (many copies of the
    // matrix, cycled), least squares of time against bytes: the intercept is the fixed cost.
    say("launch overhead (projections of 64 to 4096 rows)");
    const GgmlType type = GgmlType::Q8_0;
    const uint64_t cols = 1024, row_bytes = ggml_row_bytes(type, cols, "probe");
    kernels::AlignedBytes w(o.matvec_bytes / 2);
    pool.parallel_for(w.size() / row_bytes, [&](uint64_t b, uint64_t e) {
      for (uint64_t i = b; i < e; ++i) fill_synthetic_row(type, cols, 0.05f, i + 1, &w[i * row_bytes]);
    });
    double sx = 0, sy = 0, sxx = 0, sxy = 0, n = 0;
    for (uint64_t rows : {64, 128, 256, 512, 1024, 2048, 4096}) {
      const uint64_t bytes = rows * row_bytes, copies = w.size() / bytes;
      std::vector<double> per_call;
      for (int rep = 0; rep < std::max(3, o.repeats / 2); ++rep) {
        const auto t0 = std::chrono::steady_clock::now();
        for (uint64_t c = 0; c < copies; ++c) project(pool, type, &w[c * bytes], rows, cols, x.data(), 1, y.data(), act);
        per_call.push_back(seconds_since(t0) / static_cast<double>(copies));
      }
      std::sort(per_call.begin(), per_call.end());
      const double t = per_call[per_call.size() / 2], b = static_cast<double>(bytes);
      sx += b; sy += t; sxx += b * b; sxy += b * t; n += 1;
    }
    const double slope = (n * sxy - sx * sy) / (n * sxx - sx * sx);
    r.launch_overhead_s = std::max(0.0, (sy - slope * sx) / n);
    r.launch_fit_rate = slope > 0 ? 1 / slope : 0;
  }
  const std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
  r.date = date;
  return r;
}

namespace {

RateSample mean_of(const RateSample& a, const RateSample& b, double w) {
  return {(1 - w) * a.median + w * b.median, std::min(a.min, b.min), std::max(a.max, b.max)};
}

template <class Map, class Mean>
Map mean_of_maps(const Map& a, const Map& b, const Mean& mean) {
  Map out;
  for (const auto& [key, va] : a)
    if (const auto it = b.find(key); it != b.end()) out[key] = mean(va, it->second);
  return out;
}

}  // namespace

ProbeResult average_probes(const ProbeResult& before, const ProbeResult& after, double weight_after) {
  const double w = weight_after;
  const auto mean = [w](const RateSample& a, const RateSample& b) { return mean_of(a, b, w); };
  ProbeResult r = before;
  r.read_bytes_per_s = mean(before.read_bytes_per_s, after.read_bytes_per_s);
  r.copy_bytes_per_s = mean(before.copy_bytes_per_s, after.copy_bytes_per_s);
  r.copy_beside_compute_bytes_per_s = mean(before.copy_beside_compute_bytes_per_s, after.copy_beside_compute_bytes_per_s);
  r.matvec_bytes_per_s = mean_of_maps(before.matvec_bytes_per_s, after.matvec_bytes_per_s, mean);
  r.matmul_ops_per_s = mean_of_maps(before.matmul_ops_per_s, after.matmul_ops_per_s, mean);
  r.projection_bytes_per_s = mean_of_maps(before.projection_bytes_per_s, after.projection_bytes_per_s, mean);
  r.extra_product_s_per_byte = mean_of_maps(
      before.extra_product_s_per_byte, after.extra_product_s_per_byte,
      [w](const std::map<uint64_t, double>& a, const std::map<uint64_t, double>& b) {
        return mean_of_maps(a, b, [w](double x, double y) { return (1 - w) * x + w * y; });
      });
  r.launch_overhead_s = (1 - w) * before.launch_overhead_s + w * after.launch_overhead_s;
  r.launch_fit_rate = (1 - w) * before.launch_fit_rate + w * after.launch_fit_rate;
  r.averaged = true;
  return r;
}

namespace {
// The CPU runtime's step model: reads at the probed matrix-vector rates times each type's
// plan-shaped fraction, the probed launch overhead, and each type's several-token curve; no fixed
// time of its own.
Json product_calibration_json(const ProbeResult& r, const std::string& source) {
  Json curves = Json::object();
  for (const auto& [type, points] : r.extra_product_s_per_byte) {
    Json c = Json::object();
    for (const auto& [tokens, s_per_byte] : points) c[std::to_string(tokens)] = s_per_byte * 1e3 * 1e9;
    curves[type] = c;
  }
  // Each type's reads in the plan's shape (projection after projection) against the one big
  // matrix-vector product the profile's matvec rate is: the step model reads at that fraction.
  Json efficiency = Json::object();
  for (const auto& [type, s] : r.projection_bytes_per_s)
    if (const auto mv = r.matvec_bytes_per_s.find(type); mv != r.matvec_bytes_per_s.end() && mv->second.median > 0)
      efficiency[type] = s.median / mv->second.median;
  return Json{{"engine", "infer-plan cpu"},
              {"source", fmt::format("{}: products of 1 against 2, 4, 8, 32 tokens, {} columns over {} MiB "
                                     "(last-level cache {} MiB)", source, r.product_cols, r.product_bytes >> 20,
                                     r.last_level_cache_bytes >> 20)},
              {"decode", {{"fixed_ms", 0.0}, {"read_efficiency", 1.0}, {"read_efficiency_by_type", efficiency},
                          {"extra_token_ms_per_gb", curves}}}};
}
}  // namespace

Json probe_profile_json(const ProbeResult& r, const std::string& name) {
  auto gbs = [](double v) { return fmt::format("{:.3f} GB/s", v / 1e9); };
  auto gflops = [](double v) { return fmt::format("{:.3f} TFLOPS", v / 1e12); };
  Json matvec = Json::object(), matmul = Json::object(), spread = Json::object();
  for (const auto& [type, s] : r.matvec_bytes_per_s) matvec[type] = gbs(s.median);
  for (const auto& [type, s] : r.matmul_ops_per_s) matmul[type] = gflops(s.median);
  const std::string source = fmt::format("probe on {}, {} threads, {}{}", r.device, r.threads, r.date,
                                         r.averaged ? ", before and after the run (means)" : "");
  const double f32_ops = r.matmul_ops_per_s.count("F32") ? r.matmul_ops_per_s.at("F32").median : 1e9;
  Json j{{"name", name},
         {"kind", "device"},
         {"description", fmt::format("{} ({} threads), measured by infer-plan probe", r.device, r.threads)},
         {"memory", {{"capacity", fmt::format("{} B", r.memory_bytes)},
                     {"reserved", fmt::format("{} B", r.memory_bytes / 10)},
                     {"bandwidth", gbs(r.read_bytes_per_s.median)}}},
         {"compute", {{"fp32", gflops(f32_ops)}}},
         {"host_links", Json::array({{{"name", "cpu-copy-thread"},
                                      {"description", r.copy_beside + " (probed)"},
                                      {"bandwidth", gbs(r.copy_beside_compute_bytes_per_s.median)}}})},
         {"measured", {{"memory_bandwidth", gbs(r.read_bytes_per_s.median)},
                       {"host_to_device", gbs(r.copy_beside_compute_bytes_per_s.median)},
                       {"compute", {{"fp32", gflops(f32_ops)}}},
                       {"matvec", matvec},
                       {"matmul", matmul},
                       {"launch_overhead_us", r.launch_overhead_s * 1e6},
                       {"source", source}}},
         {"calibration", product_calibration_json(r, source)},
         {"sources", {source, "memory.reserved: 10% of physical memory held back for the OS (a convention, not measured)",
                      fmt::format("read bandwidth median {:.2f} GB/s (min {:.2f}, max {:.2f}) over the timed passes",
                                  r.read_bytes_per_s.median / 1e9, r.read_bytes_per_s.min / 1e9, r.read_bytes_per_s.max / 1e9)}}};
  return j;
}

}  // namespace infer_plan::runtime
