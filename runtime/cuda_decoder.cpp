// Buffers are device memory from the backend (category activations), sized for the largest
// batch seen so far and grown on demand; a growth invalidates the captured graphs, whose kernels
// hold the old addresses. The per-token arrays travel in one pinned block, one copy per pass.
#include "runtime/cuda_decoder.hpp"

#include <cuda_runtime.h>
#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <cstring>
#include <exception>
#include <map>
#include <optional>
#include <utility>

#include "kernels/cpu/moe_routing.hpp"
#include "kernels/cuda/attention.hpp"
#include "kernels/cuda/check.hpp"
#include "kernels/cuda/elementwise.hpp"
#include "kernels/cuda/gather.hpp"
#include "kernels/cuda/gemm.hpp"
#include "kernels/cuda/matvec.hpp"
#include "kernels/cuda/rmsnorm.hpp"
#include "kernels/cuda/rope.hpp"
#include "kernels/cuda/swiglu.hpp"
#include "planner/core/input_error.hpp"
#include "runtime/cuda_backend.hpp"
#include "runtime/offload_prefetcher.hpp"
#include "runtime/rope_params.hpp"

namespace infer_plan::runtime {
namespace cuk = kernels::cuda;
namespace {

uint64_t round_up_pow2(uint64_t n) {
  uint64_t p = 8;
  while (p < n) p *= 2;
  return p;
}

// cuBLAS's default workspace per handle, which it allocates itself: 32 MiB on Hopper and later,
// 4 MiB before (cuBLAS's documentation, cublasSetWorkspace). The larger, so that the count holds
// on either.
constexpr uint64_t kCublasWorkspaceBytes = uint64_t{32} << 20;

// A matrix the layers multiply (reserve sizes the cuBLAS scratch for the widest of them; the head
// stays on matvec).
bool is_layer_matrix(TensorRole r) {
  switch (r) {
    case TensorRole::attn_q: case TensorRole::attn_k: case TensorRole::attn_v: case TensorRole::attn_output:
    case TensorRole::ffn_gate: case TensorRole::ffn_up: case TensorRole::ffn_down: case TensorRole::ffn_gate_inp:
    case TensorRole::ffn_gate_exps: case TensorRole::ffn_up_exps: case TensorRole::ffn_down_exps: return true;
    default: return false;
  }
}

bool is_expert_stack(TensorRole r) {
  return r == TensorRole::ffn_gate_exps || r == TensorRole::ffn_up_exps || r == TensorRole::ffn_down_exps;
}

// Rows of one matrix: a stack of experts counts one expert's.
uint64_t rows_per_matrix(const TensorInfo& t, const ModelSpec& spec) {
  uint64_t rows = 1;
  for (size_t i = 1; i < t.shape.size(); ++i) rows *= t.shape[i];
  return is_expert_stack(t.role) ? rows / spec.experts : rows;
}

// A pass that throws part-way leaves copies in flight that read the pinned per-token arrays (and
// kernels that write the buffers); the next pass rewrites those arrays. On unwinding, this waits
// for the stream. Its error is dropped: the pass's own is the one to report, and a destructor
// does not throw.
class SyncOnUnwind {
 public:
  explicit SyncOnUnwind(cudaStream_t stream) : stream_(stream), exceptions_(std::uncaught_exceptions()) {}
  ~SyncOnUnwind() {
    if (std::uncaught_exceptions() > exceptions_ && cudaStreamSynchronize(stream_) != cudaSuccess)
      (void)cudaGetLastError();  // clear a non-sticky error so the next call starts clean
  }
  SyncOnUnwind(const SyncOnUnwind&) = delete;
  SyncOnUnwind& operator=(const SyncOnUnwind&) = delete;

 private:
  cudaStream_t stream_;
  int exceptions_;
};

// Pinned host memory (not accounted: a few per-token arrays and the logits' landing place).
struct PinnedHost {
  void* data = nullptr;
  uint64_t bytes = 0;
  void resize(uint64_t n) {
    if (n <= bytes) return;
    release();
    CUDA_CHECK(cudaHostAlloc(&data, n, cudaHostAllocDefault));
    bytes = n;
  }
  void release() {
    if (data) CUDA_CHECK(cudaFreeHost(data));
    data = nullptr;
    bytes = 0;
  }
};

}  // namespace

struct CudaDecoder::State {
  CudaBackend& backend;
  const ModelWeights& weights;
  PagedKvCache& cache;
  ModelSpec spec;
  uint64_t layers = 0;
  OffloadPrefetcher* prefetcher = nullptr;
  CudaDecoderOptions options;
  cudaStream_t stream = nullptr;
  kernels::RopeParams rope;  // freq_factors on the device
  uint64_t ffn_width = 0;  // the widest FFN row count: dense intermediate or one expert's
  bool moe = false;

