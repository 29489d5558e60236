// Built-in entries come from the embedded data table; anything that looks like a path
// (contains '/', or ends in .json) is read from disk instead.
#include "planner/catalog/catalog.hpp"

#include <filesystem>
#include <fmt/format.h>
#include <mutex>
#include <map>
#include <optional>

#include "planner/catalog/embedded_data.hpp"
#include "planner/weights/gguf_reader.hpp"
#include "planner/core/input_error.hpp"

namespace infer_plan {
namespace {

constexpr std::string_view kModelDir = "scenarios/models/";
constexpr std::string_view kHwDir = "hwprofiles/";
// Where an unknown device's message sends the user: the format by example.
constexpr std::string_view kProfileFormat =
    "a profile JSON file (copy hwprofiles/h200.json, installed in share/infer-plan/: memory capacity, reserved "
    "and bandwidth, compute per precision, links, each with its unit: \"141 GB\", \"4.8 TB/s\")";
constexpr std::string_view kLinkDir = "hwprofiles/links/";

std::vector<std::string> names_in(std::string_view dir) {
  std::vector<std::string> out;
  for (const auto& f : embedded_files()) {
    if (!f.path.starts_with(dir)) continue;
    std::string_view rest = f.path.substr(dir.size());
    if (rest.find('/') != std::string_view::npos || !rest.ends_with(".json")) continue;
    out.emplace_back(rest.substr(0, rest.size() - 5));
  }
  return out;
}

std::optional<std::string_view> embedded(std::string_view dir, std::string_view name) {
  const std::string path = fmt::format("{}{}.json", dir, name);
  for (const auto& f : embedded_files())
    if (f.path == path) return f.content;
  return std::nullopt;
}

struct Loaded {
  Json json;
  std::string name;
  std::string where;
};

Loaded load(std::string_view arg, std::string_view dir, std::string_view what,
            const std::vector<std::string>& known, std::string_view path_hint) {
  if (looks_like_path(arg)) {
    std::string path(arg);
    std::filesystem::path p(path);
    return {read_json_file(path), p.stem().string(), path};
  }
  if (auto content = embedded(dir, arg)) {
    std::string where = fmt::format("built-in {}", std::string(dir) + std::string(arg) + ".json");
    return {parse_json_text(*content, where), std::string(arg), where};
  }
  throw InputError(fmt::format("unknown {} '{}'; built-in: {}; or give a path to {}", what, arg,
                               fmt::join(known, ", "), path_hint));
}

}  // namespace

bool looks_like_path(std::string_view arg) {
  return arg.find('/') != std::string_view::npos || arg.ends_with(".json");
}

std::vector<std::string> builtin_model_names() { return names_in(kModelDir); }
std::vector<std::string> builtin_hw_names() { return names_in(kHwDir); }
std::vector<std::string> builtin_link_names() { return names_in(kLinkDir); }

ModelSpec load_model(std::string_view arg) {
  if (is_gguf_path(arg)) return model_spec_from_gguf(read_gguf_model(std::string(arg)));  // header only
  // A built-in model is parsed once per process: the step models' fits map every published run
  // to its model, hundreds of times.
  const bool builtin = !looks_like_path(arg);
  static std::mutex m;
  static std::map<std::string, ModelSpec, std::less<>> parsed;
  if (builtin) {
    std::lock_guard<std::mutex> lock(m);
    if (const auto it = parsed.find(arg); it != parsed.end()) return it->second;
  }
  Loaded l = load(arg, kModelDir, "model", builtin_model_names(), "a Hugging Face config.json");
  ModelSpec spec = model_spec_from_hf_config(l.json, l.name, l.where);
  if (builtin) {
    std::lock_guard<std::mutex> lock(m);
    parsed.emplace(std::string(arg), spec);
  }
  return spec;
}

LinkProfile load_link(std::string_view arg) {
  Loaded l = load(arg, kLinkDir, "link", builtin_link_names(), "a link profile JSON file");
  return link_profile_from_json(l.json, l.name, l.where);
}

Json hw_profile_json(std::string_view arg) {
  return load(arg, kHwDir, "hardware profile", builtin_hw_names(), kProfileFormat).json;
}

HwProfile load_hw_profile(std::string_view arg) {
  Loaded l = load(arg, kHwDir, "hardware profile", builtin_hw_names(), kProfileFormat);
  return hw_profile_from_json(l.json, l.name, l.where,
                              [](const std::string& name) { return load_link(name); });
}

}  // namespace infer_plan
