// kernels/cuda/attention (attention and kv_store) against kernels/cpu: attention_decode_reference
// per query token on the same cache bytes, and quantize_row for the writer. The cache is built on
// the host in runtime/paged_kv_cache's layout (per page, per layer: page_tokens K rows, then
// page_tokens V rows), two layers with the second under test, pages shuffled so no sequence's
// list is contiguous. The argument checks run everywhere (they throw before any CUDA call);
// without a device the test exits 77 (CTest: skipped).
//
// Attention tolerance, per output value of head h, dimension d: |got - ref| <= 2 A_d (2 e_w + e_a),
// A_d = sum_p w_p |v_pd| / sum_p w_p (the reference's softmax weights), u = 2^-24:
// - a score's error: q * (1/sqrtf(head_dim)) 3 u, then per lane head_dim/32 fused adds and 5
//   shuffle levels: e_s = (head_dim/32 + 9) u S, S = max_p sum_d |q_d k_pd| / sqrt(head_dim);
// - a weight's relative error e_w: exp(s_p - max) in the block and exp(max_s - max) in the
//   combine, each from two scores (2 e_s), a subtraction (2 u S) and expf (2 ulp = 4 u):
//   e_w = (4 (head_dim/32 + 9) + 4) u S + 8 u; weights off by e_w move a weighted mean by 2 e_w A_d;
// - sums: a thread's <= 256 fused adds, 7 over the thread parts, the combine's products and splits
//   (numerator), 13 + splits for the denominator, the division and the reference's cast:
//   e_a = (281 + 2 * splits) u.
// The factor 2 covers second-order terms. For 32 x 128 heads and the q below (S ~ 8.5) that is
// ~1.5e-4 A_d; a position read from a wrong page or skipped moves the output by w_p / sum w |v_p - o|,
// ~1e-2 A_d for the largest weights at ctx 1000.
// kv_store: bytes equal to quantize_row's, bit for bit (kv_store.cu does ggml's float operations in
// its order, each rounded once); every byte of the cache is compared, so a stray write fails too.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <numeric>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cpu/attention.hpp"
#include "kernels/cpu/quantize.hpp"
#include "kernels/cuda/attention.hpp"
#include "kernels/cuda/device_query.hpp"
#include "tests/kernels/cuda_test_support.hpp"

using namespace infer_plan;
namespace cuda = infer_plan::kernels::cuda;

using infer_plan::cuda_test::failures;
using infer_plan::cuda_test::DeviceArray;

