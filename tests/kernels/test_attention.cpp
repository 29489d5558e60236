// Decode attention over paged, quantized K/V: every path that runs here against the plain-loop
// reference for every pair of K and V types, on pages deliberately out of memory order; plus
// hand-checkable cases (one token, all-equal keys, the GQA head mapping).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "kernels/cpu/attention.hpp"
#include "kernels/cpu/quantize.hpp"

using namespace infer_plan;
using namespace infer_plan::kernels;

namespace {

// The cache types the runtime offers, and F32 (the AVX2 path copies it as is).
constexpr GgmlType kKvTypes[] = {GgmlType::BF16, GgmlType::F16, GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::F32};
constexpr AttentionPath kPaths[] = {AttentionPath::portable, AttentionPath::avx2};

std::string type_name(GgmlType t) { return std::string(ggml_type_info(t).name); }
std::string path_name(AttentionPath p) { return p == AttentionPath::portable ? "portable" : "avx2"; }

// Uniform in [-1, 1) from the top 24 bits of mt19937 (whose output is fixed by the standard,
// unlike std::uniform_real_distribution's).
float uniform_pm1(std::mt19937& gen) { return static_cast<float>(gen() >> 8) * 0x1p-23f - 1.0f; }

std::vector<float> random_values(uint64_t n, float scale, std::mt19937& gen) {
  std::vector<float> v(n);
  for (float& x : v) x = scale * uniform_pm1(gen);
  return v;
}

// One cache (K or V) of n_tokens rows, quantized into pages of block_tokens rows whose order in
// memory is a seeded shuffle of their logical order, so a kernel that assumes contiguous pages
// reads the wrong tokens.
struct PagedRows {
  std::vector<uint8_t> storage;
  std::vector<const uint8_t*> pages;
  KvRowsView view;

  PagedRows(GgmlType type, const std::vector<float>& rows, uint64_t row_values, uint64_t block_tokens,
            uint32_t seed) {
    const uint64_t n_tokens = rows.size() / row_values;
    const uint64_t n_pages = (n_tokens + block_tokens - 1) / block_tokens;
    const uint64_t row_bytes = ggml_row_bytes(type, row_values, "test");
    storage.assign(n_pages * block_tokens * row_bytes, 0xAB);  // unused rows hold junk, not zeros
    std::vector<uint64_t> slot(n_pages);
    for (uint64_t p = 0; p < n_pages; ++p) slot[p] = p;
    std::mt19937 gen(seed);
    for (uint64_t p = n_pages; p > 1; --p) std::swap(slot[p - 1], slot[gen() % p]);  // Fisher-Yates
    if (n_pages > 1 && slot[0] == 0) std::swap(slot[0], slot[1]);  // never the identity order
    pages.resize(n_pages);
    for (uint64_t p = 0; p < n_pages; ++p) pages[p] = storage.data() + slot[p] * block_tokens * row_bytes;
    view = {type, row_bytes, block_tokens, pages.data()};
    for (uint64_t t = 0; t < n_tokens; ++t) {
      uint8_t* dst = storage.data() + slot[t / block_tokens] * block_tokens * row_bytes + (t % block_tokens) * row_bytes;
      quantize_row(type, {&rows[t * row_values], row_values}, {dst, row_bytes}, "test");
    }
  }

  std::vector<float> dequantized(uint64_t token, uint64_t row_values) const {
    std::vector<float> out(row_values);
    dequantize_row(view.type, {view.row(token), view.row_bytes}, out, "test");
    return out;
  }
};

// |got - ref| <= atol + rtol * |ref| everywhere; prints the first mismatches and the largest gap.
void check_close(const std::vector<float>& got, const std::vector<float>& ref, double atol, double rtol,
                   const std::string& what) {
  double max_error = 0.0;
  int mismatches = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double error = std::fabs(static_cast<double>(got[i]) - ref[i]);
    max_error = std::max(max_error, error);
    if (!(error <= atol + rtol * std::fabs(ref[i]))) {
      if (mismatches < 5) MESSAGE(what << " [" << i << "]: got " << got[i] << ", want " << ref[i]);
      ++mismatches;
    }
  }
  INFO(what << ": " << mismatches << " mismatches, max error " << max_error);
  CHECK(mismatches == 0);
}

