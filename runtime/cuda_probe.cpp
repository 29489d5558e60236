// Every figure is timed on the device with CUDA events around a pass of enqueued work, after one
// untimed warm-up pass; the median pass is kept and min/max reported beside it.
#include "runtime/cuda_probe.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <stdexcept>
#include <vector>

#include "kernels/cpu/half.hpp"
#include "kernels/cpu/quantize.hpp"
#include "kernels/cuda/check.hpp"
#include "kernels/cuda/empty_kernel.hpp"
#include "kernels/cuda/matvec.hpp"
#include "kernels/cuda/row_types.hpp"
#include "runtime/model_weights.hpp"

namespace infer_plan::runtime {
namespace {

// Owners that release on every path (a failed check throws midway through the probe).
struct DeviceMemory {
  void* p = nullptr;
  explicit DeviceMemory(uint64_t bytes) { CUDA_CHECK(cudaMalloc(&p, bytes)); }
  ~DeviceMemory() { (void)cudaFree(p); }
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;
};
struct PinnedMemory {
  void* p = nullptr;
  explicit PinnedMemory(uint64_t bytes) { CUDA_CHECK(cudaHostAlloc(&p, bytes, cudaHostAllocDefault)); }
  ~PinnedMemory() { (void)cudaFreeHost(p); }
  PinnedMemory(const PinnedMemory&) = delete;
  PinnedMemory& operator=(const PinnedMemory&) = delete;
};
struct Stream {
  cudaStream_t s = nullptr;
  // Non-blocking: nothing on the legacy default stream serializes with it, and it can be captured.
  Stream() { CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)); }
  ~Stream() { (void)cudaStreamDestroy(s); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
};
struct EventPair {
  cudaEvent_t start = nullptr, stop = nullptr;
  EventPair() {
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&stop));
  }
  ~EventPair() {
    (void)cudaEventDestroy(start);
    (void)cudaEventDestroy(stop);
  }
  EventPair(const EventPair&) = delete;
  EventPair& operator=(const EventPair&) = delete;
};

// Enqueues `pass` once untimed, then `repeats` times between two events; rate = work / seconds.
RateSample measure(cudaStream_t s, int repeats, double work, const std::function<void()>& pass) {
  EventPair ev;
  pass();
  CUDA_CHECK(cudaStreamSynchronize(s));
  std::vector<double> rates;
  for (int i = 0; i < repeats; ++i) {
    CUDA_CHECK(cudaEventRecord(ev.start, s));
    pass();
    CUDA_CHECK(cudaEventRecord(ev.stop, s));
    CUDA_CHECK(cudaEventSynchronize(ev.stop));
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, ev.start, ev.stop));
    rates.push_back(work / (static_cast<double>(ms) * 1e-3));
  }
  std::sort(rates.begin(), rates.end());
  return {rates[rates.size() / 2], rates.front(), rates.back()};
}

// Uniform in [-1, 1) from a fixed-seed LCG (Numerical Recipes' constants), rounded to BF16: GEMM
// inputs that are not all zeros (tensor cores draw less power, and may clock higher, on zeros).
std::vector<uint16_t> random_bf16(uint64_t count, uint32_t seed) {
  std::vector<uint16_t> v(count);
  uint32_t x = seed;
  for (auto& b : v) {
    x = x * 1664525u + 1013904223u;
    const float u = static_cast<float>(x >> 8) * (1.0f / 16777216.0f);  // [0, 1), 24 bits
    b = kernels::fp32_to_bf16(2.0f * u - 1.0f);
  }
  return v;
}

// One element of C = A * B (column-major, n x n) in double, from the BF16 inputs.
double gemm_reference(const std::vector<uint16_t>& a, const std::vector<uint16_t>& b, int n, int row, int col) {
  double sum = 0;
  for (int k = 0; k < n; ++k)
    sum += static_cast<double>(kernels::bf16_to_fp32(a[static_cast<size_t>(k) * n + row])) *
           static_cast<double>(kernels::bf16_to_fp32(b[static_cast<size_t>(col) * n + k]));
  return sum;
}