namespace {

const double kU = std::ldexp(1.0, -24);

std::string type_name(GgmlType type) { return std::string(ggml_type_info(type).name); }

// --- argument checks (no device needed) ---------------------------------------------------------

// The call must throw std::invalid_argument whose message names `value`.
void expect_throw(const char* what, const std::string& value, const std::function<void()>& call) {
  try {
    call();
  } catch (const std::invalid_argument& e) {
    if (std::string(e.what()).find(value) == std::string::npos) {
      std::printf("FAILED: %s: message \"%s\" does not name %s\n", what, e.what(), value.c_str());
      ++failures;
      return;
    }
    std::printf("ok: %s -> %s\n", what, e.what());
    return;
  }
  std::printf("FAILED: %s did not throw std::invalid_argument\n", what);
  ++failures;
}

// A consistent layer for 8 KV heads of 128 BF16 values, 16-token pages, one layer.
cuda::PagedKvLayer fake_layer(uint8_t* base) {
  cuda::PagedKvLayer kv;
  kv.base = base;
  kv.page_tokens = 16;
  kv.k_row_bytes = kv.v_row_bytes = 8 * 128 * 2;
  kv.v_offset = 16 * kv.k_row_bytes;
  kv.page_bytes = 2 * kv.v_offset;
  return kv;
}

void check_arguments() {
  // Fake, aligned, never dereferenced: every call below must throw before reaching CUDA.
  alignas(16) static uint8_t storage[256];
  auto* f = reinterpret_cast<float*>(storage);
  const auto* u = reinterpret_cast<const uint32_t*>(storage);
  const cuda::AttentionTokens at{u, u, u};
  const cuda::AttentionShape shape{32, 8, 128};
  const cuda::PagedKvLayer kv = fake_layer(storage);
  expect_throw("attention head_dim 100", "100", [&] {
    cuda::PagedKvLayer odd = kv;
    odd.k_row_bytes = odd.v_row_bytes = 8 * 100 * 2;
    cuda::attention({32, 8, 100}, odd, at, f, 1, 16, f, f, nullptr);
  });
  expect_throw("attention head_dim 288", "288", [&] { cuda::attention({32, 8, 288}, kv, at, f, 1, 16, f, f, nullptr); });
  expect_throw("attention 12 heads over 8", "12", [&] { cuda::attention({12, 8, 128}, kv, at, f, 1, 16, f, f, nullptr); });
  expect_throw("attention Q2_K keys", "Q2_K", [&] {
    cuda::PagedKvLayer q2 = kv;
    q2.k_type = GgmlType::Q2_K;
    cuda::attention(shape, q2, at, f, 1, 16, f, f, nullptr);
  });
  expect_throw("attention F32 values", "F32", [&] {
    cuda::PagedKvLayer f32 = kv;
    f32.v_type = GgmlType::F32;
    cuda::attention(shape, f32, at, f, 1, 16, f, f, nullptr);
  });
  expect_throw("attention tokens 0", "tokens = 0", [&] { cuda::attention(shape, kv, at, f, 0, 16, f, f, nullptr); });
  expect_throw("attention max_ctx 0", "max_ctx = 0", [&] { cuda::attention(shape, kv, at, f, 1, 0, f, f, nullptr); });
  expect_throw("attention softcap -1", "softcap = -1", [&] {
    cuda::AttentionShape capped = shape;
    capped.softcap = -1.0f;
    cuda::attention(capped, kv, at, f, 1, 16, f, f, nullptr);
  });
  expect_throw("attention null q", "q", [&] { cuda::attention(shape, kv, at, nullptr, 1, 16, f, f, nullptr); });
  expect_throw("attention null scratch", "scratch", [&] { cuda::attention(shape, kv, at, f, 1, 16, f, nullptr, nullptr); });
  expect_throw("attention null ctx", "ctx",
               [&] { cuda::attention(shape, kv, {nullptr, u, u}, f, 1, 16, f, f, nullptr); });
  expect_throw("attention null cache", "base", [&] { cuda::attention(shape, fake_layer(nullptr), at, f, 1, 16, f, f, nullptr); });
  expect_throw("attention K row bytes", "2049", [&] {
    cuda::PagedKvLayer wrong = kv;
    wrong.k_row_bytes = 2049;
    cuda::attention(shape, wrong, at, f, 1, 16, f, f, nullptr);
  });
  expect_throw("attention V rows past the page", "page", [&] {
    cuda::PagedKvLayer small = kv;
    small.page_bytes -= 2;
    cuda::attention(shape, small, at, f, 1, 16, f, f, nullptr);
  });
  expect_throw("attention odd layer offset", "layer_offset 1", [&] {
    cuda::PagedKvLayer odd = kv;
    odd.layer_offset = 1;
    odd.page_bytes += 2;
    cuda::attention(shape, odd, at, f, 1, 16, f, f, nullptr);
  });
  const uint32_t width = 8 * 128;
  expect_throw("kv_store kv_width 48", "48", [&] { cuda::kv_store(kv, 48, f, f, 1, u, u, u, nullptr); });
  expect_throw("kv_store Q2_K values", "Q2_K", [&] {
    cuda::PagedKvLayer q2 = kv;
    q2.v_type = GgmlType::Q2_K;
    cuda::kv_store(q2, width, f, f, 1, u, u, u, nullptr);
  });
  expect_throw("kv_store tokens 0", "tokens = 0", [&] { cuda::kv_store(kv, width, f, f, 0, u, u, u, nullptr); });
  expect_throw("kv_store null k", "k, v", [&] { cuda::kv_store(kv, width, nullptr, f, 1, u, u, u, nullptr); });
  expect_throw("kv_store null page_table", "page_table",
               [&] { cuda::kv_store(kv, width, f, f, 1, u, u, nullptr, nullptr); });
  // The scratch formula, by hand: 3 tokens x 32 heads x ceil(1000 / 256) = 4 splits x (128 + 2).
  const uint64_t scratch = cuda::attention_scratch_floats(shape, 3, 1000);
  if (scratch != 3ull * 32 * 4 * 130) {
    std::printf("FAILED: attention_scratch_floats = %llu, expected %llu\n", static_cast<unsigned long long>(scratch),
                3ull * 32 * 4 * 130);
    ++failures;
  }
}

// --- the cache on the host -----------------------------------------------------------------------

// The page layout of runtime/paged_kv_cache for kLayers layers; kLayer is the one under test (not
// the first, so a lost layer_offset reads the other layer's rows).
struct Layout {
  static constexpr uint32_t kLayers = 2, kLayer = 1;
  GgmlType k_type, v_type;
  uint64_t kv_width;
  uint32_t page_tokens;
  uint64_t k_row, v_row, layer_bytes, page_bytes;