// Every path that runs here, and attention_decode's own choice, against the reference for every
// (K type, V type) pair, on seeded data in shuffled 16-token pages.
void check_all_type_pairs(const AttentionShape& shape, uint64_t n_tokens, float q_scale,
                          std::span<const GgmlType> types = kKvTypes) {
  // Both sides see the same dequantized K and V (the AVX2 row conversions are bit-identical to
  // dequantize_row; q is not quantized), so the gap is fp32 arithmetic only: dots of head_dim
  // <= 128 terms, float exponentials (2 ulp), and a float weighted sum of up to 300 V rows of
  // |v| <= 1, whose worst-case n * 2^-24 bound is 1.8e-5. A score's rounding error becomes the
  // same relative error in its weight, so it grows with the scores: the largest gap seen is 6e-7
  // at q scale 4 (scores within ~+-5) and 4.3e-6 at q scale 64 (scores up to ~+-100).
  constexpr double kAtol = 2e-5, kRtol = 1e-4;
  constexpr uint64_t kBlockTokens = 16;
  const uint64_t row_values = shape.n_kv_head * shape.head_dim;
  std::mt19937 gen(1234 + static_cast<uint32_t>(n_tokens));
  const std::vector<float> q = random_values(shape.n_head * shape.head_dim, q_scale, gen);
  const std::vector<float> k_rows = random_values(n_tokens * row_values, 1.0f, gen);
  const std::vector<float> v_rows = random_values(n_tokens * row_values, 1.0f, gen);
  for (const GgmlType k_type : types) {
    const PagedRows k(k_type, k_rows, row_values, kBlockTokens, 7);
    for (const GgmlType v_type : types) {
      const PagedRows v(v_type, v_rows, row_values, kBlockTokens, 8);
      std::vector<float> ref(shape.n_head * shape.head_dim);
      attention_decode_reference(shape, q.data(), k.view, v.view, n_tokens, ref.data());
      const std::string what = "K " + type_name(k_type) + " V " + type_name(v_type) + " heads " +
                               std::to_string(shape.n_head) + "/" + std::to_string(shape.n_kv_head) + " dim " +
                               std::to_string(shape.head_dim) + " tokens " + std::to_string(n_tokens) +
                               " q scale " + std::to_string(q_scale);
      std::vector<float> got(ref.size()), scratch;
      for (const AttentionPath path : kPaths) {
        if (!attention_path_available(path)) continue;
        attention_decode_on(path, shape, q.data(), k.view, v.view, n_tokens, got.data(), scratch);
        check_close(got, ref, kAtol, kRtol, what + " " + path_name(path));
      }
      attention_decode(shape, q.data(), k.view, v.view, n_tokens, got.data(), scratch);
      check_close(got, ref, kAtol, kRtol, what + " attention_decode");
    }
  }
}

}  // namespace

TEST_CASE("attention matches the reference for every K type x V type, shape and length") {
  // q scaled by 4: a peaked softmax, as trained attention often is; by 64: score gaps past 87,
  // where exp underflows (the AVX2 exp flushes those weights to 0).
  // 12 query heads over 4 KV heads: a head count that is not a multiple of 8 (the AVX2 exp's
  // width) and groups of 3 (not a multiple of the 4 heads the AVX2 dot takes together).
  for (const AttentionShape shape : {AttentionShape{8, 2, 128}, AttentionShape{4, 4, 64}, AttentionShape{12, 4, 64}})
    for (const uint64_t n_tokens : {1u, 17u, 300u})
      for (const float q_scale : {4.0f, 64.0f}) check_all_type_pairs(shape, n_tokens, q_scale);
}

TEST_CASE("Gemma 2's soft-capped scores: every path against the reference") {
  // q scaled by 64 gives scores up to ~+-100, so a cap of 5 binds on most of them (tanh saturates)
  // and one of 50 on the largest; the reference caps in double.
  for (const float cap : {5.0f, 50.0f}) {
    CAPTURE(cap);
    for (const uint64_t n_tokens : {17u, 300u}) check_all_type_pairs(AttentionShape{8, 2, 128, cap}, n_tokens, 64.0f);
  }
}

TEST_CASE("GPT-OSS's attention sinks: every path against the reference") {
  // Sinks below, among and above the scores (q scale 4: scores within ~+-5), so the sink is the
  // max for some heads and negligible for others; 12 heads, not a multiple of the AVX2 exp's 8.
  std::vector<float> sinks(12);
  for (size_t h = 0; h < sinks.size(); ++h) sinks[h] = -8.0f + 1.5f * static_cast<float>(h);
  AttentionShape shape{12, 4, 64};
  shape.sinks = sinks.data();
  for (const uint64_t n_tokens : {1u, 17u, 300u}) check_all_type_pairs(shape, n_tokens, 4.0f);
}