RateSample probe_gemm_bf16(cudaStream_t s, const CudaProbeOptions& o) {
  const int n = o.gemm_size;
  const uint64_t elems = static_cast<uint64_t>(n) * static_cast<uint64_t>(n);
  const std::vector<uint16_t> a = random_bf16(elems, 1), b = random_bf16(elems, 2);
  DeviceMemory da(elems * 2), db(elems * 2), dc(elems * 2);
  CUDA_CHECK(cudaMemcpy(da.p, a.data(), elems * 2, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(db.p, b.data(), elems * 2, cudaMemcpyHostToDevice));
  cublasHandle_t handle = nullptr;
  CUBLAS_CHECK(kernels::cuda::cublas().create(&handle));
  struct HandleGuard {
    cublasHandle_t h;
    ~HandleGuard() { (void)kernels::cuda::cublas().destroy(h); }
  } guard{handle};
  CUBLAS_CHECK(kernels::cuda::cublas().set_stream(handle, s));
  const float alpha = 1.0f, beta = 0.0f;
  auto gemm = [&] {
    CUBLAS_CHECK(kernels::cuda::cublas().gemm_ex(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, da.p, CUDA_R_16BF, n, db.p,
                              CUDA_R_16BF, n, &beta, dc.p, CUDA_R_16BF, n, CUBLAS_COMPUTE_32F,
                              CUBLAS_GEMM_DEFAULT_TENSOR_OP));
  };
  const double ops = 2.0 * n * static_cast<double>(n) * n * o.gemms_per_pass;
  const RateSample rate = measure(s, o.repeats, ops, [&] {
    for (int i = 0; i < o.gemms_per_pass; ++i) gemm();
  });

  // A GEMM that computes the wrong thing measures nothing: check two elements against a double
  // reference. |got - ref| <= atol + rtol * |ref| with rtol = 2^-8 (C is rounded to nearest BF16,
  // 7 stored mantissa bits: half an ulp) and atol = 1e-2 (fp32 accumulation of n exact products of
  // size <= 1 in the tensor cores' order; ~1e-3 expected). |ref| ~ sqrt(n / 9) = 30 for n = 8192,
  // so a wrong layout or a garbage result cannot pass.
  const int probes[2][2] = {{0, 0}, {n - 1, n / 2}};
  for (const auto& rc : probes) {
    uint16_t got_bits = 0;
    const size_t index = static_cast<size_t>(rc[1]) * n + rc[0];
    CUDA_CHECK(cudaMemcpy(&got_bits, static_cast<const uint16_t*>(dc.p) + index, 2, cudaMemcpyDeviceToHost));
    const double got = kernels::bf16_to_fp32(got_bits), ref = gemm_reference(a, b, n, rc[0], rc[1]);
    if (!(std::fabs(got - ref) <= 1e-2 + std::ldexp(1.0, -8) * std::fabs(ref)))
      throw std::runtime_error(fmt::format("{}:{}: cuBLAS BF16 GEMM check: C[{}, {}] = {}, expected {} (double reference)",
                                           __FILE__, __LINE__, rc[0], rc[1], got, ref));
  }
  return rate;
}

// Seconds per empty kernel: `launches` back to back on the stream, and the same launches captured
// once into a CUDA graph and replayed.
void probe_launch_overhead(cudaStream_t s, const CudaProbeOptions& o, CudaProbeResult& r) {
  const int count = o.launches;
  const RateSample stream_rate = measure(s, o.repeats, count, [&] { kernels::cuda::launch_empty_kernels(count, s); });
  r.launch_overhead_stream_s = 1.0 / stream_rate.median;

  cudaGraph_t graph = nullptr;
  CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  kernels::cuda::launch_empty_kernels(count, s);
  CUDA_CHECK(cudaStreamEndCapture(s, &graph));
  cudaGraphExec_t exec = nullptr;
  CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  struct GraphGuard {
    cudaGraph_t g;
    cudaGraphExec_t e;
    ~GraphGuard() {
      (void)cudaGraphExecDestroy(e);
      (void)cudaGraphDestroy(g);
    }
  } guard{graph, exec};
  const RateSample graph_rate = measure(s, o.repeats, count, [&] { CUDA_CHECK(cudaGraphLaunch(exec, s)); });
  r.launch_overhead_graph_s = 1.0 / graph_rate.median;
}

}  // namespace