  Layout(GgmlType k, GgmlType v, uint64_t width, uint32_t tokens_per_page)
      : k_type(k), v_type(v), kv_width(width), page_tokens(tokens_per_page),
        k_row(ggml_row_bytes(k, width, "K row")), v_row(ggml_row_bytes(v, width, "V row")),
        layer_bytes(tokens_per_page * (k_row + v_row)), page_bytes(kLayers * layer_bytes) {}

  uint64_t k_at(uint64_t page, uint64_t layer, uint64_t slot) const {
    return page * page_bytes + layer * layer_bytes + slot * k_row;
  }
  uint64_t v_at(uint64_t page, uint64_t layer, uint64_t slot) const {
    return page * page_bytes + layer * layer_bytes + page_tokens * k_row + slot * v_row;
  }
  cuda::PagedKvLayer on_device(uint8_t* base) const {
    cuda::PagedKvLayer kv;
    kv.base = base;
    kv.page_bytes = page_bytes;
    kv.layer_offset = kLayer * layer_bytes;
    kv.v_offset = page_tokens * k_row;
    kv.page_tokens = page_tokens;
    kv.k_type = k_type;
    kv.v_type = v_type;
    kv.k_row_bytes = k_row;
    kv.v_row_bytes = v_row;
    return kv;
  }
};

// Pages 0..total-1 dealt in a shuffled order: sequence s gets ceil(length_s / page_tokens) of them,
// its list at table[start[s]...]; `spare` pages stay unused (their rows are still filled).
struct PageLists {
  std::vector<std::vector<uint32_t>> pages;
  std::vector<uint32_t> table, start;
  uint32_t total = 0;
};

PageLists deal_pages(const std::vector<uint32_t>& lengths, uint32_t page_tokens, uint32_t spare, std::mt19937& rng) {
  PageLists out;
  for (const uint32_t length : lengths) out.total += (length + page_tokens - 1) / page_tokens;
  out.total += spare;
  std::vector<uint32_t> order(out.total);
  std::iota(order.begin(), order.end(), 0u);
  std::shuffle(order.begin(), order.end(), rng);
  size_t next = 0;
  for (const uint32_t length : lengths) {
    out.start.push_back(static_cast<uint32_t>(out.table.size()));
    std::vector<uint32_t> mine(order.begin() + static_cast<ptrdiff_t>(next),
                               order.begin() + static_cast<ptrdiff_t>(next + (length + page_tokens - 1) / page_tokens));
    next += mine.size();
    out.table.insert(out.table.end(), mine.begin(), mine.end());
    out.pages.push_back(std::move(mine));
  }
  return out;
}

// Every row of every page and layer: random values, each row scaled by its own factor so the
// quantized blocks' scales differ.
std::vector<uint8_t> fill_cache(const Layout& layout, uint32_t pages, std::mt19937& rng) {
  std::vector<uint8_t> bytes(pages * layout.page_bytes);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f), factor(0.25f, 2.0f);
  std::vector<float> values(layout.kv_width);
  for (uint64_t p = 0; p < pages; ++p)
    for (uint64_t l = 0; l < Layout::kLayers; ++l)
      for (uint64_t s = 0; s < layout.page_tokens; ++s) {
        for (const bool value : {false, true}) {
          const float f = factor(rng);
          for (float& x : values) x = f * uniform(rng);
          const uint64_t at = value ? layout.v_at(p, l, s) : layout.k_at(p, l, s);
          const uint64_t row_bytes = value ? layout.v_row : layout.k_row;
          kernels::quantize_row(value ? layout.v_type : layout.k_type, values, {&bytes[at], row_bytes}, "cache row");
        }
      }
  return bytes;
}

