// A bounds-checked cursor over the file: every read states what it reads ("tensor 12 name
// length") so a bad file's error names the field and the offset. Nothing is sized from a count
// before the bytes behind it are known to exist, and strings and arrays have hard caps.
#include "planner/weights/gguf_reader.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <charconv>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <map>
#include <regex>
#include <set>

#include "planner/core/input_error.hpp"
#include "planner/core/limits.hpp"
#include "planner/core/json_fields.hpp"
#include "planner/core/units.hpp"
#include "planner/model/tensor_inventory.hpp"

namespace infer_plan {
namespace {

constexpr uint32_t kMagic = 0x46554747;           // "GGUF" read as little-endian u32
constexpr uint64_t kMaxKeyBytes = 65535;          // gguf.md: keys at most 2^16 - 1 bytes
constexpr uint64_t kMaxTensorNameBytes = 64;      // gguf.md: names at most 64 bytes
constexpr uint64_t kMaxStringBytes = 64 * MiB;    // a chat template is ~10 KiB; 64 MiB is absurd
constexpr uint64_t kMaxArrayBytes = 1024 * MiB;   // tokenizer arrays are ~10 MiB
constexpr uint32_t kMaxDims = 4;                  // GGML_MAX_DIMS
constexpr uint32_t kMaxNesting = 4;               // arrays of arrays of ...

uint64_t scalar_bytes(GgufType t) {
  switch (t) {
    case GgufType::u8: case GgufType::i8: case GgufType::boolean: return 1;
    case GgufType::u16: case GgufType::i16: return 2;
    case GgufType::u32: case GgufType::i32: case GgufType::f32: return 4;
    case GgufType::u64: case GgufType::i64: case GgufType::f64: return 8;
    default: return 0;  // string, array: variable
  }
}

bool known_value_type(uint32_t t) { return t <= static_cast<uint32_t>(GgufType::f64); }

class Cursor {
 public:
  Cursor(const std::string& path) : path_(path) {
    require_regular_file(path, "a .gguf file");
    in_.open(path, std::ios::binary);
    if (!in_) throw InputError(fmt::format("{}: cannot open", path));
    std::error_code ec;
    size_ = std::filesystem::file_size(path, ec);
    if (ec) throw InputError(fmt::format("{}: cannot read its size: {}", path, ec.message()));
  }

  uint64_t pos() const { return pos_; }
  uint64_t size() const { return size_; }
  uint64_t left() const { return size_ - pos_; }

  [[noreturn]] void fail(uint64_t at, const std::string& what) const {
    throw InputError(fmt::format("{}: {} (at byte offset {})", path_, what, at));
  }

  void need(uint64_t n, std::string_view field) const {
    if (n > left())
      fail(pos_, fmt::format("truncated: {} needs {} bytes, {} left in a {}-byte file", field, n, left(), size_));
  }

  void bytes(void* out, uint64_t n, std::string_view field) {
    need(n, field);
    in_.read(static_cast<char*>(out), static_cast<std::streamsize>(n));
    if (!in_) fail(pos_, fmt::format("read error in {}", field));
    pos_ += n;
  }

  template <class T>
  T num(std::string_view field) {
    T v;
    bytes(&v, sizeof v, field);  // GGUF is little-endian, as are the hosts we build for
    static_assert(std::endian::native == std::endian::little);
    return v;
  }

  std::string string(std::string_view field, uint64_t max_bytes) {
    const uint64_t at = pos_;
    const uint64_t n = num<uint64_t>(fmt::format("{} length", field));
    if (n > max_bytes) fail(at, fmt::format("{} length {} exceeds the limit of {} bytes", field, n, max_bytes));
    need(n, field);  // checked before the allocation
    std::string s(n, '\0');
    bytes(s.data(), n, field);
    return s;
  }