std::map<std::string, RateSample> probe_cuda_matvec(const CudaProbeOptions& o) {
  constexpr uint64_t kCols = kCudaProbeMatvecCols;
  constexpr uint64_t kDistinctRows = 64;  // written on the host once, then tiled on the device
  std::vector<GgmlType> types;  // every type the CUDA kernels multiply
  for (const kernels::cuda::CudaRowType& t : kernels::cuda::kCudaRowTypes)
    if (t.matrix) types.push_back(t.type);
  Stream stream;
  const cudaStream_t s = stream.s;
  std::vector<float> x(kCols);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 7919) % 201) / 100.0f - 1.0f;
  // One weight buffer for every type; y sized for the type with the most rows (the smallest row).
  uint64_t rows_max = 0;
  for (const GgmlType type : types) rows_max = std::max(rows_max, o.matvec_bytes / ggml_row_bytes(type, kCols, "probe"));
  if (rows_max < 1 || o.matvecs_per_pass < 1)
    throw std::invalid_argument(fmt::format("probe_cuda_matvec: matvec_bytes = {} holds no {}-value row, or "
                                            "matvecs_per_pass = {} < 1",
                                            o.matvec_bytes, kCols, o.matvecs_per_pass));
  DeviceMemory w(o.matvec_bytes), dx(kCols * sizeof(float)), dy(rows_max * sizeof(float));
  CUDA_CHECK(cudaMemcpy(dx.p, x.data(), kCols * sizeof(float), cudaMemcpyHostToDevice));
  auto* dw = static_cast<uint8_t*>(w.p);

  std::map<std::string, RateSample> rates;
  for (const GgmlType type : types) {
    const std::string name(ggml_type_info(type).name);
    const uint64_t row_bytes = ggml_row_bytes(type, kCols, "probe");
    const uint64_t rows = o.matvec_bytes / row_bytes;
    const uint64_t bytes = rows * row_bytes;
    if (o.progress) o.progress(fmt::format("{} matrix-vector over {} MiB", name, bytes >> 20));
    // Synthetic rows (random codes and scales: the kernels' work does not depend on the values,
    // but all-zero weights could let the memory system compress). Tile the host rows, then double
    // what is written until the matrix is full: row r is tile row r % tile_rows.
    const uint64_t tile_rows = std::min(rows, kDistinctRows);
    std::vector<uint8_t> tile(tile_rows * row_bytes);
    for (uint64_t r = 0; r < tile_rows; ++r) fill_synthetic_row(type, kCols, 1.0f, 7 + r, tile.data() + r * row_bytes);
    CUDA_CHECK(cudaMemcpy(dw, tile.data(), tile.size(), cudaMemcpyHostToDevice));
    for (uint64_t done = tile.size(); done < bytes;) {
      const uint64_t n = std::min(done, bytes - done);
      CUDA_CHECK(cudaMemcpy(dw + done, dw, n, cudaMemcpyDeviceToDevice));
      done += n;
    }
    rates[name] = measure(s, o.repeats, static_cast<double>(bytes) * o.matvecs_per_pass, [&] {
      for (int i = 0; i < o.matvecs_per_pass; ++i)
        kernels::cuda::matvec(type, dw, rows, kCols, static_cast<const float*>(dx.p), 1, static_cast<float*>(dy.p), s);
    });

    // A product that computes the wrong thing measures nothing: check the last row against a double
    // reference over kernels/cpu's dequantized row. |got - ref| <= 1e-3 * sum |w x|: an F32 sum of
    // 4096 terms errs by ~1e-5 of that (tests/kernels/test_cuda_matvec.cpp states the exact bound),
    // while a wrong block or row is off by about the whole sum.
    float got = 0;
    CUDA_CHECK(cudaMemcpy(&got, static_cast<const float*>(dy.p) + (rows - 1), sizeof got, cudaMemcpyDeviceToHost));
    std::vector<float> w_row(kCols);
    kernels::dequantize_row(type, {tile.data() + ((rows - 1) % tile_rows) * row_bytes, row_bytes}, w_row, "probe row");
    double ref = 0, magnitude = 0;
    for (uint64_t c = 0; c < kCols; ++c) {
      ref += static_cast<double>(w_row[c]) * x[c];
      magnitude += std::fabs(static_cast<double>(w_row[c]) * x[c]);
    }
    if (!(std::fabs(got - ref) <= 1e-3 * magnitude))
      throw std::runtime_error(fmt::format("{}:{}: matvec {} check: y[{}] = {}, expected {} (double reference)",
                                           __FILE__, __LINE__, name, rows - 1, got, ref));
  }
  return rates;
}