TEST_CASE("MLA's absorbed shape: 16 heads over one 576-wide latent row, the scale of 192-wide heads") {
  // q scale 0.5 keeps the 576-term scores within ~+-5 at the explicit scale 1 / sqrt(192)
  AttentionShape shape{16, 1, 576};
  shape.scale = 1.0f / std::sqrt(192.0f);
  for (const uint64_t n_tokens : {1u, 40u}) check_all_type_pairs(shape, n_tokens, 0.5f);
}

TEST_CASE("a sink takes its share of one token's weight and brings no value") {
  // One token of score s and a sink z: the token's weight is e^s / (e^s + e^z), so with q = 0
  // (s = 0) and z = ln 3 the output is v / (1 + 3) = v / 4 exactly in floats for these v.
  AttentionShape shape{2, 1, 32};
  const float z = std::log(3.0f);
  const std::vector<float> sinks = {z, -INFINITY};  // head 1: no sink's share at all
  shape.sinks = sinks.data();
  std::vector<float> row(32);
  for (size_t i = 0; i < row.size(); ++i) row[i] = static_cast<float>(i) - 16.0f;  // exact in F32
  const PagedRows k(GgmlType::F32, row, 32, 16, 1), v(GgmlType::F32, row, 32, 16, 2);
  const std::vector<float> q(64, 0.0f);
  for (const AttentionPath path : kPaths) {
    if (!attention_path_available(path)) continue;
    std::vector<float> out(64), scratch;
    attention_decode_on(path, shape, q.data(), k.view, v.view, 1, out.data(), scratch);
    std::vector<float> want(64);
    for (size_t d = 0; d < 32; ++d) want[d] = row[d] / 4.0f, want[32 + d] = row[d];
    // 1 + e^(ln 3) is 4 within an ulp or two of exp: relative 1e-6
    check_close(out, want, 0.0, 1e-6, "sink ln 3 " + path_name(path));
  }
}

TEST_CASE("attention with a head_dim that is not a multiple of 8 (float caches only)") {
  // head_dim 20: the 8-wide loops leave a 4-value tail in every row conversion, dot and axpy.
  // Quantized types need whole 32-value blocks, so only the float types take such a head.
  constexpr GgmlType kFloatTypes[] = {GgmlType::BF16, GgmlType::F16, GgmlType::F32};
  for (const uint64_t n_tokens : {1u, 5u, 300u}) check_all_type_pairs({6, 2, 20}, n_tokens, 4.0f, kFloatTypes);
}

TEST_CASE("attention over one token returns that token's V row exactly") {
  // softmax of one score is exp(0) / exp(0) = 1 exactly, and 0 + 1 * v = v exactly.
  const AttentionShape shape{8, 2, 64};
  const uint64_t row_values = shape.n_kv_head * shape.head_dim;
  std::mt19937 gen(99);
  const std::vector<float> q = random_values(shape.n_head * shape.head_dim, 4.0f, gen);
  const std::vector<float> row = random_values(row_values, 1.0f, gen);
  for (const GgmlType type : kKvTypes) {
    const PagedRows k(type, row, row_values, 16, 1), v(type, row, row_values, 16, 2);
    const std::vector<float> v_row = v.dequantized(0, row_values);
    for (const AttentionPath path : kPaths) {
      if (!attention_path_available(path)) continue;
      std::vector<float> out(shape.n_head * shape.head_dim), scratch;
      attention_decode_on(path, shape, q.data(), k.view, v.view, 1, out.data(), scratch);
      std::vector<float> want(out.size());
      for (uint64_t h = 0; h < shape.n_head; ++h)
        for (uint64_t d = 0; d < shape.head_dim; ++d) want[h * shape.head_dim + d] = v_row[(h / 4) * shape.head_dim + d];
      check_close(out, want, 0.0, 0.0, type_name(type) + " one token " + path_name(path));
    }
  }
}

TEST_CASE("attention over no tokens gives zeros, not NaN") {
  const AttentionShape shape{4, 2, 32};
  const PagedRows k(GgmlType::BF16, {}, 64, 16, 1), v(GgmlType::BF16, {}, 64, 16, 2);
  const std::vector<float> q(4 * 32, 1.0f);
  for (const AttentionPath path : kPaths) {
    if (!attention_path_available(path)) continue;
    std::vector<float> out(q.size(), -1.0f), scratch;
    attention_decode_on(path, shape, q.data(), k.view, v.view, 0, out.data(), scratch);
    check_close(out, std::vector<float>(q.size(), 0.0f), 0.0, 0.0, "no tokens " + path_name(path));
  }
}