 private:
  std::string path_;
  std::ifstream in_;
  uint64_t size_ = 0;
  uint64_t pos_ = 0;
};

GgufValue read_value(Cursor& c, GgufType type, const std::string& field, uint32_t depth);

GgufValue read_array(Cursor& c, const std::string& field, uint32_t depth) {
  if (depth > kMaxNesting) c.fail(c.pos(), fmt::format("{}: arrays nested deeper than {}", field, kMaxNesting));
  GgufValue v;
  v.type = GgufType::array;
  const uint64_t type_at = c.pos();
  const uint32_t et = c.num<uint32_t>(field + " element type");
  if (!known_value_type(et)) c.fail(type_at, fmt::format("{}: unknown element type {}", field, et));
  v.element_type = static_cast<GgufType>(et);
  const uint64_t count_at = c.pos();
  v.count = c.num<uint64_t>(field + " count");
  // Each element takes at least its scalar size, a string at least its 8-byte length: a count
  // the rest of the file cannot hold is refused before anything is allocated.
  const uint64_t min_bytes = v.element_type == GgufType::string ? 8
                             : v.element_type == GgufType::array ? 12
                                                                 : scalar_bytes(v.element_type);
  if (v.count > c.left() / min_bytes || v.count * min_bytes > kMaxArrayBytes)
    c.fail(count_at, fmt::format("{}: array count {} cannot fit in the {} bytes left (or exceeds {} bytes)",
                                 field, v.count, c.left(), kMaxArrayBytes));
  if (scalar_bytes(v.element_type) > 0) {
    v.raw.resize(v.count * min_bytes);
    c.bytes(v.raw.data(), v.raw.size(), field);
    if (v.element_type == GgufType::boolean)
      for (uint64_t i = 0; i < v.count; ++i)
        if (v.raw[i] > 1) c.fail(c.pos() - v.count + i, fmt::format("{}[{}]: bool is {}, not 0 or 1", field, i, v.raw[i]));
  } else if (v.element_type == GgufType::string) {
    uint64_t total = 0;
    for (uint64_t i = 0; i < v.count; ++i) {
      v.strings.push_back(c.string(fmt::format("{}[{}]", field, i), kMaxStringBytes));
      total += v.strings.back().size();
      if (total > kMaxArrayBytes) c.fail(c.pos(), fmt::format("{}: strings exceed {} bytes", field, kMaxArrayBytes));
    }
  } else {
    for (uint64_t i = 0; i < v.count; ++i)
      v.nested.push_back(read_array(c, fmt::format("{}[{}]", field, i), depth + 1));
  }
  return v;
}

GgufValue read_value(Cursor& c, GgufType type, const std::string& field, uint32_t depth) {
  GgufValue v;
  v.type = type;
  switch (type) {
    case GgufType::u8: v.u64 = c.num<uint8_t>(field); break;
    case GgufType::u16: v.u64 = c.num<uint16_t>(field); break;
    case GgufType::u32: v.u64 = c.num<uint32_t>(field); break;
    case GgufType::u64: v.u64 = c.num<uint64_t>(field); break;
    case GgufType::i8: v.i64 = c.num<int8_t>(field); break;
    case GgufType::i16: v.i64 = c.num<int16_t>(field); break;
    case GgufType::i32: v.i64 = c.num<int32_t>(field); break;
    case GgufType::i64: v.i64 = c.num<int64_t>(field); break;
    case GgufType::f32: v.f64 = c.num<float>(field); break;
    case GgufType::f64: v.f64 = c.num<double>(field); break;
    case GgufType::boolean: {
      const uint64_t at = c.pos();
      v.u64 = c.num<uint8_t>(field);
      if (v.u64 > 1) c.fail(at, fmt::format("{}: bool is {}, not 0 or 1", field, v.u64));
      break;
    }
    case GgufType::string: v.str = c.string(field, kMaxStringBytes); break;
    case GgufType::array: return read_array(c, field, depth + 1);
  }
  return v;
}

std::optional<GgmlType> ggml_type_from_id(uint32_t id) {
  for (const GgmlTypeInfo& t : ggml_types())
    if (static_cast<uint32_t>(t.type) == id && t.type != GgmlType::Q8_K && t.gguf) return t.type;
  return std::nullopt;
}

// Reads one file's header and tensor infos and checks its data section.
void read_part(const std::string& path, uint32_t file_index, GgufModel& m) {
  Cursor c(path);
  const uint32_t magic = c.num<uint32_t>("magic");
  if (magic != kMagic) c.fail(0, fmt::format("not a GGUF file: magic is 0x{:08x}, expected 0x{:08x} (\"GGUF\")", magic, kMagic));
  const uint32_t version = c.num<uint32_t>("version");
  if (version == 1) c.fail(4, "GGUF version 1 (32-bit counts) is not supported; convert the file again");
  if (version != 2 && version != 3) c.fail(4, fmt::format("unknown GGUF version {}; versions 2 and 3 are read", version));
  const uint64_t tensors_at = c.pos();
  const uint64_t n_tensors = c.num<uint64_t>("tensor count");
  const uint64_t kv_at = c.pos();
  const uint64_t n_kv = c.num<uint64_t>("metadata KV count");
  // Smallest KV: 8-byte key length + 1 byte key + 4-byte type + 1-byte value; smallest tensor
  // info: 8 + 1 + 4 + 8 + 4 + 8 = 33 bytes.
  if (n_kv > c.left() / 14) c.fail(kv_at, fmt::format("metadata KV count {} cannot fit in a {}-byte file", n_kv, c.size()));
  if (n_tensors > c.left() / 33) c.fail(tensors_at, fmt::format("tensor count {} cannot fit in a {}-byte file", n_tensors, c.size()));

  uint64_t alignment = kGgufDefaultAlignment;
  std::set<std::string> keys;
  std::vector<GgufKeyValue> metadata;
  for (uint64_t i = 0; i < n_kv; ++i) {
    const uint64_t key_at = c.pos();
    std::string key = c.string(fmt::format("metadata key {}", i), kMaxKeyBytes);
    if (key.empty()) c.fail(key_at, fmt::format("metadata key {} is empty", i));
    if (!keys.insert(key).second) c.fail(key_at, fmt::format("metadata key '{}' appears twice", key));
    const uint64_t type_at = c.pos();
    const uint32_t t = c.num<uint32_t>(fmt::format("'{}' value type", key));
    if (!known_value_type(t)) c.fail(type_at, fmt::format("'{}': unknown value type {}", key, t));
    GgufValue value = read_value(c, static_cast<GgufType>(t), key, 0);
    if (key == "general.alignment") {
      if (value.type != GgufType::u32) c.fail(type_at, "general.alignment: expected a u32");
      if (value.u64 == 0 || (value.u64 & (value.u64 - 1)) != 0)
        c.fail(type_at, fmt::format("general.alignment {} is not a power of two", value.u64));
      alignment = value.u64;
    }
    metadata.push_back({std::move(key), std::move(value)});
  }

  std::set<std::string> names;
  for (const auto& t : m.tensors) names.insert(t.name);
  const size_t first = m.tensors.size();
  for (uint64_t i = 0; i < n_tensors; ++i) {
    GgufTensorInfo t;
    t.file = file_index;
    const uint64_t name_at = c.pos();
    t.name = c.string(fmt::format("tensor {} name", i), kMaxTensorNameBytes);
    if (t.name.empty()) c.fail(name_at, fmt::format("tensor {} has an empty name", i));
    if (!names.insert(t.name).second) c.fail(name_at, fmt::format("tensor '{}' appears twice", t.name));
    const uint64_t dims_at = c.pos();
    const uint32_t n_dims = c.num<uint32_t>(fmt::format("'{}' dimension count", t.name));
    if (n_dims == 0 || n_dims > kMaxDims)
      c.fail(dims_at, fmt::format("'{}': {} dimensions, expected 1 to {}", t.name, n_dims, kMaxDims));
    uint64_t elements = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      const uint64_t dim_at = c.pos();
      const uint64_t ne = c.num<uint64_t>(fmt::format("'{}' dimension {}", t.name, d));
      if (ne == 0 || ne > (uint64_t{1} << 62) / elements)
        c.fail(dim_at, fmt::format("'{}': dimension {} is {} (zero, or the element count overflows)", t.name, d, ne));
      elements *= ne;
      t.shape.push_back(ne);
    }
    const uint64_t type_at = c.pos();
    const uint32_t type_id = c.num<uint32_t>(fmt::format("'{}' type", t.name));
    const auto type = ggml_type_from_id(type_id);
    if (!type)
      c.fail(type_at, fmt::format("'{}': tensor type id {} is unknown or unsupported; supported: {}", t.name,
                                  type_id, ggml_type_names(/*gguf_only=*/true)));
    t.type = *type;
    const GgmlTypeInfo& info = ggml_type_info(t.type);
    if (t.shape[0] % info.block_values != 0)
      c.fail(type_at, fmt::format("'{}': row length {} is not a whole number of {} blocks of {}", t.name,
                                  t.shape[0], info.name, info.block_values));
    t.bytes = elements / info.block_values * info.block_bytes;
    const uint64_t offset_at = c.pos();
    t.offset = c.num<uint64_t>(fmt::format("'{}' data offset", t.name));
    if (t.offset % alignment != 0)
      c.fail(offset_at, fmt::format("'{}': data offset {} is not a multiple of the alignment {}", t.name, t.offset, alignment));
    m.tensors.push_back(std::move(t));
  }