CudaProbeResult probe_cuda(const CudaProbeOptions& o) {
  auto say = [&](const std::string& line) {
    if (o.progress) o.progress(line);
  };
  CudaProbeResult r;
  CUDA_CHECK(cudaSetDevice(o.device));
  CUDA_CHECK(cudaFree(nullptr));  // the context exists before memory is read
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, o.device));
  r.device = prop.name;
  r.sm_major = prop.major;
  r.sm_minor = prop.minor;
  size_t free_bytes = 0, total_bytes = 0;
  CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  r.memory_free_bytes = free_bytes;
  r.memory_total_bytes = total_bytes;
  Stream stream;
  const cudaStream_t s = stream.s;

  {
    say(fmt::format("device-to-device copy over {} MiB", o.device_copy_bytes >> 20));
    const uint64_t bytes = o.device_copy_bytes;
    DeviceMemory src(bytes), dst(bytes);
    CUDA_CHECK(cudaMemsetAsync(src.p, 1, bytes, s));
    r.device_copy_bytes_per_s = measure(s, o.repeats, 2.0 * static_cast<double>(bytes), [&] {
      CUDA_CHECK(cudaMemcpyAsync(dst.p, src.p, bytes, cudaMemcpyDeviceToDevice, s));
    });
  }
  {
    say(fmt::format("pinned host-to-device and device-to-host copies over {} MiB", o.host_copy_bytes >> 20));
    const uint64_t bytes = o.host_copy_bytes;
    PinnedMemory host(bytes);
    DeviceMemory dev(bytes);
    std::fill_n(static_cast<unsigned char*>(host.p), bytes, static_cast<unsigned char>(1));  // touch every page
    r.host_to_device_bytes_per_s = measure(s, o.repeats, static_cast<double>(bytes), [&] {
      CUDA_CHECK(cudaMemcpyAsync(dev.p, host.p, bytes, cudaMemcpyHostToDevice, s));
    });
    r.device_to_host_bytes_per_s = measure(s, o.repeats, static_cast<double>(bytes), [&] {
      CUDA_CHECK(cudaMemcpyAsync(host.p, dev.p, bytes, cudaMemcpyDeviceToHost, s));
    });
  }
  say(fmt::format("BF16 GEMM {}^3 through cuBLAS", o.gemm_size));
  r.gemm_size = o.gemm_size;
  r.gemm_bf16_ops_per_s = probe_gemm_bf16(s, o);
  say("launch overhead (empty kernels, stream and graph)");
  probe_launch_overhead(s, o, r);
  r.matvec_bytes_per_s = probe_cuda_matvec(o);
  r.matvec_cols = kCudaProbeMatvecCols;
  CUDA_CHECK(cudaStreamSynchronize(s));

  const std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
  r.date = date;
  return r;
}