  // Capacities: tokens per pass, head rows per pass, page-table entries, attention's max context.
  uint64_t cap_tokens = 0, cap_rows = 0, cap_pages = 0, cap_ctx = 0;
  DeviceBuffer x, xn, q, k, v, att, gate, up, out, router, xe, down;  // tokens x width floats
  DeviceBuffer head_in, logits;                                       // rows x width floats
  DeviceBuffer picked;                                                // rows uint32: the argmax of each
  DeviceBuffer meta;          // uint32: ids, positions, contexts, page starts (cap_tokens each), head rows, page table
  DeviceBuffer moe_meta;      // uint32 token indices, then float weights (cap_tokens x experts_active each)
  DeviceBuffer attn_scratch;  // floats
  DeviceBuffer gemm_scratch;  // BF16, for passes of more than kMatvecTokensMax tokens
  uint64_t gemm_scratch_tokens = 0;
  PinnedHost meta_host, logits_host, router_host, moe_host, picked_host;
  std::unique_ptr<cuk::Gemm> gemm;
  std::vector<WeightTensor> slot_views;
  std::map<std::pair<uint64_t, uint64_t>, cudaGraphExec_t> graphs;  // (tokens, max context)
  uint64_t replays = 0;

  State(CudaBackend& b, const ModelWeights& w, PagedKvCache& c, uint64_t n_layers, OffloadPrefetcher* p,
        CudaDecoderOptions o)
      : backend(b), weights(w), cache(c), spec(w.spec()),
        layers(n_layers == 0 ? spec.layers : std::min(n_layers, spec.layers)), prefetcher(p), options(o),
        stream(static_cast<cudaStream_t>(b.stream())),
        rope(rope_params(spec, w.rope_freqs() ? w.rope_freqs()->floats() : nullptr)) {}

  ~State() {
    for (auto& [key, exec] : graphs) (void)cudaGraphExecDestroy(exec);
    for (DeviceBuffer* b : {&x, &xn, &q, &k, &v, &att, &gate, &up, &out, &router, &xe, &down, &head_in, &logits, &picked,
                            &meta, &moe_meta, &attn_scratch, &gemm_scratch})
      backend.free(*b);
    for (PinnedHost* h : {&meta_host, &logits_host, &router_host, &moe_host, &picked_host}) {
      if (h->data) (void)cudaFreeHost(h->data);  // a destructor does not throw
      h->data = nullptr;
    }
  }

  float* f(const DeviceBuffer& b) const { return static_cast<float*>(b.data); }
  uint32_t* meta_u32() const { return static_cast<uint32_t*>(meta.data); }
  const uint32_t* ids() const { return meta_u32(); }
  const uint32_t* positions() const { return meta_u32() + cap_tokens; }
  const uint32_t* contexts() const { return meta_u32() + 2 * cap_tokens; }
  const uint32_t* page_starts() const { return meta_u32() + 3 * cap_tokens; }
  const uint32_t* head_rows() const { return meta_u32() + 4 * cap_tokens; }
  const uint32_t* page_table() const { return meta_u32() + 4 * cap_tokens + cap_rows; }

  void realloc(DeviceBuffer& b, uint64_t bytes) {
    backend.free(b);
    b = backend.allocate(bytes, MemoryCategory::activations);
  }

  void drop_graphs() {
    for (auto& [key, exec] : graphs) CUDA_CHECK(cudaGraphExecDestroy(exec));
    graphs.clear();
  }