// --- attention ------------------------------------------------------------------------------------

struct QueryToken {
  uint32_t seq;
  uint32_t ctx;
};

struct AttentionCase {
  uint32_t n_head, n_kv_head, head_dim, page_tokens;
  GgmlType k_type, v_type;
  std::vector<uint32_t> lengths;  // per sequence
  std::vector<QueryToken> tokens;
  // The families' parts (cuda::AttentionShape): a scale (0: the default), a soft-cap, a learned sink
  // per head (drawn within +-4, so that it takes a visible share), a window (0: none).
  float scale = 0.0f, softcap = 0.0f;
  bool sinks = false;
  uint32_t window = 0;
};

// The file comment's bound for each of n_head x head_dim outputs of one token.
std::vector<double> attention_bounds(const kernels::AttentionShape& shape, const float* q, const kernels::KvRowsView& k,
                                     const kernels::KvRowsView& v, uint32_t ctx) {
  const uint64_t d_head = shape.head_dim, row_values = shape.n_kv_head * d_head;
  const uint64_t group = shape.n_head / shape.n_kv_head;
  std::vector<float> k_rows(ctx * row_values), v_rows(ctx * row_values);
  for (uint64_t p = 0; p < ctx; ++p) {
    kernels::dequantize_row(k.type, {k.row(p), k.row_bytes}, {&k_rows[p * row_values], row_values}, "K row");
    kernels::dequantize_row(v.type, {v.row(p), v.row_bytes}, {&v_rows[p * row_values], row_values}, "V row");
  }
  const double scale = shape.scale > 0.0f ? shape.scale : 1.0 / std::sqrt(static_cast<double>(d_head));
  const double cap = shape.softcap;
  const double splits = std::ceil(ctx / static_cast<double>(cuda::kAttentionSplitTokens));
  const double e_a = (281 + 2 * splits) * kU;
  std::vector<double> bounds(shape.n_head * d_head), scores(ctx);
  for (uint64_t h = 0; h < shape.n_head; ++h) {
    const uint64_t offset = (h / group) * d_head;
    double s_abs = 0, max_score = -INFINITY;
    for (uint64_t p = 0; p < ctx; ++p) {
      double dot = 0, dot_abs = 0;
      for (uint64_t d = 0; d < d_head; ++d) {
        const double term = static_cast<double>(q[h * d_head + d]) * k_rows[p * row_values + offset + d];
        dot += term;
        dot_abs += std::fabs(term);
      }
      scores[p] = cap > 0 ? cap * std::tanh(dot * scale / cap) : dot * scale;
      s_abs = std::max(s_abs, dot_abs * scale);
      max_score = std::max(max_score, scores[p]);
    }
    double sum = 0;
    for (uint64_t p = 0; p < ctx; ++p) sum += (scores[p] = std::exp(scores[p] - max_score));
    // A soft-cap passes a score's error on (tanh's slope is at most 1) and adds its own: tanhf within
    // 2 ulp and the division and product, ~4 u of the cap, on each of two scores.
    const double e_w = (4.0 * (static_cast<double>(d_head) / 32 + 9) + 4) * kU * s_abs + 8 * kU + 16 * kU * cap;
    for (uint64_t d = 0; d < d_head; ++d) {
      double a = 0;
      for (uint64_t p = 0; p < ctx; ++p) a += scores[p] * std::fabs(v_rows[p * row_values + offset + d]);
      bounds[h * d_head + d] = 2 * (a / sum) * (2 * e_w + e_a) + 1e-30;
    }
  }
  return bounds;
}