  const uint64_t header_end = c.pos();
  const uint64_t data_start = gguf_align(header_end, alignment);
  if (n_tensors > 0 && data_start > c.size())
    c.fail(header_end, fmt::format("truncated: the data section starts at {} beyond the end of the {}-byte file", data_start, c.size()));
  const uint64_t data_bytes = c.size() > data_start ? c.size() - data_start : 0;

  // Each tensor inside the data section, and no two overlapping.
  std::vector<const GgufTensorInfo*> by_offset;
  for (size_t i = first; i < m.tensors.size(); ++i) by_offset.push_back(&m.tensors[i]);
  std::sort(by_offset.begin(), by_offset.end(), [](auto* a, auto* b) { return a->offset < b->offset; });
  for (size_t i = 0; i < by_offset.size(); ++i) {
    const GgufTensorInfo& t = *by_offset[i];
    if (t.offset > data_bytes || t.bytes > data_bytes - t.offset)
      c.fail(data_start + t.offset, fmt::format("'{}': data [{}, {}) lies outside the {}-byte data section "
                                                "(file truncated or offset corrupt)",
                                                t.name, t.offset, t.offset + t.bytes, data_bytes));
    if (i > 0 && by_offset[i - 1]->offset + by_offset[i - 1]->bytes > t.offset)
      c.fail(data_start + t.offset, fmt::format("'{}' overlaps '{}' in the data section", t.name, by_offset[i - 1]->name));
  }