Json cuda_probe_profile_json(const CudaProbeResult& r, const std::string& name) {
  auto gbs = [](double v) { return fmt::format("{:.3f} GB/s", v / 1e9); };
  auto tflops = [](double v) { return fmt::format("{:.3f} TFLOPS", v / 1e12); };
  auto spread = [&](const std::string& what, const RateSample& s) {
    return fmt::format("{}: median {} (min {}, max {}) over the timed passes", what, gbs(s.median), gbs(s.min), gbs(s.max));
  };
  Json matvec = Json::object();
  for (const auto& [type, s] : r.matvec_bytes_per_s) matvec[type] = gbs(s.median);
  const std::string source = fmt::format("probe on {} (sm_{}{}), {}", r.device, r.sm_major, r.sm_minor, r.date);
  const uint64_t context_bytes = r.memory_total_bytes - r.memory_free_bytes;
  Json j{{"name", name},
         {"kind", "device"},
         {"description", fmt::format("{}, measured by infer-plan probe --backend cuda", r.device)},
         {"memory", {{"capacity", fmt::format("{} B", r.memory_total_bytes)},
                     {"reserved", fmt::format("{} B", context_bytes)},
                     {"bandwidth", gbs(r.device_copy_bytes_per_s.median)}}},
         {"compute", {{"bf16", tflops(r.gemm_bf16_ops_per_s.median)}}},
         {"host_links", Json::array({{{"name", "pcie-probed"},
                                      {"description", "pinned host-to-device cudaMemcpyAsync (probed)"},
                                      {"bandwidth", gbs(r.host_to_device_bytes_per_s.median)}}})},
         {"measured", {{"memory_bandwidth", gbs(r.device_copy_bytes_per_s.median)},
                       {"host_to_device", gbs(r.host_to_device_bytes_per_s.median)},
                       {"device_to_host", gbs(r.device_to_host_bytes_per_s.median)},
                       {"compute", {{"bf16", tflops(r.gemm_bf16_ops_per_s.median)}}},
                       {"matvec", matvec},
                       {"matmul", {{"BF16", tflops(r.gemm_bf16_ops_per_s.median)}}},
                       {"launch_overhead_us", r.launch_overhead_graph_s * 1e6},
                       {"launch_unit", "kernel"},  // a graph node: the CUDA decoder's every kernel
                       {"source", source}}},
         {"sources", {source,
                      fmt::format("memory.reserved: total - free from cudaMemGetInfo before the probe's buffers "
                                  "(the CUDA context), {} B", context_bytes),
                      spread("device-to-device copy, bytes read + written", r.device_copy_bytes_per_s),
                      spread("pinned host-to-device copy", r.host_to_device_bytes_per_s),
                      spread("pinned device-to-host copy", r.device_to_host_bytes_per_s),
                      fmt::format("BF16 GEMM {0}x{0}x{0} (cublasGemmEx, fp32 accumulation): median {1} (min {2}, max {3}); "
                                  "matmul.BF16 is the same figure",
                                  r.gemm_size, tflops(r.gemm_bf16_ops_per_s.median),
                                  tflops(r.gemm_bf16_ops_per_s.min), tflops(r.gemm_bf16_ops_per_s.max)),
                      fmt::format("launch_overhead_us: per empty kernel replayed from a CUDA graph ({:.2f} us); "
                                  "launched on a stream: {:.2f} us",
                                  r.launch_overhead_graph_s * 1e6, r.launch_overhead_stream_s * 1e6),
                      r.matvec_bytes_per_s.empty()
                          ? std::string("matvec: not measured")
                          : fmt::format("matvec: batch-1 products (kernels/cuda/matvec) over {}-column matrices, "
                                        "weight bytes read per second",
                                        r.matvec_cols)}}};
  for (const auto& [type, s] : r.matvec_bytes_per_s) j["sources"].push_back(spread("matvec." + type, s));
  return j;
}

}  // namespace infer_plan::runtime