  // Grows every buffer a pass of `tokens` tokens, `rows` head rows, `pages` page-table entries
  // and contexts up to `max_ctx` needs.
  void reserve(uint64_t tokens, uint64_t rows, uint64_t pages, uint64_t max_ctx) {
    const uint64_t H = spec.hidden, QW = spec.q_width(), KW = spec.kv_width(), V = weights.output().rows;
    bool moved = false;
    if (tokens > cap_tokens) {
      cap_tokens = round_up_pow2(tokens);
      const uint64_t T = cap_tokens * sizeof(float);
      realloc(x, T * H);
      realloc(xn, T * std::max(H, QW));
      realloc(q, T * QW);
      realloc(k, T * KW);
      realloc(v, T * KW);
      realloc(att, T * QW);
      realloc(gate, T * ffn_width);
      realloc(up, T * ffn_width);
      realloc(out, T * H);
      if (moe) {
        realloc(router, T * spec.experts);
        realloc(xe, T * H);
        realloc(down, T * H);
        realloc(moe_meta, 2 * cap_tokens * spec.experts_active * sizeof(uint32_t));
        router_host.resize(T * spec.experts);
        moe_host.resize(2 * cap_tokens * spec.experts_active * sizeof(uint32_t));
      }
      moved = true;
    }
    if (rows > cap_rows) {
      cap_rows = round_up_pow2(rows);
      realloc(head_in, cap_rows * H * sizeof(float));
      realloc(logits, cap_rows * V * sizeof(float));
      logits_host.resize(cap_rows * V * sizeof(float));
      realloc(picked, cap_rows * sizeof(uint32_t));
      picked_host.resize(cap_rows * sizeof(uint32_t));
      moved = true;
    }
    if (moved || pages > cap_pages) {
      cap_pages = std::max(cap_pages, round_up_pow2(pages));
      const uint64_t bytes = (4 * cap_tokens + cap_rows + cap_pages) * sizeof(uint32_t);
      realloc(meta, bytes);
      meta_host.resize(bytes);
      moved = true;
    }
    const cuk::AttentionShape shape = attention_shape();
    if (moved || max_ctx > cap_ctx) {
      // The graphs bake cap_ctx into their attention launches: a longer one makes them all stale
      // (they would otherwise stay in the map, never replayed, and be counted).
      if (max_ctx > cap_ctx) drop_graphs();
      cap_ctx = std::max(cap_ctx, max_ctx);
      const uint64_t floats = cuk::attention_scratch_floats(shape, static_cast<uint32_t>(cap_tokens),
                                                            static_cast<uint32_t>(cap_ctx));
      if (floats * sizeof(float) > attn_scratch.bytes) {
        realloc(attn_scratch, floats * sizeof(float));
        moved = true;
      }
    }
    if (tokens > cuk::kMatvecTokensMax && tokens > gemm_scratch_tokens) {
      // cuBLAS for the layers' matrices (the head stays on matvec: its BF16 copy would be the
      // size of the vocabulary times the width).
      if (!gemm) gemm = std::make_unique<cuk::Gemm>(stream);
      gemm_scratch_tokens = cap_tokens;
      uint64_t elements = 0;
      for (uint64_t l = 0; l < layers; ++l)
        for (const WeightTensor* w : layer_matrices(weights.layer(l))) {
          const uint64_t rows_per = experts_of(*w) ? w->rows / spec.experts : w->rows;
          elements = std::max(elements, cuk::Gemm::scratch_bf16(w->type(), rows_per, w->cols,
                                                                 static_cast<uint32_t>(cap_tokens)));
        }
      if (elements * 2 > gemm_scratch.bytes) realloc(gemm_scratch, elements * 2);
      moved = true;
    }
    if (moved) drop_graphs();
  }

  static bool experts_of(const WeightTensor& w) { return is_expert_stack(w.placement.tensor.role); }

  static std::vector<const WeightTensor*> layer_matrices(const LayerWeights& L) {
    std::vector<const WeightTensor*> m;
    for (const WeightTensor* w : {L.attn_q, L.attn_k, L.attn_v, L.attn_output, L.ffn_gate, L.ffn_up, L.ffn_down,
                                  L.ffn_gate_inp, L.ffn_gate_exps, L.ffn_up_exps, L.ffn_down_exps})
      if (w) m.push_back(w);
    return m;
  }

  cuk::AttentionShape attention_shape() const {
    return {static_cast<uint32_t>(spec.heads), static_cast<uint32_t>(spec.kv_heads), static_cast<uint32_t>(spec.head_dim)};
  }

  cuk::PagedKvLayer kv_layer(uint64_t l) const {
    cuk::PagedKvLayer kv;
    kv.base = cache.base();
    kv.page_bytes = cache.page_bytes();
    kv.layer_offset = l * cache.layer_stride();
    kv.v_offset = cache.v_offset();
    kv.page_tokens = static_cast<uint32_t>(kKvPageTokens);
    kv.k_type = cache.types().k;
    kv.v_type = cache.types().v;
    kv.k_row_bytes = cache.k_row_bytes();
    kv.v_row_bytes = cache.v_row_bytes();
    return kv;
  }