void run_attention(const AttentionCase& c, uint32_t seed) {
  std::mt19937 rng(seed);
  const uint64_t d_head = c.head_dim, kv_width = static_cast<uint64_t>(c.n_kv_head) * d_head;
  const Layout layout(c.k_type, c.v_type, kv_width, c.page_tokens);
  const PageLists lists = deal_pages(c.lengths, c.page_tokens, 3, rng);
  const std::vector<uint8_t> cache = fill_cache(layout, lists.total, rng);
  const auto tokens = static_cast<uint32_t>(c.tokens.size());
  const uint64_t q_floats = static_cast<uint64_t>(c.n_head) * d_head;
  std::vector<float> q(tokens * q_floats);
  std::uniform_real_distribution<float> uniform(-3.0f, 3.0f);  // scores of spread ~1: a peaked softmax
  for (float& x : q) x = uniform(rng);
  std::vector<uint32_t> ctx, pages;
  uint32_t max_ctx = 0;
  for (const QueryToken& t : c.tokens) {
    ctx.push_back(t.ctx);
    pages.push_back(lists.start[t.seq]);
    max_ctx = std::max(max_ctx, t.ctx);
  }

  // The reference and the bound per token, from the host cache's bytes.
  std::vector<float> sinks(c.sinks ? c.n_head : 0);
  std::uniform_real_distribution<float> sink_logit(-4.0f, 4.0f);
  for (float& x : sinks) x = sink_logit(rng);
  kernels::AttentionShape cpu_shape{c.n_head, c.n_kv_head, d_head};
  cpu_shape.softcap = c.softcap;
  cpu_shape.sinks = c.sinks ? sinks.data() : nullptr;
  cpu_shape.scale = c.scale;
  std::vector<float> ref(tokens * q_floats);
  std::vector<double> bound(tokens * q_floats);
  for (uint32_t t = 0; t < tokens; ++t) {
    std::vector<const uint8_t*> k_pages, v_pages;
    for (const uint32_t page : lists.pages[c.tokens[t].seq]) {
      k_pages.push_back(&cache[layout.k_at(page, Layout::kLayer, 0)]);
      v_pages.push_back(&cache[layout.v_at(page, Layout::kLayer, 0)]);
    }
    // A window: the last `window` positions, as the CPU decoder hands them over (rows from `first`).
    const uint32_t first = c.window > 0 && ctx[t] > c.window ? ctx[t] - c.window : 0;
    const kernels::KvRowsView k{c.k_type, layout.k_row, c.page_tokens, k_pages.data(), first};
    const kernels::KvRowsView v{c.v_type, layout.v_row, c.page_tokens, v_pages.data(), first};
    kernels::attention_decode_reference(cpu_shape, &q[t * q_floats], k, v, ctx[t] - first, &ref[t * q_floats]);
    const std::vector<double> b = attention_bounds(cpu_shape, &q[t * q_floats], k, v, ctx[t] - first);
    std::copy(b.begin(), b.end(), bound.begin() + static_cast<ptrdiff_t>(t * q_floats));
  }

  DeviceArray<uint8_t> d_cache(cache);
  DeviceArray<float> d_q(q);
  DeviceArray<uint32_t> d_ctx(ctx), d_pages(pages), d_table(lists.table);
  constexpr uint64_t kGuard = 64;  // floats after out that must stay untouched
  DeviceArray<float> d_out(std::vector<float>(tokens * q_floats + kGuard));
  DeviceArray<float> d_sinks(c.sinks ? sinks : std::vector<float>(1));
  const cuda::AttentionShape shape{c.n_head, c.n_kv_head, c.head_dim, c.scale, c.softcap,
                                   c.sinks ? d_sinks.data : nullptr, c.window};
  const cuda::PagedKvLayer kv = layout.on_device(d_cache.data);
  const cuda::AttentionTokens at{d_ctx.data, d_pages.data, d_table.data};
  const std::string name = std::to_string(c.n_head) + "/" + std::to_string(c.n_kv_head) + " heads x " +
                           std::to_string(c.head_dim) + ", K " + type_name(c.k_type) + ", V " + type_name(c.v_type) +
                           ", " + std::to_string(c.page_tokens) + "-token pages" +
                           (c.scale > 0 ? ", scale " + std::to_string(c.scale) : "") +
                           (c.softcap > 0 ? ", soft-cap " + std::to_string(c.softcap) : "") +
                           (c.sinks ? ", sinks" : "") +
                           (c.window > 0 ? ", window " + std::to_string(c.window) : "");
  // The exact max_ctx, and a larger one (a graph captured for longer contexts): the blocks past
  // each token's context must leave and change nothing.
  for (const uint32_t grid_ctx : {max_ctx, max_ctx + 700}) {
    DeviceArray<float> d_scratch(std::vector<float>(cuda::attention_scratch_floats(shape, tokens, grid_ctx)));
    d_scratch.fill_bytes(0xFF);  // NaN: a partial read before it is written poisons the output
    d_out.fill_bytes(0xFF);
    cuda::attention(shape, kv, at, d_q.data, tokens, grid_ctx, d_out.data, d_scratch.data, nullptr);
    CHECK_CUDA(cudaDeviceSynchronize());
    const std::vector<float> got = d_out.to_host();
    int bad = 0;
    for (uint64_t i = 0; i < ref.size(); ++i) {
      const double diff = std::fabs(static_cast<double>(got[i]) - ref[i]);
      if (!(diff <= bound[i]) && bad++ < 5) {
        const uint64_t t = i / q_floats, h = (i % q_floats) / d_head, d = i % d_head;
        std::printf("  mismatch %s, max_ctx %u: token %llu (ctx %u) head %llu d %llu: got %.9g, ref %.9g, |diff| %.3g > %.3g\n",
                    name.c_str(), grid_ctx, static_cast<unsigned long long>(t), ctx[t], static_cast<unsigned long long>(h),
                    static_cast<unsigned long long>(d), static_cast<double>(got[i]), static_cast<double>(ref[i]), diff,
                    bound[i]);
      }
    }
    uint64_t guard_changed = 0;
    for (uint64_t i = ref.size(); i < got.size(); ++i) {
      uint32_t bits = 0;
      std::memcpy(&bits, &got[i], sizeof bits);
      guard_changed += bits != 0xFFFFFFFFu;
    }
    if (bad != 0 || guard_changed != 0) {
      std::printf("FAILED: attention %s, max_ctx %u: %d mismatches, %llu floats written past out\n", name.c_str(),
                  grid_ctx, bad, static_cast<unsigned long long>(guard_changed));
      ++failures;
    }
  }
  std::printf("checked attention %s, %u tokens\n", name.c_str(), tokens);
}

