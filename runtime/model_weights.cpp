#include "runtime/model_weights.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>
#include <map>

#include "kernels/block_layout.hpp"
#include "kernels/cpu/half.hpp"
#include "kernels/cpu/matmul.hpp"
#include "kernels/cpu/quantize.hpp"
#include "runtime/rope_params.hpp"
#include "kernels/cpu/sampling.hpp"
#include "planner/weights/gguf_reader.hpp"
#include "planner/core/input_error.hpp"

namespace infer_plan::runtime {
namespace {

// splitmix64's finaliser: decorrelates (seed, tensor, row) into a row seed.
uint64_t mix(uint64_t x) {
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

uint64_t matrix_rows(const TensorInfo& t) {
  uint64_t rows = 1;
  for (size_t i = 1; i < t.shape.size(); ++i) rows *= t.shape[i];
  return rows;
}

}  // namespace

std::vector<uint8_t> WeightTensor::ggml_bytes() const {
  std::vector<uint8_t> bytes(data(), data() + placement.bytes);
  if (order == kernels::RowOrder::interleaved) kernels::deinterleave_rows(type(), bytes.data(), rows, cols);
  return bytes;
}

void fill_synthetic_row(GgmlType type, uint64_t cols, float amplitude, uint64_t rng_seed, uint8_t* row) {
  kernels::SamplerRng rng(rng_seed);
  auto uniform = [&] { return static_cast<float>(2 * rng.uniform() - 1); };  // [-1, 1)
  auto below = [&](uint64_t n) { return rng.next_u64() % n; };
  const GgmlTypeInfo& info = ggml_type_info(type);
  const uint64_t blocks = cols / info.block_values;
  switch (type) {
    case GgmlType::Q8_0:  // d; qs[32] in [-127, 127]: values in +-127 d
      for (uint64_t b = 0; b < blocks; ++b, row += info.block_bytes) {
        kernels::store_fp16(row, amplitude / 127);
        for (uint32_t i = 0; i < kernels::kQ8_0Values; ++i)
          row[kernels::kQ8_0Qs + i] = static_cast<uint8_t>(static_cast<int8_t>(static_cast<int>(below(255)) - 127));
      }
      return;
    case GgmlType::Q4_0:  // d; 32 nibbles q: values (q - 8) d in [-8 d, 7 d]
      for (uint64_t b = 0; b < blocks; ++b, row += info.block_bytes) {
        kernels::store_fp16(row, amplitude / 8);
        for (uint32_t i = 0; i < kernels::kQ4_0Values / 2; ++i)
          row[kernels::kQ4_0Qs + i] = static_cast<uint8_t>(below(256));
      }
      return;
    case GgmlType::Q2_K:  // scales[16] (sc | m << 4); qs[64]; d; dmin: values d sc q - dmin m, q in 0..3
      for (uint64_t b = 0; b < blocks; ++b, row += info.block_bytes) {
        // m = round(1.5 sc) centres each sub-block on zero, and sc at most 10 keeps m within 4 bits;
        // with d = dmin = amplitude / 15 the values lie within d max(3 sc - m, m) <= amplitude.
        for (int j = 0; j < 16; ++j) {
          const auto sc = static_cast<uint8_t>(1 + below(10));
          const auto m = static_cast<uint8_t>((3 * sc + 1) / 2);
          row[kernels::kQ2_KScales + j] = static_cast<uint8_t>(sc | (m << 4));
        }
        for (uint32_t i = 0; i < kernels::kQ2_KValues / 4; ++i)  // four 2-bit codes a byte
          row[kernels::kQ2_KQs + i] = static_cast<uint8_t>(below(256));
        kernels::store_fp16(row + kernels::kQ2_KD, amplitude / 15);
        kernels::store_fp16(row + kernels::kQ2_KDmin, amplitude / 15);
      }
      return;
    case GgmlType::Q4_K:  // d, dmin; 6-bit scales s and mins m; 4-bit codes q: values d s q - dmin m
    case GgmlType::Q5_K: {  // ... and 5-bit codes
      // m = round(s (2^bits - 1) / 2) centres a sub-block on zero; s at most 8 (4 for Q5_K) keeps m
      // within 6 bits, and d = dmin = amplitude / 60 bounds the values by the amplitude. Packed as
      // the quantizer packs them (kernels/block_layout.hpp's k_scale_min reads them back).
      const bool five = type == GgmlType::Q5_K;
      const uint32_t max_s = five ? 4 : 8;
      for (uint64_t b = 0; b < blocks; ++b, row += info.block_bytes) {
        uint8_t* sc = row + kernels::kQ4_KScales;  // Q5_K's sit at the same offset
        for (int j = 0; j < 12; ++j) sc[j] = 0;
        for (uint32_t j = 0; j < 8; ++j) {
          const auto s = static_cast<uint8_t>(1 + below(max_s));
          const auto m = static_cast<uint8_t>((s * (five ? 31 : 15) + 1) / 2);
          if (j < 4) {
            sc[j] = static_cast<uint8_t>(sc[j] | s);
            sc[j + 4] = static_cast<uint8_t>(sc[j + 4] | m);
          } else {
            sc[j + 4] = static_cast<uint8_t>((s & 0xF) | ((m & 0xF) << 4));
            sc[j - 4] = static_cast<uint8_t>(sc[j - 4] | ((s >> 4) << 6));
            sc[j] = static_cast<uint8_t>(sc[j] | ((m >> 4) << 6));
          }
        }
        kernels::store_fp16(row + kernels::kQ4_KD, amplitude / 60);
        kernels::store_fp16(row + kernels::kQ4_KDmin, amplitude / 60);
        for (uint32_t i = kernels::kQ4_KScales + 12; i < info.block_bytes; ++i) row[i] = static_cast<uint8_t>(below(256));
      }
      return;
    }
    case GgmlType::Q6_K:  // 6-bit codes q, 8-bit scales s, d: values d s (q - 32)
      for (uint64_t b = 0; b < blocks; ++b, row += info.block_bytes) {
        for (uint32_t i = 0; i < kernels::kQ6_KScales; ++i) row[i] = static_cast<uint8_t>(below(256));
        for (uint32_t j = 0; j < 16; ++j) row[kernels::kQ6_KScales + j] = static_cast<uint8_t>(1 + below(127));
        kernels::store_fp16(row + kernels::kQ6_KD, amplitude / (127 * 32));
      }
      return;
    case GgmlType::Q3_K:  // 3-bit codes q in -4..3, 6-bit scales s - 32, d: values d (s - 32) q
      for (uint64_t b = 0; b < blocks; ++b, row += info.block_bytes) {
        for (uint32_t i = 0; i < kernels::kQ3_KD; ++i) row[i] = static_cast<uint8_t>(below(256));
        kernels::store_fp16(row + kernels::kQ3_KD, amplitude / (32 * 4));
      }
      return;
    case GgmlType::IQ4_NL:  // d; 32 indices into the table of values within +-127: values d v
      for (uint64_t b = 0; b < blocks; ++b, row += info.block_bytes) {
        kernels::store_fp16(row + kernels::kIQ4_NLD, amplitude / 127);
        for (uint32_t i = kernels::kIQ4_NLQs; i < info.block_bytes; ++i) row[i] = static_cast<uint8_t>(below(256));
      }
      return;
    case GgmlType::IQ4_XS:  // d; 6-bit scales s - 32; indices: values d (s - 32) v
      for (uint64_t b = 0; b < blocks; ++b, row += info.block_bytes) {
        for (uint32_t i = kernels::kIQ4_XSScalesH; i < info.block_bytes; ++i) row[i] = static_cast<uint8_t>(below(256));
        kernels::store_fp16(row + kernels::kIQ4_XSD, amplitude / (32 * 127));
      }
      return;
    case GgmlType::MXFP4: {  // e; 32 E2M1 values: within +-6 x 2^(e - 127) <= amplitude, as the quantizer sets e
      const auto e = static_cast<uint8_t>(std::clamp(std::floor(std::log2(amplitude)) - 2 + 127, 1.0f, 254.0f));
      for (uint64_t b = 0; b < blocks; ++b, row += info.block_bytes) {
        row[kernels::kMXFP4E] = e;
        for (uint32_t i = kernels::kMXFP4Qs; i < info.block_bytes; ++i) row[i] = static_cast<uint8_t>(below(256));
      }
      return;
    }
    default: {
      if (!kernels::has_quantizer(type))
        throw InputError(fmt::format("synthetic weights: cannot write {} rows", info.name));
      std::vector<float> values(cols);
      for (float& v : values) v = amplitude * uniform();
      kernels::quantize_row(type, values, {row, ggml_row_bytes(type, cols, "synthetic row")}, "synthetic row");
    }
  }
}

ModelWeights::ModelWeights(Backend& backend, const ModelSpec& spec, const WeightsLayout& layout,
                           uint64_t seed, ThreadPool& pool, std::optional<WeightsOffload> offload)
    : backend_(backend), spec_(spec), layers_(spec.layers), offload_(offload) {
  build(layout, pool, [&](WeightTensor& w, uint8_t* data) {
    const TensorInfo& t = w.placement.tensor;
    const uint64_t tensor_seed = mix(seed ^ mix(tensors_.size()));  // tensor i is filled as the (i + 1)-th held
    const bool is_norm = t.role == TensorRole::attn_norm || t.role == TensorRole::ffn_norm ||
                         t.role == TensorRole::output_norm || t.role == TensorRole::attn_q_norm ||
                         t.role == TensorRole::attn_k_norm || t.role == TensorRole::attn_post_norm ||
                         t.role == TensorRole::ffn_post_norm || t.role == TensorRole::attn_q_a_norm ||
                         t.role == TensorRole::attn_kv_a_norm || t.role == TensorRole::ssm_norm;
    if (t.role == TensorRole::rope_freqs) {  // llama3's factors from config.json (a GGUF's own are read)
      const std::vector<float> factors = llama3_rope_factors(spec);
      std::memcpy(data, factors.data(), std::min(w.placement.bytes, factors.size() * sizeof(float)));
      return;
    }
    if (is_norm) {
      std::vector<float> ones(w.cols, 1.0f);
      std::memcpy(data, ones.data(), w.placement.bytes);
      return;
    }
    // Biases small (GPT-OSS's per-expert ones are 2-D); the embedding at unit scale (its rows are the residual stream's start).
    // A sink a few units either way, as trained ones are, so that it takes a visible share of a softmax.
    const float amplitude = t.role == TensorRole::attn_sinks   ? 4.0f
                            : !t.is_matrix()                   ? 0.02f
                            : t.role == TensorRole::token_embd ? 1.0f
                                                               : std::sqrt(3.0f / static_cast<float>(w.cols));
    pool.parallel_for(w.rows, [&](uint64_t b, uint64_t e) {
      for (uint64_t r = b; r < e; ++r)
        fill_synthetic_row(w.type(), w.cols, amplitude, mix(tensor_seed + r), data + r * w.row_bytes);
    });
  });
}

ModelWeights::ModelWeights(Backend& backend, const ModelSpec& spec, const WeightsLayout& layout,
                           const std::string& gguf_path, ThreadPool& pool, std::optional<WeightsOffload> offload)
    : backend_(backend), spec_(spec), layers_(spec.layers), offload_(offload) {
  const GgufModel file = read_gguf_model(gguf_path);
  std::map<std::string, size_t> by_name;
  for (size_t i = 0; i < file.tensors.size(); ++i) by_name[file.tensors[i].name] = i;
  build(layout, pool, [&](WeightTensor& w, uint8_t* data) {
    const std::string& name = w.placement.tensor.name;
    const auto it = by_name.find(name);
    if (it == by_name.end()) throw InputError(fmt::format("{}: no tensor '{}'", gguf_path, name));
    const GgufTensorInfo& info = file.tensors[it->second];
    if (info.shape != w.placement.tensor.shape)
      throw InputError(fmt::format("{}: tensor '{}' has shape {}; the model expects {}", gguf_path, name,
                                   fmt::join(info.shape, " x "), fmt::join(w.placement.tensor.shape, " x ")));
    const std::vector<uint8_t> bytes = read_gguf_tensor_data(file, it->second);
    if (info.type == w.type()) {
      std::memcpy(data, bytes.data(), std::min<size_t>(bytes.size(), w.placement.bytes));
      return;
    }
    convert_rows(info.type, bytes.data(), w, data, pool, gguf_path);
  });
}

ModelWeights::ModelWeights(Backend& backend, const ModelWeights& source, const WeightsLayout& layout, ThreadPool& pool)
    : backend_(backend), spec_(source.spec()), layers_(source.spec().layers) {
  std::map<std::string, const WeightTensor*> by_name;
  for (const WeightTensor& t : source.tensors()) by_name[t.placement.tensor.name] = &t;
  build(layout, pool, [&](WeightTensor& w, uint8_t* data) {
    const auto it = by_name.find(w.placement.tensor.name);
    if (it == by_name.end() || it->second->placement.tensor.shape != w.placement.tensor.shape)
      throw InputError(fmt::format("weights: {} has no tensor '{}' of that shape", source.spec().name, w.placement.tensor.name));
    if (!source.backend_.host_addressable(it->second->buffer.category))
      throw InputError("weights: converting weights needs them in host memory (the CPU backend)");
    // GGML's order: a copy only where the source keeps the CPU's interleaved order
    std::vector<uint8_t> reordered;
    const uint8_t* bytes = it->second->data();
    if (it->second->order != kernels::RowOrder::ggml) bytes = (reordered = it->second->ggml_bytes()).data();
    if (it->second->type() == w.type())
      std::memcpy(data, bytes, w.placement.bytes);
    else
      convert_rows(it->second->type(), bytes, w, data, pool, source.spec().name);
  });
}

void ModelWeights::convert_rows(GgmlType from, const uint8_t* source, const WeightTensor& w, uint8_t* data,
                                ThreadPool& pool, const std::string& where) {
  // Each row dequantized to float and quantized again with the project's quantizers.
  const std::string& name = w.placement.tensor.name;
  if (!kernels::has_quantizer(from) || !kernels::has_quantizer(w.type()))
    throw InputError(fmt::format("{}: tensor '{}' is {}; converting it to {} needs quantizers for both ({}); run "
                                 "the file's own types instead (weights 'file')", where, name,
                                 ggml_type_info(from).name, ggml_type_info(w.type()).name,
                                 kernels::quantizer_type_names()));
  const uint64_t source_row = ggml_row_bytes(from, w.cols, name);
  pool.parallel_for(w.rows, [&](uint64_t begin, uint64_t end) {
    std::vector<float> row(w.cols);
    for (uint64_t r = begin; r < end; ++r) {
      kernels::dequantize_row(from, {source + r * source_row, source_row}, row, name);
      kernels::quantize_row(w.type(), row, {data + r * w.row_bytes, w.row_bytes}, name);
    }
  });
}

void ModelWeights::build(const WeightsLayout& layout, ThreadPool& pool,
                         const std::function<void(WeightTensor&, uint8_t*)>& fill) {
  // Every type checked before anything is allocated; a tensor that fails later (a file's missing
  // tensor, a conversion) gives back what was allocated before the error leaves the constructor.
  for (const TensorPlacement& p : layout.tensors)
    if (p.tensor.is_vector() ? p.type != GgmlType::F32 : !kernels::has_matmul(p.type))
      throw InputError(fmt::format(
          "weights: {} is stored as {}, which the CPU runtime cannot multiply (it runs {}); choose "
          "weights whose tensors all have these types, e.g. a type with ':pure' (Q4_0:pure)",
          p.tensor.name, ggml_type_info(p.type).name, kernels::matmul_type_names()));
  try {
    allocate_and_fill(layout, pool, fill);
  } catch (...) {
    release();
    throw;
  }
}

void ModelWeights::allocate_and_fill(const WeightsLayout& layout, ThreadPool& pool,
                                     const std::function<void(WeightTensor&, uint8_t*)>& fill) {
  tensors_.reserve(layout.tensors.size());
  // Offloaded groups first: which layout entries go to the host pool, at which offset.
  std::vector<std::optional<std::pair<size_t, uint64_t>>> in_group(layout.tensors.size());  // group, offset
  std::vector<std::vector<size_t>> group_members;
  if (offload_) {
    for (uint64_t l = 0; l < spec_.layers; ++l) {
      if (!offload_layer_selected(l, offload_->every)) continue;
      OffloadGroup g;
      g.layer = l;
      uint64_t bytes = 0;
      std::vector<size_t> members;
      for (size_t i = 0; i < layout.tensors.size(); ++i) {
        const TensorPlacement& p = layout.tensors[i];
        if (p.tensor.layer != static_cast<int64_t>(l) || !offload_part_contains(offload_->part, p.tensor.role)) continue;
        // Packed without padding, so the group is the planner's bytes exactly; F32 vectors still
        // land on 4-byte offsets because every block row before them is a multiple of 4 bytes
        // for the widths models have (multiples of 64 values).
        assert(!p.tensor.is_vector() || bytes % alignof(float) == 0);
        in_group[i] = std::pair{groups_.size(), bytes};
        g.offsets.push_back(bytes);
        members.push_back(i);
        bytes += p.bytes;
      }
      g.host = backend_.allocate(bytes, MemoryCategory::offload_host);
      groups_.push_back(std::move(g));
      group_members.push_back(std::move(members));
    }
  }
  for (size_t i = 0; i < layout.tensors.size(); ++i) {
    const TensorPlacement& p = layout.tensors[i];
    const TensorInfo& t = p.tensor;
    WeightTensor w;
    w.placement = p;
    w.cols = t.row_length();
    w.rows = t.is_vector() ? 1 : matrix_rows(t);
    w.row_bytes = ggml_row_bytes(p.type, w.cols, t.name);
    if (w.row_bytes * w.rows != p.bytes)
      throw InputError(fmt::format("weights: {} has {} B in the layout but {} rows of {} B", t.name, p.bytes, w.rows, w.row_bytes));
    if (in_group[i])  // a view into its group's host buffer, which owns the memory
      w.buffer = {static_cast<uint8_t*>(groups_[in_group[i]->first].host.data) + in_group[i]->second, p.bytes,
                  MemoryCategory::offload_host};
    else
      w.buffer = backend_.allocate(p.bytes, MemoryCategory::weights);
    tensors_.push_back(std::move(w));  // owned from here, so release() frees it if filling throws
    WeightTensor& held = tensors_.back();
    bytes_ += p.bytes;
    if (backend_.host_addressable(held.buffer.category)) {
      fill(held, static_cast<uint8_t*>(held.buffer.data));
      // Interleaved where the CPU multiplies it faster so (never on CUDA, whose host pool is
      // host memory too but whose kernels read GGML's order: its decoder refuses a tensor whose
      // `order` says otherwise). Not the embedding: its rows are read one at a time.
      if (backend_.name() == "cpu" && !t.is_vector() && t.role != TensorRole::token_embd &&
          kernels::prefers_interleaved(p.type, t.shape.at(1))) {
        // group by group over the threads: a large model's start-up is this pass
        uint8_t* const data = static_cast<uint8_t*>(held.buffer.data);
        pool.parallel_for(held.rows / kernels::kInterleavedRows, [&](uint64_t begin, uint64_t end) {
          kernels::interleave_groups(p.type, data, held.cols, begin, end);
        });
        held.order = kernels::RowOrder::interleaved;
      }
    } else {  // a GPU: written on the host, then copied (one tensor's bytes of host memory at a time)
      std::vector<uint8_t> staging(p.bytes);
      fill(held, staging.data());
      backend_.copy_to_device(held.buffer, staging.data(), p.bytes);
    }
  }
  for (const WeightTensor& w : tensors_) {
    const TensorInfo& t = w.placement.tensor;
    if (t.layer < 0) {
      if (t.role == TensorRole::token_embd) token_embd_ = &w;
      else if (t.role == TensorRole::output_norm) output_norm_ = &w;
      else if (t.role == TensorRole::rope_freqs) rope_freqs_ = &w;
      else if (t.role == TensorRole::output) output_ = &w;
      continue;
    }
    LayerWeights& L = layers_.at(static_cast<uint64_t>(t.layer));
    switch (t.role) {
      case TensorRole::attn_norm: L.attn_norm = &w; break;
      case TensorRole::attn_q: L.attn_q = &w; break;
      case TensorRole::attn_k: L.attn_k = &w; break;
      case TensorRole::attn_v: L.attn_v = &w; break;
      case TensorRole::attn_qkv: L.attn_qkv = &w; break;
      // GPT-OSS's only norm after attention is the FFN's input norm (llama.cpp's post_attention_norm)
      case TensorRole::attn_post_norm: (spec_.post_norms ? L.attn_post_norm : L.ffn_norm) = &w; break;
      case TensorRole::ffn_post_norm: L.ffn_post_norm = &w; break;
      case TensorRole::attn_output: L.attn_output = &w; break;
      case TensorRole::attn_q_norm: L.attn_q_norm = &w; break;
      case TensorRole::attn_k_norm: L.attn_k_norm = &w; break;
      case TensorRole::attn_q_bias: L.attn_q_bias = &w; break;
      case TensorRole::attn_k_bias: L.attn_k_bias = &w; break;
      case TensorRole::attn_v_bias: L.attn_v_bias = &w; break;
      case TensorRole::ffn_norm: L.ffn_norm = &w; break;
      case TensorRole::ffn_gate: L.ffn_gate = &w; break;
      case TensorRole::ffn_up: L.ffn_up = &w; break;
      case TensorRole::ffn_down: L.ffn_down = &w; break;
      case TensorRole::ffn_gate_inp: L.ffn_gate_inp = &w; break;
      case TensorRole::ffn_gate_exps: L.ffn_gate_exps = &w; break;
      case TensorRole::ffn_up_exps: L.ffn_up_exps = &w; break;
      case TensorRole::ffn_down_exps: L.ffn_down_exps = &w; break;
      case TensorRole::attn_output_bias: L.attn_output_bias = &w; break;
      case TensorRole::attn_sinks: L.attn_sinks = &w; break;
      case TensorRole::ffn_gate_inp_bias: L.ffn_gate_inp_bias = &w; break;
      case TensorRole::ffn_gate_exps_bias: L.ffn_gate_exps_bias = &w; break;
      case TensorRole::ffn_up_exps_bias: L.ffn_up_exps_bias = &w; break;
      case TensorRole::ffn_down_exps_bias: L.ffn_down_exps_bias = &w; break;
      case TensorRole::attn_q_a: L.attn_q_a = &w; break;
      case TensorRole::attn_q_a_norm: L.attn_q_a_norm = &w; break;
      case TensorRole::attn_q_b: L.attn_q_b = &w; break;
      case TensorRole::attn_kv_a_mqa: L.attn_kv_a_mqa = &w; break;
      case TensorRole::attn_kv_a_norm: L.attn_kv_a_norm = &w; break;
      case TensorRole::attn_k_b: L.attn_k_b = &w; break;
      case TensorRole::attn_v_b: L.attn_v_b = &w; break;
      case TensorRole::ffn_gate_shexp: L.ffn_gate_shexp = &w; break;
      case TensorRole::ffn_up_shexp: L.ffn_up_shexp = &w; break;
      case TensorRole::ffn_down_shexp: L.ffn_down_shexp = &w; break;
      case TensorRole::ffn_exp_probs_b: L.ffn_exp_probs_b = &w; break;
      default: break;
    }
  }
  for (size_t g = 0; g < groups_.size(); ++g)
    for (size_t i : group_members[g]) groups_[g].tensors.push_back(&tensors_[i]);
  if (!output_) output_ = token_embd_;  // tied embeddings
  if (!token_embd_ || !output_norm_) throw InputError(fmt::format("weights: {} has no token_embd or output_norm", spec_.name));
  const uint64_t pairs = (spec_.rope_dims ? spec_.rope_dims : spec_.head_dim) / 2;
  if (rope_freqs_ && (rope_freqs_->type() != GgmlType::F32 || rope_freqs_->cols != pairs))
    throw InputError(fmt::format("weights: {}'s rope_freqs.weight is {} x {}; expected F32 x {} (one per rotated pair)",
                                 spec_.name, ggml_type_info(rope_freqs_->type()).name, rope_freqs_->cols, pairs));
}

ModelWeights::~ModelWeights() { release(); }

void ModelWeights::release() {
  for (WeightTensor& w : tensors_)
    if (w.buffer.category != MemoryCategory::offload_host) backend_.free(w.buffer);
  for (OffloadGroup& g : groups_) backend_.free(g.host);
  tensors_.clear();
  groups_.clear();
}

std::optional<uint64_t> ModelWeights::offload_group_of(uint64_t layer) const {
  for (uint64_t g = 0; g < groups_.size(); ++g)
    if (groups_[g].layer == layer) return g;
  return std::nullopt;
}

LayerWeights ModelWeights::layer_in_slot(uint64_t layer, uint64_t group, const uint8_t* slot,
                                         std::vector<WeightTensor>& views) const {
  const OffloadGroup& g = groups_.at(group);
  assert(g.layer == layer);
  LayerWeights L = layers_[layer];
  views.resize(g.tensors.size());  // resized before any pointer to an element is taken
  for (size_t i = 0; i < g.tensors.size(); ++i) {
    views[i] = *g.tensors[i];
    views[i].buffer = {const_cast<uint8_t*>(slot) + g.offsets[i], g.tensors[i]->buffer.bytes,
                       MemoryCategory::offload_buffers};
    replace_tensor(L, g.tensors[i], &views[i]);
  }
  return L;
}

void replace_tensor(LayerWeights& L, const WeightTensor* from, const WeightTensor* to) {
  const WeightTensor* LayerWeights::*const members[] = {
      &LayerWeights::attn_norm,     &LayerWeights::attn_q,        &LayerWeights::attn_k,
      &LayerWeights::attn_v,        &LayerWeights::attn_output,   &LayerWeights::attn_q_norm,
      &LayerWeights::attn_k_norm,   &LayerWeights::attn_q_bias,   &LayerWeights::attn_k_bias,
      &LayerWeights::attn_v_bias,   &LayerWeights::ffn_norm,      &LayerWeights::ffn_gate,
      &LayerWeights::ffn_up,        &LayerWeights::ffn_down,      &LayerWeights::ffn_gate_inp,
      &LayerWeights::ffn_gate_exps, &LayerWeights::ffn_up_exps,   &LayerWeights::ffn_down_exps,
      &LayerWeights::attn_qkv,      &LayerWeights::attn_post_norm, &LayerWeights::ffn_post_norm,
      &LayerWeights::attn_output_bias, &LayerWeights::attn_sinks, &LayerWeights::ffn_gate_inp_bias,
      &LayerWeights::ffn_gate_exps_bias, &LayerWeights::ffn_up_exps_bias, &LayerWeights::ffn_down_exps_bias,
      &LayerWeights::attn_q_a, &LayerWeights::attn_q_a_norm, &LayerWeights::attn_q_b, &LayerWeights::attn_kv_a_mqa,
      &LayerWeights::attn_kv_a_norm, &LayerWeights::attn_k_b, &LayerWeights::attn_v_b, &LayerWeights::ffn_gate_shexp,
      &LayerWeights::ffn_up_shexp, &LayerWeights::ffn_down_shexp, &LayerWeights::ffn_exp_probs_b};
  for (auto m : members)
    if (L.*m == from) L.*m = to;
}

}  // namespace infer_plan::runtime
