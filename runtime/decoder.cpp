#include "runtime/decoder.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <optional>
#include <stdexcept>

#include "kernels/activation.hpp"
#include "kernels/cpu/attention.hpp"
#include "kernels/cpu/moe_routing.hpp"
#include "kernels/cpu/quantize.hpp"
#include "kernels/cpu/rmsnorm.hpp"
#include "kernels/cpu/swiglu.hpp"
#include "runtime/projection.hpp"
#include "runtime/rope_params.hpp"

namespace infer_plan::runtime {
namespace {

void grow(std::vector<float>& v, uint64_t n) {
  if (v.size() < n) v.resize(n);
}

// y (tokens x width) += row `row` of `bias` (a vector's only row; an expert's of GPT-OSS's stacks)
void add_bias(float* y, const WeightTensor* bias, uint64_t tokens, uint64_t width, uint64_t row = 0) {
  if (!bias) return;
  assert(bias->cols == width && row < bias->rows);
  const float* b = bias->floats() + row * width;
  for (uint64_t t = 0; t < tokens; ++t)
    for (uint64_t i = 0; i < width; ++i) y[t * width + i] += b[i];
}

}  // namespace

Decoder::Decoder(const ModelWeights& weights, PagedKvCache& cache, ThreadPool& pool, uint64_t layers,
                 OffloadPrefetcher* prefetcher)
    : weights_(weights), cache_(cache), pool_(pool), spec_(weights.spec()),
      layers_(layers == 0 ? spec_.layers : std::min(layers, spec_.layers)), prefetcher_(prefetcher),
      rope_(rope_params(spec_, weights.rope_freqs() ? weights.rope_freqs()->floats() : nullptr)),
      rope_local_(rope_) {
  if (spec_.rope_local_theta > 0) {
    ModelSpec local = spec_;
    local.rope_theta = spec_.rope_local_theta;
    local.rope_scaling = {};
    rope_local_ = rope_params(local, nullptr);
  }
  // The prefetcher hands out groups pass after pass in order: a pass must visit all of them.
  if (prefetcher_ && (layers_ != spec_.layers || prefetcher_->groups() != weights_.offload_groups().size()))
    throw std::logic_error("Decoder: a prefetcher needs the offloaded weights it copies and every layer");
}

void Decoder::project(const WeightTensor& w, const float* x, uint64_t tokens, float* y, uint64_t row_offset,
                      uint64_t rows) {
  if (rows == 0) rows = w.rows;
  runtime::project(pool_, w.type(), w.data() + row_offset * w.row_bytes, rows, w.cols, x, tokens, y, act_, w.order);
}

void Decoder::forward_layers(std::span<const SequenceChunk> chunks) { run_layers(chunks); }

uint64_t Decoder::run_layers(std::span<const SequenceChunk> chunks) {
  const uint64_t H = spec_.hidden;
  uint64_t tokens = 0;
  for (const SequenceChunk& c : chunks) {
    check_within_reservation(c, cache_.tokens_reserved(c.seq));
    tokens += c.tokens.size();
  }
  assert(tokens > 0);
  grow(x_, tokens * H);
  grow(xn_, tokens * std::max(H, spec_.q_width()));
  positions_.resize(tokens);
  chunk_of_token_.resize(tokens);

  // Embedding: one row of token_embd per token, dequantized.
  const WeightTensor& embd = weights_.token_embd();
  uint64_t t = 0;
  for (size_t c = 0; c < chunks.size(); ++c)
    for (size_t i = 0; i < chunks[c].tokens.size(); ++i, ++t) {
      const uint32_t id = chunks[c].tokens[i];
      assert(id < embd.rows);
      kernels::dequantize_row(embd.type(), std::span(embd.data() + id * embd.row_bytes, embd.row_bytes),
                              std::span(&x_[t * H], H), "token_embd row");
      positions_[t] = chunks[c].past + i;
      chunk_of_token_[t] = c;
    }
  if (spec_.embedding_scale) {  // Gemma: the embedding times sqrt(n_embd), in float as ggml's scale
    const float scale = std::sqrt(static_cast<float>(H));
    for (uint64_t i = 0; i < tokens * H; ++i) x_[i] *= scale;
  }

  const float eps = static_cast<float>(spec_.rms_norm_eps);
  for (uint64_t l = 0; l < layers_; ++l) {
    // An offloaded part is waited for just before its first tensor is read and released right
    // after its last (attn: after attention; ffn: before the FFN; layer: around both), so the
    // copy of the next group overlaps as much compute as the slots allow (planner/cost/offload.cpp).
    const std::optional<uint64_t> group = prefetcher_ ? weights_.offload_group_of(l) : std::nullopt;
    const OffloadPart part = group ? *weights_.offload_part() : OffloadPart::ffn;
    LayerWeights L = weights_.layer(l);
    auto acquire = [&] { L = weights_.layer_in_slot(l, *group, prefetcher_->wait(*group), slot_views_); };
    if (group && part != OffloadPart::ffn) acquire();
    for (uint64_t i = 0; i < tokens; ++i) kernels::rmsnorm(&x_[i * H], L.attn_norm->floats(), H, eps, &xn_[i * H]);
    if (spec_.is_mla()) mla_attention_layer(L, l, chunks);
    else attention_layer(L, l, chunks);
    if (layer_written_) layer_written_(l);
    if (group && part == OffloadPart::attn) prefetcher_->release(*group);
    if (group && part == OffloadPart::ffn) acquire();
    for (uint64_t i = 0; i < tokens; ++i) kernels::rmsnorm(&x_[i * H], L.ffn_norm->floats(), H, eps, &xn_[i * H]);
    if (L.ffn_gate_inp) ffn_moe(L, tokens);
    else ffn_dense(L, tokens);
    if (group && part != OffloadPart::attn) prefetcher_->release(*group);
  }
  return tokens;
}

void Decoder::forward(std::span<const SequenceChunk> chunks, std::vector<std::vector<float>>& logits,
                      bool every_token) {
  const uint64_t H = spec_.hidden;
  const uint64_t tokens = run_layers(chunks);
  const float eps = static_cast<float>(spec_.rms_norm_eps);

  // The head, on each chunk's last token (or on every token).
  const uint64_t n = every_token ? tokens : chunks.size();
  grow(out_, n * H);
  uint64_t t = 0;
  for (uint64_t c = 0; c < n; ++c) {
    t = every_token ? t + 1 : t + chunks[c].tokens.size();
    kernels::rmsnorm(&x_[(t - 1) * H], weights_.output_norm().floats(), H, eps, &out_[c * H]);
  }
  const WeightTensor& head = weights_.output();
  grow(head_out_, n * head.rows);
  project(head, out_.data(), n, head_out_.data());
  if (spec_.final_softcap > 0) {  // Gemma 2: the logits soft-capped as ggml does (scale, tanh, scale)
    const auto cap = static_cast<float>(spec_.final_softcap), inv_cap = 1.0f / cap;
    for (uint64_t i = 0; i < n * head.rows; ++i) head_out_[i] = kernels::act::softcap(head_out_[i], inv_cap, cap);
  }
  logits.resize(n);
  for (uint64_t c = 0; c < n; ++c) logits[c].assign(head_out_.begin() + static_cast<ptrdiff_t>(c * head.rows),
                                                   head_out_.begin() + static_cast<ptrdiff_t>((c + 1) * head.rows));
}

void Decoder::attention_layer(const LayerWeights& L, uint64_t l, std::span<const SequenceChunk> chunks) {
  const uint64_t H = spec_.hidden, D = spec_.head_dim, QW = spec_.q_width(), KW = spec_.kv_width();
  const uint64_t tokens = positions_.size();
  grow(q_, tokens * QW);
  grow(k_, tokens * KW);
  grow(v_, tokens * KW);
  grow(att_, tokens * QW);
  if (L.attn_qkv) {  // Phi: q's rows, then k's, then v's of one matrix
    project(*L.attn_qkv, xn_.data(), tokens, q_.data(), 0, QW);
    project(*L.attn_qkv, xn_.data(), tokens, k_.data(), QW, KW);
    project(*L.attn_qkv, xn_.data(), tokens, v_.data(), QW + KW, KW);
  } else {
    project(*L.attn_q, xn_.data(), tokens, q_.data());
    project(*L.attn_k, xn_.data(), tokens, k_.data());
    project(*L.attn_v, xn_.data(), tokens, v_.data());
  }
  add_bias(q_.data(), L.attn_q_bias, tokens, QW);
  add_bias(k_.data(), L.attn_k_bias, tokens, KW);
  add_bias(v_.data(), L.attn_v_bias, tokens, KW);
  const float eps = static_cast<float>(spec_.rms_norm_eps);
  for (uint64_t t = 0; t < tokens; ++t) {
    float* q = &q_[t * QW];
    float* k = &k_[t * KW];
    if (L.attn_q_norm)  // Qwen3: RMSNorm per head before RoPE
      for (uint64_t h = 0; h < spec_.heads; ++h) kernels::rmsnorm(q + h * D, L.attn_q_norm->floats(), D, eps, q + h * D);
    if (L.attn_k_norm)
      for (uint64_t h = 0; h < spec_.kv_heads; ++h) kernels::rmsnorm(k + h * D, L.attn_k_norm->floats(), D, eps, k + h * D);
    const kernels::RopeParams& rope = spec_.layer_window(l) ? rope_local_ : rope_;
    kernels::rope(q, spec_.heads, positions_[t], rope);
    kernels::rope(k, spec_.kv_heads, positions_[t], rope);
    // Gemma: q scaled by query_pre_attn_scalar^-1/2 where the attention applies head_dim^-1/2
    if (spec_.query_pre_attn_scalar > 0 && spec_.query_pre_attn_scalar != static_cast<double>(D)) {
      const auto rescale = static_cast<float>(std::sqrt(static_cast<double>(D) / spec_.query_pre_attn_scalar));
      for (uint64_t i = 0; i < QW; ++i) q[i] *= rescale;
    }
  }
  // Page tables per chunk, then each token attends to its sequence's positions [0, its own], or
  // in a sliding-window layer to the last `window` of them.
  const uint64_t window = spec_.layer_window(l);
  std::vector<std::vector<const uint8_t*>> k_pages(chunks.size()), v_pages(chunks.size());
  std::vector<kernels::KvRowsView> k_views(chunks.size()), v_views(chunks.size());
  // A window layer's pages are a ring of R tokens: storing position p overwrites p - R, which a
  // token of the same chunk k places earlier still reads when k > R - window. So each chunk's
  // tokens are stored and attended `wave` at a time (all at once when no ring wraps).
  uint64_t wave = tokens;
  for (size_t c = 0; c < chunks.size(); ++c) {
    k_views[c] = cache_.k_view(chunks[c].seq, l, k_pages[c]);
    v_views[c] = cache_.v_view(chunks[c].seq, l, v_pages[c]);
    const uint64_t ring = cache_.ring_tokens(chunks[c].seq);
    if (window && ring < cache_.tokens_reserved(chunks[c].seq)) {
      assert(ring >= window);
      wave = std::min(wave, ring - window + 1);
    }
  }
  const kernels::AttentionShape shape{spec_.heads, spec_.kv_heads, D, static_cast<float>(spec_.attn_softcap),
                                      L.attn_sinks ? L.attn_sinks->floats() : nullptr};
  std::vector<uint64_t> batch;
  for (uint64_t from = 0; batch.size() < tokens; from += wave) {
    const size_t before = batch.size();
    for (uint64_t t = 0; t < tokens; ++t) {
      const SequenceChunk& chunk = chunks[chunk_of_token_[t]];
      const uint64_t offset = positions_[t] - chunk.past;
      if (offset < from || offset >= from + wave) continue;
      cache_.store(chunk.seq, l, positions_[t], &k_[t * KW], &v_[t * KW]);
      batch.push_back(t);
    }
    if (batch.size() == before) break;
    pool_.parallel_for(batch.size() - before, [&](uint64_t b, uint64_t e) {
      thread_local std::vector<float> scratch;
      for (uint64_t i = before + b; i < before + e; ++i) {
        const uint64_t t = batch[i];
        const size_t c = chunk_of_token_[t];
        const uint64_t first = window && positions_[t] + 1 > window ? positions_[t] + 1 - window : 0;
        kernels::KvRowsView k = k_views[c], v = v_views[c];
        k.first = v.first = first;
        kernels::attention_decode(shape, &q_[t * QW], k, v, positions_[t] + 1 - first, &att_[t * QW], scratch);
      }
    });
  }
  grow(out_, tokens * H);
  project(*L.attn_output, att_.data(), tokens, out_.data());
  add_bias(out_.data(), L.attn_output_bias, tokens, H);
  post_norm(L.attn_post_norm, tokens);
  for (uint64_t i = 0; i < tokens * H; ++i) x_[i] += out_[i];
}

void Decoder::mla_attention_layer(const LayerWeights& L, uint64_t l, std::span<const SequenceChunk> chunks) {
  const uint64_t H = spec_.hidden, heads = spec_.heads, D = spec_.head_dim, R = spec_.kv_lora_rank,
                 N = spec_.qk_nope_dim, V = spec_.v_head_dim, QL = spec_.q_lora_rank;
  const uint64_t row = spec_.kv_k_values();  // the cached latent, then the RoPE key
  const uint64_t tokens = positions_.size();
  const float eps = static_cast<float>(spec_.rms_norm_eps);
  assert(spec_.layer_window(l) == 0 && N + spec_.qk_rope_dim == D);
  grow(q_, tokens * heads * D);
  grow(k_, tokens * row);
  grow(gate_, tokens * std::max({N, R, QL}));
  grow(up_, tokens * std::max(R, V));
  if (L.attn_q_a) {  // q through the low-rank bottleneck and its norm
    project(*L.attn_q_a, xn_.data(), tokens, gate_.data());
    for (uint64_t t = 0; t < tokens; ++t)
      kernels::rmsnorm(&gate_[t * QL], L.attn_q_a_norm->floats(), QL, eps, &gate_[t * QL]);
    project(*L.attn_q_b, gate_.data(), tokens, q_.data());
  } else {
    project(*L.attn_q, xn_.data(), tokens, q_.data());
  }
  project(*L.attn_kv_a_mqa, xn_.data(), tokens, k_.data());
  for (uint64_t t = 0; t < tokens; ++t) {
    float* latent = &k_[t * row];
    kernels::rmsnorm(latent, L.attn_kv_a_norm->floats(), R, eps, latent);
    kernels::rope(latent + R, 1, positions_[t], rope_);           // the one shared RoPE key
    kernels::rope(&q_[t * heads * D + N], heads, positions_[t], rope_);  // each head's RoPE part
  }
  // Queries in the latent's space: per head, q_nope through attn_k_b (R rows of N), then q_rope.
  grow(latent_q_, tokens * heads * row);
  for (uint64_t h = 0; h < heads; ++h) {
    for (uint64_t t = 0; t < tokens; ++t) std::copy_n(&q_[t * heads * D + h * D], N, &gate_[t * N]);
    project(*L.attn_k_b, gate_.data(), tokens, up_.data(), h * R, R);
    for (uint64_t t = 0; t < tokens; ++t) {
      float* q = &latent_q_[(t * heads + h) * row];
      std::copy_n(&up_[t * R], R, q);
      std::copy_n(&q_[t * heads * D + h * D + N], row - R, q + R);
    }
  }
  // One shared KV head of latent rows: its first R values are the values too (read through the
  // same view), so each head's output holds the latent's weighted sum in its first R values.
  std::vector<std::vector<const uint8_t*>> pages(chunks.size());
  std::vector<kernels::KvRowsView> views(chunks.size());
  for (size_t c = 0; c < chunks.size(); ++c) views[c] = cache_.k_view(chunks[c].seq, l, pages[c]);
  for (uint64_t t = 0; t < tokens; ++t) cache_.store(chunks[chunk_of_token_[t]].seq, l, positions_[t], &k_[t * row], nullptr);
  kernels::AttentionShape shape{heads, 1, row};
  shape.scale = mla_score_scale(spec_);  // the scale of the heads the latent stands for, and YaRN's
  grow(latent_out_, tokens * heads * row);
  pool_.parallel_for(tokens, [&](uint64_t b, uint64_t e) {
    thread_local std::vector<float> scratch;
    for (uint64_t t = b; t < e; ++t) {
      const kernels::KvRowsView& view = views[chunk_of_token_[t]];
      kernels::attention_decode(shape, &latent_q_[t * heads * row], view, view, positions_[t] + 1,
                                &latent_out_[t * heads * row], scratch);
    }
  });
  // Each head's output out of the latent: attn_v_b (V rows of R), heads side by side.
  grow(att_, tokens * heads * V);
  for (uint64_t h = 0; h < heads; ++h) {
    for (uint64_t t = 0; t < tokens; ++t) std::copy_n(&latent_out_[(t * heads + h) * row], R, &gate_[t * R]);
    project(*L.attn_v_b, gate_.data(), tokens, up_.data(), h * V, V);
    for (uint64_t t = 0; t < tokens; ++t) std::copy_n(&up_[t * V], V, &att_[t * heads * V + h * V]);
  }
  grow(out_, tokens * H);
  project(*L.attn_output, att_.data(), tokens, out_.data());
  for (uint64_t i = 0; i < tokens * H; ++i) x_[i] += out_[i];
}

void Decoder::post_norm(const WeightTensor* norm, uint64_t tokens) {
  if (!norm) return;
  const uint64_t H = spec_.hidden;
  const float eps = static_cast<float>(spec_.rms_norm_eps);
  for (uint64_t t = 0; t < tokens; ++t) kernels::rmsnorm(&out_[t * H], norm->floats(), H, eps, &out_[t * H]);
}

void Decoder::ffn_dense(const LayerWeights& L, uint64_t tokens) {
  // Phi's fused ffn_up: the gate's F rows, then the up projection's (ggml's swiglu of one tensor
  // takes its first half through SiLU)
  const bool fused = L.ffn_gate == nullptr;
  const uint64_t H = spec_.hidden, F = fused ? L.ffn_up->rows / 2 : L.ffn_gate->rows;
  grow(gate_, tokens * F);
  grow(up_, tokens * F);
  grow(out_, tokens * H);
  project(fused ? *L.ffn_up : *L.ffn_gate, xn_.data(), tokens, gate_.data(), 0, F);
  project(*L.ffn_up, xn_.data(), tokens, up_.data(), fused ? F : 0, F);
  if (spec_.gelu_ffn) kernels::geglu(gate_.data(), up_.data(), tokens * F, gate_.data());
  else kernels::swiglu(gate_.data(), up_.data(), tokens * F, gate_.data());
  project(*L.ffn_down, gate_.data(), tokens, out_.data());
  post_norm(L.ffn_post_norm, tokens);
  for (uint64_t i = 0; i < tokens * H; ++i) x_[i] += out_[i];
}

void Decoder::ffn_moe(const LayerWeights& L, uint64_t tokens) {
  const uint64_t H = spec_.hidden, E = spec_.experts, F = spec_.moe_intermediate;
  std::vector<float> router(tokens * E);
  project(*L.ffn_gate_inp, xn_.data(), tokens, router.data());
  add_bias(router.data(), L.ffn_gate_inp_bias, tokens, E);
  // Tokens per expert, with their routing weights: the softmax over the top k (the same weights as
  // Qwen's softmax over all, renormalised over the top k; GPT-OSS's rule).
  std::vector<std::vector<std::pair<uint64_t, float>>> routed(E);
  const auto k = static_cast<uint32_t>(spec_.experts_active);
  const std::span<const float> choice_bias =
      L.ffn_exp_probs_b ? std::span(L.ffn_exp_probs_b->floats(), E) : std::span<const float>();
  for (uint64_t t = 0; t < tokens; ++t)
    for (const kernels::ExpertChoice& ch :
         spec_.sigmoid_routing
             ? kernels::route_sigmoid_grouped(std::span(&router[t * E], E), choice_bias, k, spec_.expert_groups,
                                              spec_.expert_groups_used, spec_.moe_norm_top_k,
                                              static_cast<float>(spec_.expert_weights_scale))
             : kernels::route_top_k(std::span(&router[t * E], E), k, spec_.moe_norm_top_k))
      // (DeepSeek-V2's routed_scaling_factor on its softmax weights; the sigmoid router applied V3's)
      routed[ch.expert].push_back(
          {t, spec_.sigmoid_routing ? ch.weight : ch.weight * static_cast<float>(spec_.expert_weights_scale)});
  std::vector<float> xe, down;
  for (uint64_t e = 0; e < E; ++e) {
    const auto& mine = routed[e];
    if (mine.empty()) continue;
    const uint64_t n = mine.size();
    xe.resize(n * H);
    for (uint64_t i = 0; i < n; ++i) std::copy_n(&xn_[mine[i].first * H], H, &xe[i * H]);
    grow(gate_, n * F);
    grow(up_, n * F);
    down.resize(n * H);
    project(*L.ffn_gate_exps, xe.data(), n, gate_.data(), e * F, F);
    project(*L.ffn_up_exps, xe.data(), n, up_.data(), e * F, F);
    add_bias(gate_.data(), L.ffn_gate_exps_bias, n, F, e);
    add_bias(up_.data(), L.ffn_up_exps_bias, n, F, e);
    if (spec_.swiglu_limit > 0)
      kernels::swiglu_oai(gate_.data(), up_.data(), n * F, static_cast<float>(spec_.swiglu_limit), gate_.data());
    else
      kernels::swiglu(gate_.data(), up_.data(), n * F, gate_.data());
    project(*L.ffn_down_exps, gate_.data(), n, down.data(), e * H, H);
    add_bias(down.data(), L.ffn_down_exps_bias, n, H, e);
    for (uint64_t i = 0; i < n; ++i)
      for (uint64_t j = 0; j < H; ++j) x_[mine[i].first * H + j] += mine[i].second * down[i * H + j];
  }
  if (L.ffn_gate_shexp) {  // DeepSeek: shared experts every token runs, as one SwiGLU FFN
    const uint64_t S = L.ffn_gate_shexp->rows;
    grow(gate_, tokens * S);
    grow(up_, tokens * S);
    grow(out_, tokens * H);
    project(*L.ffn_gate_shexp, xn_.data(), tokens, gate_.data());
    project(*L.ffn_up_shexp, xn_.data(), tokens, up_.data());
    kernels::swiglu(gate_.data(), up_.data(), tokens * S, gate_.data());
    project(*L.ffn_down_shexp, gate_.data(), tokens, out_.data());
    for (uint64_t i = 0; i < tokens * H; ++i) x_[i] += out_[i];
  }
}

}  // namespace infer_plan::runtime