// --- kv_store -------------------------------------------------------------------------------------

// Values that exercise the quantizers' edges, written into block `block` of a row (32 values):
// zeros and negative zeros (Q4_0's d is -0 then), a +-tie for the largest magnitude (the first
// wins), magnitudes whose fp16 scale overflows or underflows, float subnormals (1/d overflows to
// inf and the codes go through C's int8 cast of inf / NaN), BF16 rounding ties both ways.
void write_edge_block(std::span<float> row, uint32_t block, uint32_t kind) {
  float* x = &row[32 * block];
  switch (kind % 7) {
    case 0: std::fill(x, x + 32, 0.0f); break;
    case 1: std::fill(x, x + 32, -0.0f); break;
    case 2:
      x[3] = -0.75f;
      x[20] = 0.75f;
      break;
    case 3: x[7] = 1e7f; break;
    case 4:
      for (uint32_t j = 0; j < 32; ++j) x[j] = 1e-6f * static_cast<float>(j % 5);
      break;
    case 5:
      for (uint32_t j = 0; j < 32; ++j) x[j] = j % 2 == 0 ? 1e-40f : -3e-41f;
      break;
    case 6:
      for (uint32_t j = 0; j < 32; ++j) {
        const uint32_t bits = 0x3F800000u + (j << 16) + 0x8000u;  // exactly half a BF16 ulp above
        std::memcpy(&x[j], &bits, sizeof bits);
      }
      break;
  }
}