  // y (tokens x rows) = W x: matvec up to kMatvecTokensMax tokens at a time, cuBLAS beyond
  // (never for the head, see reserve).
  void project(const WeightTensor& w, const float* xin, uint64_t tokens, float* y, uint64_t row_offset = 0,
               uint64_t rows = 0, bool head = false) {
    if (rows == 0) rows = w.rows;
    const uint8_t* data = w.data() + row_offset * w.row_bytes;
    if (tokens > cuk::kMatvecTokensMax && !head) {
      gemm->multiply(w.type(), data, rows, w.cols, xin, static_cast<uint32_t>(tokens), y, gemm_scratch.data);
      return;
    }
    for (uint64_t t0 = 0; t0 < tokens; t0 += cuk::kMatvecTokensMax) {
      const auto n = static_cast<uint32_t>(std::min<uint64_t>(cuk::kMatvecTokensMax, tokens - t0));
      cuk::matvec(w.type(), data, rows, w.cols, xin + t0 * w.cols, n, y + t0 * rows, stream);
    }
  }

  void attention_layer(const LayerWeights& L, uint64_t l, uint64_t tokens) {
    const uint64_t H = spec.hidden, D = spec.head_dim, QW = spec.q_width(), KW = spec.kv_width();
    const auto T = static_cast<uint32_t>(tokens);
    const float eps = static_cast<float>(spec.rms_norm_eps);
    project(*L.attn_q, f(xn), tokens, f(q));
    project(*L.attn_k, f(xn), tokens, f(k));
    project(*L.attn_v, f(xn), tokens, f(v));
    if (L.attn_q_bias) cuk::add_bias(f(q), L.attn_q_bias->floats(), T, QW, stream);
    if (L.attn_k_bias) cuk::add_bias(f(k), L.attn_k_bias->floats(), T, KW, stream);
    if (L.attn_v_bias) cuk::add_bias(f(v), L.attn_v_bias->floats(), T, KW, stream);
    if (L.attn_q_norm)  // Qwen3: RMSNorm per head before RoPE
      cuk::rmsnorm(f(q), L.attn_q_norm->floats(), static_cast<uint32_t>(tokens * spec.heads), static_cast<uint32_t>(D),
                   eps, f(q), stream);
    if (L.attn_k_norm)
      cuk::rmsnorm(f(k), L.attn_k_norm->floats(), static_cast<uint32_t>(tokens * spec.kv_heads),
                   static_cast<uint32_t>(D), eps, f(k), stream);
    cuk::rope(f(q), T, static_cast<uint32_t>(spec.heads), positions(), rope, stream);
    cuk::rope(f(k), T, static_cast<uint32_t>(spec.kv_heads), positions(), rope, stream);
    const cuk::PagedKvLayer kv = kv_layer(l);
    cuk::kv_store(kv, static_cast<uint32_t>(KW), f(k), f(v), T, positions(), page_starts(), page_table(), stream);
    cuk::attention(attention_shape(), kv, {contexts(), page_starts(), page_table()}, f(q), T,
                   static_cast<uint32_t>(cap_ctx), f(att), f(attn_scratch), stream);
    project(*L.attn_output, f(att), tokens, f(out));
    cuk::add(f(x), f(out), tokens * H, stream);
  }

  void ffn_dense(const LayerWeights& L, uint64_t tokens) {
    const uint64_t H = spec.hidden, F = L.ffn_gate->rows;
    project(*L.ffn_gate, f(xn), tokens, f(gate));
    project(*L.ffn_up, f(xn), tokens, f(up));
    cuk::swiglu(f(gate), f(up), tokens * F, f(gate), stream);
    project(*L.ffn_down, f(gate), tokens, f(out));
    cuk::add(f(x), f(out), tokens * H, stream);
  }