  if (file_index == 0) {
    m.version = version;
    m.alignment = alignment;
    m.metadata = std::move(metadata);
  } else if (alignment != m.alignment) {
    c.fail(0, fmt::format("split part has alignment {}, the first part {}", alignment, m.alignment));
  }
  m.paths.push_back(path);
  m.file_bytes.push_back(c.size());
  m.header_bytes.push_back(header_end);
  m.data_offset.push_back(data_start);
}

const std::regex kSplitName(R"((.*)-(\d{5})-of-(\d{5})\.gguf$)");

std::string_view tensor_suffix_role(std::string_view suffix, TensorRole& role) {
  static const std::map<std::string_view, TensorRole> kRoles{
      {"attn_norm.weight", TensorRole::attn_norm}, {"attn_q.weight", TensorRole::attn_q},
      {"attn_k.weight", TensorRole::attn_k}, {"attn_v.weight", TensorRole::attn_v},
      {"attn_output.weight", TensorRole::attn_output}, {"attn_q_norm.weight", TensorRole::attn_q_norm},
      {"attn_k_norm.weight", TensorRole::attn_k_norm}, {"attn_q.bias", TensorRole::attn_q_bias},
      {"attn_k.bias", TensorRole::attn_k_bias}, {"attn_v.bias", TensorRole::attn_v_bias},
      {"ffn_norm.weight", TensorRole::ffn_norm}, {"ffn_gate.weight", TensorRole::ffn_gate},
      {"ffn_up.weight", TensorRole::ffn_up}, {"ffn_down.weight", TensorRole::ffn_down},
      {"ffn_gate_inp.weight", TensorRole::ffn_gate_inp}, {"ffn_gate_exps.weight", TensorRole::ffn_gate_exps},
      {"ffn_up_exps.weight", TensorRole::ffn_up_exps}, {"ffn_down_exps.weight", TensorRole::ffn_down_exps},
      {"token_embd.weight", TensorRole::token_embd}, {"output.weight", TensorRole::output},
      {"output_norm.weight", TensorRole::output_norm}, {"rope_freqs.weight", TensorRole::rope_freqs},
      // Gemma, GPT-OSS, Phi
      {"post_attention_norm.weight", TensorRole::attn_post_norm}, {"post_ffw_norm.weight", TensorRole::ffn_post_norm},
      {"attn_sinks.weight", TensorRole::attn_sinks}, {"attn_output.bias", TensorRole::attn_output_bias},
      {"ffn_gate_inp.bias", TensorRole::ffn_gate_inp_bias}, {"ffn_gate_exps.bias", TensorRole::ffn_gate_exps_bias},
      {"ffn_up_exps.bias", TensorRole::ffn_up_exps_bias}, {"ffn_down_exps.bias", TensorRole::ffn_down_exps_bias},
      {"attn_qkv.weight", TensorRole::attn_qkv},
      // DeepSeek (deepseek2): multi-head latent attention, shared experts, the routing bias
      {"attn_q_a.weight", TensorRole::attn_q_a}, {"attn_q_a_norm.weight", TensorRole::attn_q_a_norm},
      {"attn_q_b.weight", TensorRole::attn_q_b}, {"attn_kv_a_mqa.weight", TensorRole::attn_kv_a_mqa},
      {"attn_kv_a_norm.weight", TensorRole::attn_kv_a_norm}, {"attn_k_b.weight", TensorRole::attn_k_b},
      {"attn_v_b.weight", TensorRole::attn_v_b}, {"attn_kv_b.weight", TensorRole::attn_kv_b},
      {"ffn_gate_shexp.weight", TensorRole::ffn_gate_shexp}, {"ffn_up_shexp.weight", TensorRole::ffn_up_shexp},
      {"ffn_down_shexp.weight", TensorRole::ffn_down_shexp}, {"exp_probs_b.bias", TensorRole::ffn_exp_probs_b},
      // Qwen3-Next (qwen3next): Gated DeltaNet layers, the shared expert's gate
      {"attn_gate.weight", TensorRole::attn_gate}, {"ssm_conv1d.weight", TensorRole::ssm_conv1d},
      {"ssm_dt.bias", TensorRole::ssm_dt}, {"ssm_a", TensorRole::ssm_a}, {"ssm_ba.weight", TensorRole::ssm_ba},
      {"ssm_norm.weight", TensorRole::ssm_norm}, {"ssm_out.weight", TensorRole::ssm_out},
      {"ffn_gate_inp_shexp.weight", TensorRole::ffn_gate_inp_shexp}, {"ssm_beta.weight", TensorRole::ssm_beta},
      {"ssm_alpha.weight", TensorRole::ssm_alpha}};
  const auto it = kRoles.find(suffix);
  if (it == kRoles.end()) return {};
  role = it->second;
  return it->first;
}

// "blk.12.attn_q.weight" -> role attn_q, layer 12. Names outside our layouts throw, or with
// `known` given, set *known = false and keep a placeholder role (for sizes only).
TensorInfo tensor_info_of(const GgufTensorInfo& t, bool* known = nullptr) {
  TensorInfo info{t.name, t.shape, TensorRole::attn_norm, -1};
  std::string_view rest = t.name;
  if (known) *known = true;
  auto unknown = [&](std::string what) {
    if (!known) throw InputError(what);
    *known = false;
    info.layer = -1;
    return info;
  };
  if (rest.starts_with("blk.")) {
    rest.remove_prefix(4);
    const size_t dot = rest.find('.');
    const std::string_view digits = rest.substr(0, dot);
    if (dot == std::string_view::npos || digits.empty() || digits.size() > 6 ||
        !std::all_of(digits.begin(), digits.end(), [](char ch) { return ch >= '0' && ch <= '9'; }))
      return unknown(fmt::format("tensor '{}': expected blk.N.<name>", t.name));
    info.layer = std::stoll(std::string(digits));
    rest.remove_prefix(dot + 1);
  }
  if (tensor_suffix_role(rest, info.role).empty())
    return unknown(fmt::format("tensor '{}' is not part of the layouts of {}", t.name,
                               fmt::join(gguf_architectures(), ", ")));
  return info;
}

uint64_t key_u64(const GgufModel& m, const std::string& key, std::optional<uint64_t> fallback = std::nullopt) {
  const GgufValue* v = m.find(key);
  if (!v) {
    if (fallback) return *fallback;
    throw InputError(fmt::format("{}: metadata key '{}' is missing", m.paths.front(), key));
  }
  switch (v->type) {
    case GgufType::u8: case GgufType::u16: case GgufType::u32: case GgufType::u64: return v->u64;
    case GgufType::i8: case GgufType::i16: case GgufType::i32: case GgufType::i64:
      if (v->i64 >= 0) return static_cast<uint64_t>(v->i64);
      break;
    default: break;
  }
  throw InputError(fmt::format("{}: metadata key '{}' is a {}, expected a non-negative integer",
                               m.paths.front(), key, gguf_type_name(v->type)));
}

double key_f64(const GgufModel& m, const std::string& key, double fallback) {
  const GgufValue* v = m.find(key);
  if (!v) return fallback;
  if (v->type != GgufType::f32 && v->type != GgufType::f64)
    throw InputError(fmt::format("{}: metadata key '{}' is a {}, expected a float", m.paths.front(), key,
                                 gguf_type_name(v->type)));
  return v->f64;
}

// {arch}.rope.scaling.*, as llama.cpp reads them: no type but a factor means linear; the factor
// also under its old name rope.scale_linear; YaRN's original context defaults to context_length,
// and its magnitude is 0.1 ln(factor) + 1 times rope.scaling.attn_factor. Where the file gives
// YaRN's betas or attention factor (convert_hf_to_gguf writes them from config.json), they are
// used as transformers uses them (llama.cpp keeps 32, 1 and the formula for these architectures).
RopeScaling rope_scaling_from_gguf(const GgufModel& m, const std::string& arch, uint64_t context_length) {
  RopeScaling rs;
  const std::string prefix = arch + ".rope.scaling.";
  const std::string& path = m.paths.front();
  if (const GgufValue* type = m.find(prefix + "type")) {
    if (type->type != GgufType::string)
      throw InputError(fmt::format("{}: metadata key '{}type' is a {}, expected a string", path, prefix,
                                   gguf_type_name(type->type)));
    rs.type = type->str;
    rs.key = fmt::format("{}: {}type", path, prefix);
  }
  const std::string factor_key = m.find(prefix + "factor") ? prefix + "factor" : arch + ".rope.scale_linear";
  const double factor = key_f64(m, factor_key, 0.0);
  if (!(factor >= 0.0) || !std::isfinite(factor) || factor > 1e6)
    throw InputError(fmt::format("{}: metadata key '{}' is {}; expected a positive factor", path, factor_key, factor));
  if (rs.type.empty() && factor != 0.0 && factor != 1.0) {
    rs.type = "linear";
    rs.key = fmt::format("{}: {} (no {}type: linear, as llama.cpp reads it)", path, factor_key, prefix);
  }
  if (!rs.applies()) return rs;
  rs.factor = factor == 0.0 ? 1.0 : factor;
  rs.original_context = key_u64(m, prefix + "original_context_length", context_length);
  const auto positive = [&](const std::string& key, double fallback) {
    const double v = key_f64(m, key, fallback);
    if (!(v > 0.0) || !std::isfinite(v) || v > 1e6)
      throw InputError(fmt::format("{}: metadata key '{}' is {}; expected a positive number", path, key, v));
    return v;
  };
  const double attn_factor = positive(prefix + "attn_factor", 1.0);
  if (rs.type == "yarn") {
    rs.beta_fast = positive(prefix + "yarn_beta_fast", 32.0);
    rs.beta_slow = positive(prefix + "yarn_beta_slow", 1.0);
    const double magnitude = rs.factor > 1.0 ? 0.1 * std::log(rs.factor) + 1.0 : 1.0;
    rs.attention_factor = positive(prefix + "yarn_attn_factor", magnitude) * attn_factor;
    // DeepSeek's mscale_all_dim, which llama.cpp's converter writes times 0.1 (and llama.cpp takes
    // as mscale too)
    if (const double log_mul = key_f64(m, prefix + "yarn_log_multiplier", 0.0); log_mul != 0.0) {
      if (arch != "deepseek2")
        throw InputError(fmt::format("{}: metadata key '{}yarn_log_multiplier' (DeepSeek's YaRN magnitude) is read "
                                     "for deepseek2 only, not {}", path, prefix, arch));
      rs.mscale = rs.mscale_all_dim = positive(prefix + "yarn_log_multiplier", 0.0) / 0.1;
    }
    if (rs.original_context == 0)
      throw InputError(fmt::format("{}: YaRN needs '{}original_context_length' or '{}.context_length'", path, prefix, arch));
  } else if (attn_factor != 1.0) {
    rs.attention_factor = attn_factor;
  }
  return rs;
}

}  // namespace