struct StoreToken {
  uint32_t seq;
  uint32_t pos;
};

void run_kv_store(GgmlType k_type, GgmlType v_type, uint32_t kv_width, uint32_t page_tokens, uint32_t seed) {
  std::mt19937 rng(seed);
  const Layout layout(k_type, v_type, kv_width, page_tokens);
  const std::vector<uint32_t> lengths = {1000, 300};
  const PageLists lists = deal_pages(lengths, page_tokens, 2, rng);
  // A page's first and last slots, the slots either side of a page boundary, the last position.
  const std::vector<StoreToken> tokens = {{0, 0}, {1, 5}, {0, 15}, {0, 16}, {1, 299}, {0, 999}, {1, 17}};
  const auto n = static_cast<uint32_t>(tokens.size());
  std::vector<float> k(n * kv_width), v(n * kv_width);
  std::uniform_real_distribution<float> uniform(-2.0f, 2.0f);
  for (float& x : k) x = uniform(rng);
  for (float& x : v) x = uniform(rng);
  for (uint32_t t = 0; t < n; ++t) {
    write_edge_block({&k[t * kv_width], kv_width}, t % (kv_width / 32), t);
    write_edge_block({&v[t * kv_width], kv_width}, (t + 1) % (kv_width / 32), t + 3);
  }
  // NaN only where the promise covers it (BF16, F16: kernels/cuda/kv_store.cu's comment).
  if (k_type == GgmlType::BF16 || k_type == GgmlType::F16) k[kv_width - 1] = std::nanf("0x123");
  if (v_type == GgmlType::BF16 || v_type == GgmlType::F16) v[1] = -std::nanf("");

  std::vector<uint8_t> want(lists.total * layout.page_bytes, 0x5A);  // the bytes nobody writes
  std::vector<uint32_t> pos, pages;
  for (uint32_t t = 0; t < n; ++t) {
    const StoreToken& s = tokens[t];
    pos.push_back(s.pos);
    pages.push_back(lists.start[s.seq]);
    const uint32_t page = lists.pages[s.seq][s.pos / page_tokens], slot = s.pos % page_tokens;
    kernels::quantize_row(k_type, {&k[t * kv_width], kv_width},
                          {&want[layout.k_at(page, Layout::kLayer, slot)], layout.k_row}, "K row");
    kernels::quantize_row(v_type, {&v[t * kv_width], kv_width},
                          {&want[layout.v_at(page, Layout::kLayer, slot)], layout.v_row}, "V row");
  }

  DeviceArray<uint8_t> d_cache(std::vector<uint8_t>(want.size(), 0x5A));
  DeviceArray<float> d_k(k), d_v(v);
  DeviceArray<uint32_t> d_pos(pos), d_pages(pages), d_table(lists.table);
  cuda::kv_store(layout.on_device(d_cache.data), kv_width, d_k.data, d_v.data, n, d_pos.data, d_pages.data,
                 d_table.data, nullptr);
  CHECK_CUDA(cudaDeviceSynchronize());
  const std::vector<uint8_t> got = d_cache.to_host();
  const std::string name = "K " + type_name(k_type) + ", V " + type_name(v_type) + ", width " +
                           std::to_string(kv_width) + ", " + std::to_string(page_tokens) + "-token pages";
  int bad = 0;
  for (uint64_t i = 0; i < want.size(); ++i) {
    if (got[i] != want[i] && bad++ < 5) {
      const uint64_t page = i / layout.page_bytes, in_page = i % layout.page_bytes;
      std::printf("  mismatch kv_store %s: byte %llu (page %llu, byte %llu of the page): got 0x%02x, want 0x%02x\n",
                  name.c_str(), static_cast<unsigned long long>(i), static_cast<unsigned long long>(page),
                  static_cast<unsigned long long>(in_page), got[i], want[i]);
    }
  }
  if (bad != 0) {
    std::printf("FAILED: kv_store %s: %d bytes differ\n", name.c_str(), bad);
    ++failures;
  } else {
    std::printf("checked kv_store %s: bytes identical\n", name.c_str());
  }
}

}  // namespace