  // Routing on the host: the router's logits come back (one synchronization), each token picks
  // its experts as kernels/cpu/moe_routing does, and each expert runs over its tokens.
  void ffn_moe(const LayerWeights& L, uint64_t tokens) {
    const uint64_t H = spec.hidden, E = spec.experts, F = spec.moe_intermediate, K = spec.experts_active;
    project(*L.ffn_gate_inp, f(xn), tokens, f(router));
    CUDA_CHECK(cudaMemcpyAsync(router_host.data, router.data, tokens * E * sizeof(float), cudaMemcpyDeviceToHost, stream));
    CUDA_CHECK(cudaStreamSynchronize(stream));
    std::vector<std::vector<std::pair<uint32_t, float>>> routed(E);
    const auto* logits_h = static_cast<const float*>(router_host.data);
    for (uint64_t t = 0; t < tokens; ++t)
      for (const kernels::ExpertChoice& ch : kernels::route_top_k(std::span(logits_h + t * E, E), static_cast<uint32_t>(K), true))
        routed[ch.expert].push_back({static_cast<uint32_t>(t), ch.weight});
    // Token indices, then weights, expert after expert; one copy.
    auto* idx_h = static_cast<uint32_t*>(moe_host.data);
    auto* w_h = reinterpret_cast<float*>(idx_h + cap_tokens * K);
    std::vector<uint64_t> start(E + 1, 0);
    for (uint64_t e = 0; e < E; ++e) {
      start[e + 1] = start[e] + routed[e].size();
      for (uint64_t i = 0; i < routed[e].size(); ++i) {
        idx_h[start[e] + i] = routed[e][i].first;
        w_h[start[e] + i] = routed[e][i].second;
      }
    }
    CUDA_CHECK(cudaMemcpyAsync(moe_meta.data, moe_host.data, 2 * cap_tokens * K * sizeof(uint32_t),
                               cudaMemcpyHostToDevice, stream));
    const auto* idx_d = static_cast<const uint32_t*>(moe_meta.data);
    const auto* w_d = reinterpret_cast<const float*>(idx_d + cap_tokens * K);
    for (uint64_t e = 0; e < E; ++e) {
      const uint64_t n = routed[e].size();
      if (n == 0) continue;
      const auto N = static_cast<uint32_t>(n);
      cuk::gather_rows(f(xn), H, idx_d + start[e], N, f(xe), stream);
      project(*L.ffn_gate_exps, f(xe), n, f(gate), e * F, F);
      project(*L.ffn_up_exps, f(xe), n, f(up), e * F, F);
      cuk::swiglu(f(gate), f(up), n * F, f(gate), stream);
      project(*L.ffn_down_exps, f(gate), n, f(down), e * H, H);
      cuk::scatter_add_rows(f(x), H, f(down), idx_d + start[e], w_d + start[e], N, stream);
    }
  }

  // The pass itself, enqueued on the stream (captured into a graph for decode steps).
  void enqueue(uint64_t tokens, uint64_t rows) {
    const uint64_t H = spec.hidden;
    const float eps = static_cast<float>(spec.rms_norm_eps);
    const WeightTensor& embd = weights.token_embd();
    cuk::embed_rows(embd.type(), embd.data(), embd.row_bytes, H, ids(), static_cast<uint32_t>(tokens), f(x), stream);
    for (uint64_t l = 0; l < layers; ++l) {
      // An offloaded part: waited for before its first tensor, released after its last, as the
      // CPU decoder does; release records the fence on this stream (runtime/cuda_offload).
      const std::optional<uint64_t> group = prefetcher ? weights.offload_group_of(l) : std::nullopt;
      const OffloadPart part = group ? *weights.offload_part() : OffloadPart::ffn;
      LayerWeights L = weights.layer(l);
      auto acquire = [&] { L = weights.layer_in_slot(l, *group, prefetcher->wait(*group), slot_views); };
      if (group && part != OffloadPart::ffn) acquire();
      cuk::rmsnorm(f(x), L.attn_norm->floats(), static_cast<uint32_t>(tokens), static_cast<uint32_t>(H), eps, f(xn), stream);
      attention_layer(L, l, tokens);
      if (group && part == OffloadPart::attn) prefetcher->release(*group);
      if (group && part == OffloadPart::ffn) acquire();
      cuk::rmsnorm(f(x), L.ffn_norm->floats(), static_cast<uint32_t>(tokens), static_cast<uint32_t>(H), eps, f(xn), stream);
      if (L.ffn_gate_inp) ffn_moe(L, tokens);
      else ffn_dense(L, tokens);
      if (group && part != OffloadPart::attn) prefetcher->release(*group);
    }
    cuk::gather_rows(f(x), H, head_rows(), static_cast<uint32_t>(rows), f(head_in), stream);
    cuk::rmsnorm(f(head_in), weights.output_norm().floats(), static_cast<uint32_t>(rows), static_cast<uint32_t>(H), eps,
                 f(head_in), stream);
    project(weights.output(), f(head_in), rows, f(logits), 0, 0, true);
  }