std::string_view gguf_type_name(GgufType t) {
  constexpr std::string_view kNames[] = {"u8", "i8", "u16", "i16", "u32", "i32", "f32",
                                         "bool", "string", "array", "u64", "i64", "f64"};
  const auto i = static_cast<uint32_t>(t);
  return i < std::size(kNames) ? kNames[i] : "unknown";
}

GgufValue GgufValue::of_u32(uint32_t x) { GgufValue v; v.type = GgufType::u32; v.u64 = x; return v; }
GgufValue GgufValue::of_u64(uint64_t x) { GgufValue v; v.type = GgufType::u64; v.u64 = x; return v; }
GgufValue GgufValue::of_i32(int32_t x) { GgufValue v; v.type = GgufType::i32; v.i64 = x; return v; }
GgufValue GgufValue::of_f32(float x) { GgufValue v; v.type = GgufType::f32; v.f64 = x; return v; }
GgufValue GgufValue::of_bool(bool x) { GgufValue v; v.type = GgufType::boolean; v.u64 = x; return v; }
GgufValue GgufValue::of_string(std::string x) { GgufValue v; v.type = GgufType::string; v.str = std::move(x); return v; }
GgufValue GgufValue::of_strings(std::vector<std::string> x) {
  GgufValue v;
  v.type = GgufType::array;
  v.element_type = GgufType::string;
  v.count = x.size();
  v.strings = std::move(x);
  return v;
}
GgufValue GgufValue::of_f32s(const std::vector<float>& x) {
  GgufValue v;
  v.type = GgufType::array;
  v.element_type = GgufType::f32;
  v.count = x.size();
  v.raw.resize(x.size() * 4);
  if (!x.empty()) std::memcpy(v.raw.data(), x.data(), v.raw.size());
  return v;
}
GgufValue GgufValue::of_i32s(const std::vector<int32_t>& x) {
  GgufValue v;
  v.type = GgufType::array;
  v.element_type = GgufType::i32;
  v.count = x.size();
  v.raw.resize(x.size() * 4);
  if (!x.empty()) std::memcpy(v.raw.data(), x.data(), v.raw.size());
  return v;
}

std::string gguf_value_text(const GgufValue& v) {
  switch (v.type) {
    case GgufType::u8: case GgufType::u16: case GgufType::u32: case GgufType::u64: return std::to_string(v.u64);
    case GgufType::i8: case GgufType::i16: case GgufType::i32: case GgufType::i64: return std::to_string(v.i64);
    case GgufType::f32: case GgufType::f64: return fmt::format("{:g}", v.f64);
    case GgufType::boolean: return v.u64 ? "true" : "false";
    case GgufType::string: return v.str;
    case GgufType::array:
      if (v.element_type == GgufType::string && v.count <= 8)
        return fmt::format("[{}]", fmt::join(v.strings, ", "));
      return fmt::format("[{} x {}]", v.count, gguf_type_name(v.element_type));
  }
  return "?";
}

const GgufValue* GgufModel::find(std::string_view key) const {
  for (const auto& kv : metadata)
    if (kv.key == key) return &kv.value;
  return nullptr;
}

bool is_gguf_path(std::string_view path) { return path.ends_with(".gguf"); }

GgufModel read_gguf_file(const std::string& path) {
  GgufModel m;
  read_part(path, 0, m);
  return m;
}

GgufModel read_gguf_model(const std::string& path) {
  std::smatch match;
  if (!std::regex_match(path, match, kSplitName)) return read_gguf_file(path);
  const std::string stem = match[1];
  const int count = std::stoi(match[3]);
  if (count < 1 || std::stoi(match[2]) < 1 || std::stoi(match[2]) > count)
    throw InputError(fmt::format("{}: split part {} of {} is out of range", path, match[2].str(), match[3].str()));
  GgufModel m;
  for (int i = 1; i <= count; ++i)
    read_part(fmt::format("{}-{:05d}-of-{:05d}.gguf", stem, i, count), static_cast<uint32_t>(i - 1), m);
  if (const GgufValue* n = m.find("split.count"); n && n->u64 != static_cast<uint64_t>(count))
    throw InputError(fmt::format("{}: split.count is {} but the name says {} parts", path, n->u64, count));
  return m;
}