int main() {
  try {
    check_arguments();
    if (failures != 0) return 1;
    if (cuda::devices().empty()) {
      std::printf("SKIPPED: no CUDA device visible (argument checks passed)\n");
      return 77;
    }
    const GgmlType types[] = {GgmlType::BF16, GgmlType::F16, GgmlType::Q8_0, GgmlType::Q4_0};
    uint32_t seed = 7000;

    for (const GgmlType k : types)
      for (const GgmlType v : types) run_kv_store(k, v, 8 * 128, 16, seed++);
    run_kv_store(GgmlType::Q4_0, GgmlType::Q8_0, 32, 16, seed++);  // one block per row
    run_kv_store(GgmlType::Q8_0, GgmlType::BF16, 2 * 96, 5, seed++);

    // Contexts 1, 15, 16, 17 (page edges), 256, 257 (split edges), 300, 1000 (4 splits), from two
    // sequences whose pages are shuffled.
    const std::vector<uint32_t> lengths = {1000, 300};
    const std::vector<QueryToken> tokens = {{0, 1000}, {1, 300}, {0, 17}, {1, 16},
                                            {0, 15},   {1, 1},   {0, 257}, {1, 256}};
    for (const GgmlType k : types)
      for (const GgmlType v : types) {
        run_attention({32, 8, 128, 16, k, v, lengths, tokens}, seed++);  // GQA, group 4
        run_attention({16, 16, 64, 16, k, v, lengths, tokens}, seed++);  // one head per group
      }
    // Group 12: two blocks of query heads per KV head (8 + 4); head_dim 256 (one thread part).
    run_attention({24, 2, 256, 16, GgmlType::Q8_0, GgmlType::Q4_0, lengths, tokens}, seed++);
    run_attention({24, 2, 256, 16, GgmlType::BF16, GgmlType::F16, lengths, tokens}, seed++);
    // head_dim 96: two thread parts and 64 idle threads; 5-token pages; a single query token.
    run_attention({6, 3, 96, 5, GgmlType::Q4_0, GgmlType::BF16, {700}, {{0, 700}}}, seed++);
    // Multi-query: 8 heads on one KV head of 32 values (8 thread parts).
    run_attention({8, 1, 32, 16, GgmlType::F16, GgmlType::Q8_0, lengths, tokens}, seed++);
    // The families' parts. GPT-OSS: sinks, 128-position windows (from inside the first split, and
    // past whole splits at ctx 1000), head_dim 64. Gemma 2: a soft-cap of 50 on scores scaled by
    // query_pre_attn_scalar's 1/sqrt(224) (not head_dim's), a 300-position window that starts mid-split.
    run_attention({64, 8, 64, 16, GgmlType::BF16, GgmlType::BF16, lengths, tokens, 0.0f, 0.0f, true, 128}, seed++);
    run_attention({64, 8, 64, 16, GgmlType::BF16, GgmlType::BF16, lengths, tokens, 0.0f, 0.0f, true, 0}, seed++);
    const float gemma_scale = 0.066815f;  // 1 / sqrt(224)
    run_attention({16, 8, 256, 16, GgmlType::F16, GgmlType::F16, lengths, tokens, gemma_scale, 50.0f, false, 300},
                  seed++);
    run_attention({16, 8, 256, 16, GgmlType::Q8_0, GgmlType::Q8_0, lengths, tokens, gemma_scale, 50.0f, false, 0},
                  seed++);
  } catch (const std::exception& e) {
    std::printf("FAILED: %s\n", e.what());
    return 1;
  }
  if (failures != 0) {
    std::printf("FAILED: %d checks\n", failures);
    return 1;
  }
  std::printf("PASSED\n");
  return 0;
}