  // Captures enqueue() into a graph for this shape, or replays the one captured before.
  void launch_graph(uint64_t tokens) {
    const std::pair<uint64_t, uint64_t> key{tokens, cap_ctx};
    auto it = graphs.find(key);
    if (it == graphs.end()) {
      CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
      try {
        enqueue(tokens, tokens);
      } catch (...) {
        cudaGraph_t broken = nullptr;
        (void)cudaStreamEndCapture(stream, &broken);
        if (broken) (void)cudaGraphDestroy(broken);
        throw;
      }
      cudaGraph_t graph = nullptr;
      CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
      cudaGraphExec_t exec = nullptr;
      const cudaError_t e = cudaGraphInstantiate(&exec, graph, 0);
      (void)cudaGraphDestroy(graph);
      CUDA_CHECK(e);
      it = graphs.emplace(key, exec).first;
    } else {
      ++replays;
    }
    CUDA_CHECK(cudaGraphLaunch(it->second, stream));
  }
};

std::optional<std::string> cuda_decoder_refusal(const ModelSpec& spec, KvTypes kv,
                                                std::span<const TensorPlacement> tensors) {
  if (spec.post_norms || spec.embedding_scale || spec.gelu_ffn)
    return fmt::format("{}: Gemma's post-norms, embedding scale and GELU run on the CPU backend only (use --backend "
                       "cpu)", spec.name);
  if (spec.is_mla() || spec.shared_experts > 0 || !spec.moe_norm_top_k || spec.sigmoid_routing)
    return fmt::format("{}: DeepSeek's latent attention and shared experts run on the CPU backend only (use --backend "
                       "cpu)", spec.name);
  if (spec.attn_sinks || spec.expert_bias || spec.swiglu_limit > 0)
    return fmt::format("{}: GPT-OSS's attention sinks, biases and clamped SwiGLU run on the CPU backend only (use "
                       "--backend cpu)", spec.name);
  if (spec.fused_qkv)
    return fmt::format("{}: Phi's fused q/k/v and gate/up matrices run on the CPU backend only (use --backend cpu)",
                       spec.name);
  if (spec.window_layer_count() > 0)
    return fmt::format("{}: sliding-window layers run on the CPU backend only; the CUDA decoder reads every layer's "
                       "pages in full and expects no window (use --backend cpu)", spec.name);
  if (spec.head_dim % 32 != 0 || spec.head_dim == 0 || spec.head_dim > 256)
    return fmt::format("{}: head_dim {}; the CUDA attention takes multiples of 32 up to 256 (use --backend cpu)",
                       spec.name, spec.head_dim);
  for (GgmlType t : {kv.k, kv.v})
    if (t != GgmlType::BF16 && t != GgmlType::F16 && t != GgmlType::Q8_0 && t != GgmlType::Q4_0)
      return fmt::format("kv: the CUDA runtime stores K and V as BF16, F16, Q8_0 or Q4_0, not {}",
                         ggml_type_info(t).name);
  for (const TensorPlacement& p : tensors) {
    const bool ok = p.tensor.is_vector() ? p.type == GgmlType::F32 : cuk::has_matvec(p.type);
    if (!ok)
      return fmt::format("weights: {} is stored as {}, which the CUDA runtime cannot multiply (it runs {} matrices "
                         "and F32 vectors); choose weights made of those, e.g. Q4_K_M",
                         p.tensor.name, ggml_type_info(p.type).name, cuk::matvec_type_names());
  }
  return std::nullopt;
}

std::optional<std::string> cuda_row_order_refusal(std::span<const WeightTensor> tensors) {
  for (const WeightTensor& w : tensors)
    if (w.order != kernels::RowOrder::ggml)
      return fmt::format("weights: {} is in the CPU backend's interleaved row order (groups of {} {} rows side by "
                         "side); the CUDA kernels read GGML's order, one row after another: load the weights on "
                         "the CUDA backend", w.placement.tensor.name, kernels::kInterleavedRows,
                         ggml_type_info(w.type()).name);
  return std::nullopt;
}

// reserve()'s allocations, buffer by buffer, at the capacities passes up to `pass` leave.
CudaDecoderScratch cuda_decoder_scratch(const ModelSpec& spec, std::span<const TensorPlacement> tensors,
                                        const PassShape& pass) {
  const uint64_t H = spec.hidden, QW = spec.q_width(), KW = spec.kv_width(), V = spec.vocab;
  const uint64_t tokens = round_up_pow2(pass.tokens), rows = round_up_pow2(pass.rows);
  const uint64_t pages = round_up_pow2(pass.pages);
  uint64_t ffn_width = 0;  // as the constructor finds it: dense FFN rows, or one expert's
  bool moe = false;
  for (const TensorPlacement& p : tensors) {
    if (p.tensor.role == TensorRole::ffn_gate) ffn_width = std::max(ffn_width, rows_per_matrix(p.tensor, spec));
    if (p.tensor.role == TensorRole::ffn_gate_inp) moe = true;
  }
  if (moe) ffn_width = std::max(ffn_width, spec.moe_intermediate);
  constexpr uint64_t F32 = sizeof(float), U32 = sizeof(uint32_t), BF16 = 2;
  CudaDecoderScratch s;
  // x, out; xn; q, att; k, v; gate, up
  s.activations = tokens * F32 * (2 * H + std::max(H, QW) + 2 * QW + 2 * KW + 2 * ffn_width);
  if (moe)  // router; xe, down; token indices and weights
    s.activations += tokens * F32 * (spec.experts + 2 * H) + 2 * tokens * spec.experts_active * U32;
  s.logits = rows * (H * F32 + V * F32 + U32);  // head_in, logits, picked
  s.meta = (4 * tokens + rows + pages) * U32;
  const cuk::AttentionShape shape{static_cast<uint32_t>(spec.heads), static_cast<uint32_t>(spec.kv_heads),
                                  static_cast<uint32_t>(spec.head_dim)};
  s.attention =
      cuk::attention_scratch_floats(shape, static_cast<uint32_t>(tokens), static_cast<uint32_t>(pass.context)) * F32;
  if (pass.tokens > cuk::kMatvecTokensMax) {
    uint64_t elements = 0;
    for (const TensorPlacement& p : tensors)
      if (p.tensor.layer >= 0 && is_layer_matrix(p.tensor.role))
        elements = std::max(elements, cuk::Gemm::scratch_bf16(p.type, rows_per_matrix(p.tensor, spec),
                                                               p.tensor.row_length(), static_cast<uint32_t>(tokens)));
    s.gemm = elements * BF16;
    s.cublas_workspace = kCublasWorkspaceBytes;
  }
  return s;
}

CudaDecoder::CudaDecoder(CudaBackend& backend, const ModelWeights& weights, PagedKvCache& cache, uint64_t layers,
                         OffloadPrefetcher* prefetcher, CudaDecoderOptions options)
    : state_(std::make_unique<State>(backend, weights, cache, layers, prefetcher, options)) {
  State& s = *state_;
  if (prefetcher && (s.layers != s.spec.layers || prefetcher->groups() != weights.offload_groups().size()))
    throw std::logic_error("CudaDecoder: a prefetcher needs the offloaded weights it copies and every layer");
  std::vector<TensorPlacement> placements;
  for (const WeightTensor& w : weights.tensors()) placements.push_back(w.placement);
  if (const std::optional<std::string> why = cuda_decoder_refusal(s.spec, cache.types(), placements))
    throw InputError(*why);
  if (const std::optional<std::string> why = cuda_row_order_refusal(weights.tensors())) throw InputError(*why);
  for (uint64_t l = 0; l < s.layers; ++l) {
    const LayerWeights& L = weights.layer(l);
    if (L.ffn_gate_inp) s.moe = true;
    if (L.ffn_gate) s.ffn_width = std::max(s.ffn_width, L.ffn_gate->rows);
  }
  if (s.moe) s.ffn_width = std::max(s.ffn_width, s.spec.moe_intermediate);
}

CudaDecoder::~CudaDecoder() = default;

uint64_t CudaDecoder::layers() const { return state_->layers; }
const ModelSpec& CudaDecoder::spec() const { return state_->spec; }
uint64_t CudaDecoder::graphs_captured() const { return state_->graphs.size(); }
uint64_t CudaDecoder::graph_replays() const { return state_->replays; }

uint64_t CudaDecoder::run(std::span<const SequenceChunk> chunks, bool every_token) {
  State& s = *state_;
  uint64_t tokens = 0, pages = 0, max_ctx = 0;
  bool one_each = true;
  for (const SequenceChunk& c : chunks) {
    assert(!c.tokens.empty());
    tokens += c.tokens.size();
    pages += s.cache.pages_of(c.seq).size();
    max_ctx = std::max(max_ctx, s.cache.tokens_reserved(c.seq));
    one_each = one_each && c.tokens.size() == 1;
    // The kernels read and write within the sequence's pages only: a pass beyond them would be
    // cut short on the device in silence, so it is refused here.
    check_within_reservation(c, s.cache.tokens_reserved(c.seq));
  }
  assert(tokens > 0);
  const uint64_t rows = every_token ? tokens : chunks.size();
  s.reserve(tokens, rows, pages, max_ctx);

  // The per-token arrays at their fixed offsets (see State::ids ...), then one copy.
  auto* m = static_cast<uint32_t*>(s.meta_host.data);
  const uint64_t T = s.cap_tokens;
  uint64_t t = 0, page_at = 0, row = 0;
  for (const SequenceChunk& c : chunks) {
    const std::vector<uint64_t>& owned = s.cache.pages_of(c.seq);
    for (size_t i = 0; i < c.tokens.size(); ++i, ++t) {
      if (c.tokens[i] >= s.weights.token_embd().rows)
        throw std::logic_error(fmt::format("CudaDecoder: token {} is outside the vocabulary", c.tokens[i]));
      m[t] = c.tokens[i];
      m[T + t] = static_cast<uint32_t>(c.past + i);
      m[2 * T + t] = static_cast<uint32_t>(c.past + i + 1);
      m[3 * T + t] = static_cast<uint32_t>(page_at);
      if (every_token) m[4 * T + row++] = static_cast<uint32_t>(t);
    }
    if (!every_token) m[4 * T + row++] = static_cast<uint32_t>(t - 1);
    for (uint64_t p : owned) m[4 * T + s.cap_rows + page_at++] = static_cast<uint32_t>(p);
  }
  const uint64_t meta_bytes = (4 * T + s.cap_rows + page_at) * sizeof(uint32_t);
  CUDA_CHECK(cudaMemcpyAsync(s.meta.data, s.meta_host.data, meta_bytes, cudaMemcpyHostToDevice, s.stream));

  // Graphs for decode steps a graph can hold: no host waits (offload), no host routing (MoE), and
  // matvec only (cuBLAS's workspace is not captured here).
  if (s.options.graphs && one_each && !s.prefetcher && !s.moe && tokens <= cuk::kMatvecTokensMax)
    s.launch_graph(tokens);
  else
    s.enqueue(tokens, rows);
  return rows;
}

void CudaDecoder::forward(std::span<const SequenceChunk> chunks, std::vector<std::vector<float>>& logits,
                          bool every_token) {
  State& s = *state_;
  const SyncOnUnwind sync_on_error(s.stream);
  const uint64_t rows = run(chunks, every_token);
  const uint64_t V = s.weights.output().rows;
  CUDA_CHECK(cudaMemcpyAsync(s.logits_host.data, s.logits.data, rows * V * sizeof(float), cudaMemcpyDeviceToHost, s.stream));
  CUDA_CHECK(cudaStreamSynchronize(s.stream));
  const auto* lh = static_cast<const float*>(s.logits_host.data);
  logits.resize(rows);
  for (uint64_t r = 0; r < rows; ++r) logits[r].assign(lh + r * V, lh + (r + 1) * V);
}

void CudaDecoder::forward_argmax(std::span<const SequenceChunk> chunks, std::vector<uint32_t>& tokens) {
  State& s = *state_;
  const SyncOnUnwind sync_on_error(s.stream);
  const uint64_t rows = run(chunks, false);
  cuk::argmax_rows(s.f(s.logits), static_cast<uint32_t>(rows), s.weights.output().rows,
                   static_cast<uint32_t*>(s.picked.data), s.stream);
  CUDA_CHECK(cudaMemcpyAsync(s.picked_host.data, s.picked.data, rows * sizeof(uint32_t), cudaMemcpyDeviceToHost, s.stream));
  CUDA_CHECK(cudaStreamSynchronize(s.stream));
  const auto* p = static_cast<const uint32_t*>(s.picked_host.data);
  tokens.assign(p, p + rows);
}

}  // namespace infer_plan::runtime