std::vector<uint8_t> read_gguf_tensor_data(const GgufModel& m, size_t i) {
  const GgufTensorInfo& t = m.tensors.at(i);
  require_regular_file(m.paths.at(t.file), "a .gguf file");
  std::ifstream in(m.paths.at(t.file), std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot open", m.paths.at(t.file)));
  std::vector<uint8_t> data(t.bytes);  // bounded: read_part checked it lies inside the file
  in.seekg(static_cast<std::streamoff>(m.data_offset.at(t.file) + t.offset));
  in.read(reinterpret_cast<char*>(data.data()), static_cast<std::streamsize>(data.size()));
  if (!in) throw InputError(fmt::format("{}: cannot read tensor '{}'", m.paths.at(t.file), t.name));
  return data;
}

namespace {

// The blocks a file keeps after the trunk for multi-token prediction (<arch>.nextn_predict_layers:
// GLM-4.5's, and newer conversions of DeepSeek's): llama.cpp loads them only when asked to predict
// with them, so the model here is the trunk, and their tensors count in the file's size only.
uint64_t trunk_blocks(const GgufModel& m) {
  const GgufValue* arch = m.find("general.architecture");
  if (!arch || arch->type != GgufType::string) return UINT64_MAX;
  const uint64_t mtp = key_u64(m, arch->str + ".nextn_predict_layers", 0);
  if (mtp == 0) return UINT64_MAX;
  const uint64_t blocks = key_u64(m, arch->str + ".block_count");
  if (mtp >= blocks)
    throw InputError(fmt::format("{}: {}.nextn_predict_layers = {} leaves none of the {} blocks (block_count) to the "
                                 "model", m.paths.front(), arch->str, mtp, blocks));
  return blocks - mtp;
}

// Whether tensor `t` (blk.N.*) lies in a block at or after `trunk`.
bool beyond_trunk(const GgufTensorInfo& t, uint64_t trunk) {
  if (trunk == UINT64_MAX || !t.name.starts_with("blk.")) return false;
  uint64_t block = 0;
  const char* p = t.name.data() + 4;
  const char* end = t.name.data() + t.name.size();
  const auto [at, ec] = std::from_chars(p, end, block);
  return ec == std::errc() && at != p && block >= trunk;
}

}  // namespace

WeightsLayout gguf_weights_layout(const GgufModel& m) {
  WeightsLayout layout;
  layout.file_type = fmt::format("as stored in {}{}", std::filesystem::path(m.paths.front()).filename().string(),
                                 m.paths.size() > 1 ? fmt::format(" (+{} parts)", m.paths.size() - 1) : "");
  const uint64_t trunk = trunk_blocks(m);
  for (const GgufTensorInfo& t : m.tensors)
    if (!beyond_trunk(t, trunk)) layout.tensors.push_back({tensor_info_of(t), t.type, t.bytes});
  return layout;
}

GgufFileSize gguf_file_size_of(const GgufModel& m) {
  uint64_t header = 0, files = 0;
  for (size_t i = 0; i < m.paths.size(); ++i) {
    header += m.header_bytes[i];
    files += m.file_bytes[i];
  }
  uint64_t infos = 0;
  for (const GgufTensorInfo& t : m.tensors) infos += 8 + t.name.size() + 4 + 8 * t.shape.size() + 4 + 8;
  const uint64_t fixed = 24 * m.paths.size();
  WeightsLayout layout;
  layout.file_type = "file";
  std::vector<bool> other;
  for (const GgufTensorInfo& t : m.tensors) {
    bool known = true;
    layout.tensors.push_back({tensor_info_of(t, &known), t.type, t.bytes});
    other.push_back(!known);
  }
  GgufFileSize g = gguf_file_size_from(layout, header, header - fixed - infos, infos, m.alignment, other);
  g.header_source = HeaderSource::file;
  g.header_fixed_bytes = fixed;
  g.padding_bytes = files - header - g.tensor_data_bytes;  // measured: whatever is not header or data
  g.file_bytes = files;
  g.derivation.back() = fmt::format("file = {} + {} + {} = {} B (measured, {} part{})", header, g.padding_bytes,
                                    g.tensor_data_bytes, files, m.paths.size(), m.paths.size() == 1 ? "" : "s");
  return g;
}

ModelSpec model_spec_from_gguf(const GgufModel& m) {
  const GgufValue* arch_v = m.find("general.architecture");
  if (!arch_v || arch_v->type != GgufType::string)
    throw InputError(fmt::format("{}: metadata key 'general.architecture' (a string) is missing", m.paths.front()));
  const std::string arch = arch_v->str;
  // the architecture table's (planner/model/model_spec): a family added there is read here too
  const std::optional<std::string> model_type = model_type_of_gguf_arch(arch);
  if (!model_type)
    throw InputError(fmt::format("{}: general.architecture '{}' is not supported; supported: {}", m.paths.front(), arch,
                                 fmt::join(gguf_architectures(), ", ")));
  ModelSpec s;
  s.name = std::filesystem::path(m.paths.front()).stem().string();
  s.source = m.paths.front();
  s.model_type = *model_type;
  s.gguf_arch = arch;
  s.hidden = key_u64(m, arch + ".embedding_length");
  s.layers = key_u64(m, arch + ".block_count");
  const uint64_t trunk = trunk_blocks(m);
  if (trunk != UINT64_MAX) s.layers = trunk;
  s.heads = key_u64(m, arch + ".attention.head_count");
  s.kv_heads = key_u64(m, arch + ".attention.head_count_kv", s.heads);
  s.head_dim = key_u64(m, arch + ".attention.key_length", s.heads == 0 ? 0 : s.hidden / s.heads);
  s.intermediate = key_u64(m, arch + ".feed_forward_length", 0);
  s.max_context = key_u64(m, arch + ".context_length", 0);
  s.rope_theta = key_f64(m, arch + ".rope.freq_base", 10000.0);
  s.rope_scaling = rope_scaling_from_gguf(m, arch, s.max_context);
  if (s.rope_scaling.type == "yarn")  // the context it serves: the original times the factor
    s.max_context = std::max(s.max_context, static_cast<uint64_t>(std::min(
                                                static_cast<double>(s.rope_scaling.original_context) * s.rope_scaling.factor, 1e12)));
  s.rope_dims = key_u64(m, arch + ".rope.dimension_count", 0);
  if (const GgufValue* sections = m.find(arch + ".rope.dimension_sections");
      sections && sections->type == GgufType::array && sections->count <= 4 && sections->raw.size() == 4 * sections->count)
    for (uint64_t i = 0; i < sections->count; ++i) {  // i32 or u32 (llama.cpp takes either)
      uint32_t n = 0;
      std::memcpy(&n, sections->raw.data() + 4 * i, 4);
      s.rope_sections.push_back(n);
    }
  while (!s.rope_sections.empty() && s.rope_sections.back() == 0) s.rope_sections.pop_back();  // the writer's padding
  if (s.rope_dims == s.head_dim) s.rope_dims = 0;  // all of it, whatever --scale later makes head_dim
  s.rms_norm_eps = key_f64(m, arch + ".attention.layer_norm_rms_epsilon", 1e-6);
  s.experts = key_u64(m, arch + ".expert_count", 0);
  s.experts_active = key_u64(m, arch + ".expert_used_count", 0);
  s.moe_intermediate = key_u64(m, arch + ".expert_feed_forward_length", 0);
  s.sigmoid_routing = key_u64(m, arch + ".expert_gating_func", 1) == 2;  // llama.cpp's 1 softmax, 2 sigmoid
  if (arch == "deepseek2") {
    // MLA: llama.cpp's converter writes the cache's view (key_length = kv_lora_rank + rope,
    // head_count_kv 1) and the heads' own widths under *_mla; older files only the latter.
    s.kv_lora_rank = key_u64(m, arch + ".attention.kv_lora_rank");
    s.q_lora_rank = key_u64(m, arch + ".attention.q_lora_rank", 0);
    s.qk_rope_dim = key_u64(m, arch + ".rope.dimension_count");
    s.head_dim = key_u64(m, arch + ".attention.key_length_mla", s.head_dim);
    s.v_head_dim = key_u64(m, arch + ".attention.value_length_mla", key_u64(m, arch + ".attention.value_length", 0));
    if (s.qk_rope_dim >= s.head_dim)
      throw InputError(fmt::format("{}: rope.dimension_count {} leaves no non-RoPE part of the {}-wide key heads",
                                   m.paths.front(), s.qk_rope_dim, s.head_dim));
    s.qk_nope_dim = s.head_dim - s.qk_rope_dim;
    s.rope_dims = 0;
    s.kv_heads = s.heads;  // every head reads the shared latent
  }
  if (arch == "deepseek2" || arch == "glm4moe") {  // DeepSeek's experts and router (GLM-4.5's too)
    s.first_dense_layers = key_u64(m, arch + ".leading_dense_block_count", 0);
    const GgufValue* norm = m.find(arch + ".expert_weights_norm");  // llama.cpp: false when absent
    s.moe_norm_top_k = norm && norm->type == GgufType::boolean && norm->u64 != 0;
    const double scale = key_f64(m, arch + ".expert_weights_scale", 0.0);  // 0: none, as llama.cpp
    s.expert_weights_scale = scale > 0.0 ? scale : 1.0;
    s.expert_groups = std::max<uint64_t>(1, key_u64(m, arch + ".expert_group_count", 1));
    s.expert_groups_used = std::max<uint64_t>(1, key_u64(m, arch + ".expert_group_used_count", s.expert_groups));
    s.shared_experts = key_u64(m, arch + ".expert_shared_count", 0);
  }
  if (key_u64(m, arch + ".ssm.time_step_rank", 0)) {  // Gated DeltaNet (qwen3next, qwen35, qwen35moe): every
                                                      // full_attention_interval-th layer attends (llama.cpp's default 4)
    const uint64_t interval = key_u64(m, arch + ".full_attention_interval", 4);
    if (interval == 0)
      throw InputError(fmt::format("{}: metadata key '{}.full_attention_interval' is 0; expected 1 or more", m.paths.front(),
                                   arch));
    for (uint64_t l = 0; l < std::min<uint64_t>(s.layers, kMaxModelLayers); ++l) s.linear_layers.push_back((l + 1) % interval != 0);
    ModelSpec::LinearAttention& a = s.linear;
    a.conv_kernel = key_u64(m, arch + ".ssm.conv_kernel");
    a.key_head_dim = a.value_head_dim = key_u64(m, arch + ".ssm.state_size");
    a.key_heads = key_u64(m, arch + ".ssm.group_count");
    a.value_heads = key_u64(m, arch + ".ssm.time_step_rank");
    if (key_u64(m, arch + ".ssm.inner_size") != a.value_heads * a.value_head_dim)
      throw InputError(fmt::format("{}: metadata key '{}.ssm.inner_size' is {}; expected time_step_rank x state_size = {}",
                                   m.paths.front(), arch, key_u64(m, arch + ".ssm.inner_size"),
                                   a.value_heads * a.value_head_dim));
    s.attn_output_gate = true;
    if (const uint64_t shared = key_u64(m, arch + ".expert_shared_feed_forward_length", 0)) {
      s.shared_experts = 1;
      s.shared_intermediate = shared;
    }
  }

  bool has_output = false, has_token_embd = false;
  std::set<int64_t> moe_layers;
  for (const GgufTensorInfo& t : m.tensors) {
    if (beyond_trunk(t, trunk)) continue;
    const TensorInfo info = tensor_info_of(t);
    if (info.layer >= static_cast<int64_t>(s.layers))
      throw InputError(fmt::format("{}: tensor '{}' is beyond block_count {}", m.paths.front(), t.name, s.layers));
    switch (info.role) {
      case TensorRole::token_embd: has_token_embd = true; s.vocab = t.shape.size() > 1 ? t.shape[1] : 0; break;
      case TensorRole::output: has_output = true; break;
      case TensorRole::attn_q_norm:
        s.qk_norm = true;
        s.qk_norm_whole = !t.shape.empty() && t.shape[0] != s.head_dim;  // MiniMax-M2's, over the projection
        break;
      case TensorRole::attn_q_bias: s.qkv_bias = true; break;
      case TensorRole::rope_freqs: s.rope_freqs_tensor = true; break;
      case TensorRole::ffn_gate_inp: moe_layers.insert(info.layer); break;
      case TensorRole::ffn_down_exps:
        if (s.moe_intermediate == 0) s.moe_intermediate = t.shape[0];
        break;
      case TensorRole::ffn_down:
        if (s.intermediate == 0) s.intermediate = t.shape[0];
        break;
      case TensorRole::ffn_post_norm: s.post_norms = true; break;
      case TensorRole::attn_sinks: s.attn_sinks = true; break;
      case TensorRole::attn_output_bias: s.attn_output_bias = true; break;
      case TensorRole::ffn_gate_exps_bias: s.expert_bias = true; break;
      case TensorRole::attn_qkv: s.fused_qkv = !s.is_hybrid(); break;  // Gated DeltaNet's q, k, v: not Phi's
      case TensorRole::ffn_gate_inp_shexp: s.shared_expert_gate = true; break;
      case TensorRole::ffn_down_shexp:  // Llama 4's one shared expert (DeepSeek's count is a key)
        if (s.shared_experts == 0) s.shared_experts = 1;
        if (!t.shape.empty() && t.shape[0] != s.moe_intermediate * s.shared_experts) s.shared_intermediate = t.shape[0];
        break;
      case TensorRole::ssm_ba: s.linear.fused_beta_alpha = true; break;
      case TensorRole::ffn_exp_probs_b:
        s.expert_score_bias = true;
        if (arch == "deepseek2") s.model_type = "deepseek_v3";  // V2 has no routing bias
        break;
      default: break;
    }
  }
  // Sliding windows where llama.cpp applies them: every other layer from the first (gemma2,
  // gpt-oss), five of six (gemma3); its phi3 disables them.
  // llama4: three of four layers within 8192-token chunks, unless the key says 0 (llama.cpp's constant).
  const bool chunks = arch == "llama4";
  if (const uint64_t window = chunks ? (key_u64(m, arch + ".attention.sliding_window", 8192) ? 8192 : 0)
                                     : key_u64(m, arch + ".attention.sliding_window", 0);
      window && llama_cpp_applies_windows(arch)) {
    s.sliding_window = window;
    s.chunked_windows = chunks;
    for (uint64_t l = 0; l < std::min<uint64_t>(s.layers, kMaxModelLayers); ++l)
      s.window_layers.push_back(arch == "gemma3" ? (l + 1) % 6 != 0 : chunks ? (l + 1) % 4 != 0 : l % 2 == 0);
  }
  if (arch == "gemma2" || arch == "gemma3") {
    s.embedding_scale = true;
    s.gelu_ffn = true;
    // llama.cpp scales q by head_dim^-1/2, by (hidden / heads)^-1/2 for the 27B models (62 and 46 layers)
    if ((arch == "gemma3" && s.layers == 62) || (arch == "gemma2" && s.layers == 46))
      s.query_pre_attn_scalar = static_cast<double>(s.hidden) / static_cast<double>(s.heads);
  }
  if (arch == "gpt-oss") s.swiglu_limit = 7.0;  // llama.cpp's constant (no key carries it)
  if (arch == "gemma3") s.rope_local_theta = key_f64(m, arch + ".rope.freq_base_swa", 10000.0);
  if (arch == "gemma2") {
    s.attn_softcap = key_f64(m, arch + ".attn_logit_softcapping", 0.0);
    s.final_softcap = key_f64(m, arch + ".final_logit_softcapping", 0.0);
  }
  if (!has_token_embd || s.vocab == 0)
    throw InputError(fmt::format("{}: tensor 'token_embd.weight' (n_embd x n_vocab) is missing", m.paths.front()));
  s.tied_embeddings = !has_output;
  const auto name_of = [&](std::string_view member) -> std::string {
    static const std::map<std::string_view, std::string_view> kKeys{
        {"hidden", "embedding_length"}, {"layers", "block_count"}, {"heads", "attention.head_count"},
        {"kv_heads", "attention.head_count_kv"}, {"head_dim", "attention.key_length"},
        {"intermediate", "feed_forward_length"}, {"experts", "expert_count"},
        {"experts_active", "expert_used_count"}, {"moe_intermediate", "expert_feed_forward_length"},
        {"max_context", "context_length"}, {"rope_theta", "rope.freq_base"},
        {"rms_norm_eps", "attention.layer_norm_rms_epsilon"}, {"linear.key_heads", "ssm.group_count"},
        {"linear.value_heads", "ssm.time_step_rank"}, {"linear.key_head_dim", "ssm.state_size"},
        {"linear.value_head_dim", "ssm.state_size"}, {"linear.conv_kernel", "ssm.conv_kernel"}};
    if (member == "vocab") return "tensor 'token_embd.weight' dimension 1 (n_vocab)";
    const auto k = kKeys.find(member);
    return k == kKeys.end() ? std::string(member) : fmt::format("metadata key '{}.{}'", arch, k->second);
  };
  // The layer count bounds the loop below (a hostile block_count of 2^62 would never end).
  validate_model_shape(s, name_of, m.paths.front());
  if (s.experts > 0) {
    for (uint64_t l = 0; l < s.layers; ++l)
      if (!moe_layers.contains(static_cast<int64_t>(l))) s.mlp_only_layers.push_back(l);
    validate_model_shape(s, name_of, m.paths.front());  // again, now that dense layers are known
  }
  return s;
}

}  // namespace infer_plan