TEST_CASE("attention with all keys equal gives the mean of the V rows") {
  // Equal scores give weights 1/n each (1/n rounded to float, relative error 2^-24), summed in
  // float over n = 37 rows of |v| <= 1: |error| <= 37 * 2^-24 * 1 ~ 2.2e-6; atol 3e-6.
  const AttentionShape shape{4, 2, 32};
  const uint64_t row_values = shape.n_kv_head * shape.head_dim, n_tokens = 37;
  std::mt19937 gen(5);
  const std::vector<float> q = random_values(shape.n_head * shape.head_dim, 4.0f, gen);
  const std::vector<float> one_key = random_values(row_values, 1.0f, gen);
  std::vector<float> k_rows;
  for (uint64_t t = 0; t < n_tokens; ++t) k_rows.insert(k_rows.end(), one_key.begin(), one_key.end());
  const std::vector<float> v_rows = random_values(n_tokens * row_values, 1.0f, gen);
  for (const GgmlType type : kKvTypes) {
    const PagedRows k(type, k_rows, row_values, 8, 3), v(type, v_rows, row_values, 8, 4);
    std::vector<double> mean(row_values, 0.0);
    for (uint64_t t = 0; t < n_tokens; ++t) {
      const std::vector<float> row = v.dequantized(t, row_values);
      for (uint64_t i = 0; i < row_values; ++i) mean[i] += row[i] / static_cast<double>(n_tokens);
    }
    std::vector<float> want(shape.n_head * shape.head_dim);
    for (uint64_t h = 0; h < shape.n_head; ++h)
      for (uint64_t d = 0; d < shape.head_dim; ++d)
        want[h * shape.head_dim + d] = static_cast<float>(mean[(h / 2) * shape.head_dim + d]);
    for (const AttentionPath path : kPaths) {
      if (!attention_path_available(path)) continue;
      std::vector<float> out(want.size()), scratch;
      attention_decode_on(path, shape, q.data(), k.view, v.view, n_tokens, out.data(), scratch);
      check_close(out, want, 3e-6, 0.0, type_name(type) + " equal keys " + path_name(path));
    }
  }
}

TEST_CASE("GQA: query head h reads K and V head h / (n_head / n_kv_head)") {
  // 8 query heads, 2 KV heads: heads 0-3 share KV head 0, heads 4-7 KV head 1. Two tokens, BF16
  // (the values below are exact in it). Token 0's V is 0 everywhere, token 1's is 1. KV head 0's
  // key favours token 0, KV head 1's key favours token 1: with q = e0 and keys +-64 e0 the scores
  // are +-64 / sqrt(32), so the favoured token's weight is w = 1 / (1 + exp(-128 / sqrt(32))).
  // Heads 0-3 must give 1 - w (~1.5e-10), heads 4-7 must give w (~1); a head reading the wrong KV
  // head would give the other one.
  const AttentionShape shape{8, 2, 32};
  const uint64_t hd = shape.head_dim, row_values = shape.n_kv_head * hd;
  std::vector<float> q(shape.n_head * hd, 0.0f);
  for (uint64_t h = 0; h < shape.n_head; ++h) q[h * hd] = 1.0f;
  std::vector<float> k_rows(2 * row_values, 0.0f), v_rows(2 * row_values, 0.0f);
  k_rows[0 * row_values + 0 * hd] = 64.0f;   // token 0, KV head 0
  k_rows[1 * row_values + 0 * hd] = -64.0f;  // token 1, KV head 0
  k_rows[0 * row_values + 1 * hd] = -64.0f;  // token 0, KV head 1
  k_rows[1 * row_values + 1 * hd] = 64.0f;   // token 1, KV head 1
  for (uint64_t i = 0; i < row_values; ++i) v_rows[row_values + i] = 1.0f;
  const PagedRows k(GgmlType::BF16, k_rows, row_values, 1, 1), v(GgmlType::BF16, v_rows, row_values, 1, 2);
  const double w = 1.0 / (1.0 + std::exp(-128.0 / std::sqrt(32.0)));
  std::vector<float> want(shape.n_head * hd);
  for (uint64_t h = 0; h < shape.n_head; ++h)
    for (uint64_t d = 0; d < hd; ++d) want[h * hd + d] = static_cast<float>(h < 4 ? 1.0 - w : w);
  for (const AttentionPath path : kPaths) {
    if (!attention_path_available(path)) continue;
    std::vector<float> out(want.size()), scratch;
    attention_decode_on(path, shape, q.data(), k.view, v.view, 2, out.data(), scratch);
    // float softmax and sum of two terms: a few ulp of 1.
    check_close(out, want, 1e-6, 0.0, "GQA mapping " + path_name(path));
  }
}
