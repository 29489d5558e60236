// Built-in entries come from the embedded data table; anything that looks like a path
// (contains '/', or ends in .json) is read from disk instead.
#include "planner/catalog/catalog.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <fmt/format.h>
#include <mutex>
#include <map>
#include <optional>

#include "planner/catalog/embedded_data.hpp"
#include "planner/weights/gguf_reader.hpp"
#include "planner/core/input_error.hpp"
#include "planner/core/suggest.hpp"

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
  throw InputError(fmt::format("unknown {} '{}'{}; built-in: {}; or give a path to {}", what, arg, did_you_mean(arg, known),
                               fmt::join(known, ", "), path_hint));
}

}  // namespace

bool looks_like_path(std::string_view arg) {
  return arg.find('/') != std::string_view::npos || arg.ends_with(".json");
}

namespace {

std::string env_or(const char* name, const std::string& otherwise) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::string(v) : otherwise;
}

// huggingface_hub's cache folder (constants.py: HF_HUB_CACHE, HF_HOME, XDG_CACHE_HOME).
std::filesystem::path hub_cache() {
  const std::string home = env_or("HOME", ".");
  const std::string hf_home = env_or("HF_HOME", env_or("XDG_CACHE_HOME", home + "/.cache") + "/huggingface");
  return env_or("HF_HUB_CACHE", hf_home + "/hub");
}

// A config.json's name: its folder's, and for a hub snapshot (models--ORG--NAME/snapshots/HASH) the id.
std::string config_model_name(const std::filesystem::path& config) {
  const std::filesystem::path dir = std::filesystem::absolute(config).lexically_normal().parent_path();
  const std::string repo = dir.parent_path().parent_path().filename().string();
  if (dir.parent_path().filename() == "snapshots" && repo.starts_with("models--")) {
    std::string id = repo.substr(8);
    if (const size_t sep = id.find("--"); sep != std::string::npos) id.replace(sep, 2, "/");
    return id;
  }
  return dir.filename().string();
}

}  // namespace

ModelConfigPath find_model_config(std::string_view arg_in) {
  namespace fs = std::filesystem;
  const std::string arg(arg_in);
  std::error_code ec;
  if (fs::is_directory(arg, ec)) {
    const fs::path config = fs::path(arg) / "config.json";
    if (!fs::is_regular_file(config, ec))
      throw InputError(fmt::format("{}: a folder without config.json (a model folder holds the Hugging Face config.json)", arg));
    return {config.string(), config_model_name(config)};
  }
  if (fs::exists(arg, ec)) {
    const fs::path p(arg);
    return {arg, p.filename() == "config.json" ? config_model_name(p) : p.stem().string()};
  }
  // ORG/NAME: one slash, no extension of a file
  const size_t slash = arg.find('/');
  const bool id = slash != std::string::npos && slash > 0 && slash + 1 < arg.size() &&
                  arg.find('/', slash + 1) == std::string::npos && !arg.ends_with(".json") && !arg.ends_with(".gguf");
  if (!id) throw InputError(fmt::format("{}: cannot open file", arg));
  const fs::path repo = hub_cache() / fmt::format("models--{}--{}", arg.substr(0, slash), arg.substr(slash + 1));
  std::vector<fs::path> configs;
  if (fs::is_directory(repo / "snapshots", ec)) {
    // refs/main names the snapshot huggingface_hub resolves by default
    if (std::ifstream ref(repo / "refs" / "main"); ref) {
      std::string hash;
      std::getline(ref, hash);
      if (fs::is_regular_file(repo / "snapshots" / hash / "config.json", ec)) configs.push_back(repo / "snapshots" / hash / "config.json");
    }
    if (configs.empty())
      for (const fs::directory_entry& e : fs::directory_iterator(repo / "snapshots", ec))
        if (fs::is_regular_file(e.path() / "config.json", ec)) configs.push_back(e.path() / "config.json");
  }
  if (configs.empty())
    throw InputError(fmt::format("{}: neither a file nor in the Hugging Face cache (looked for {}/snapshots/*/config.json; "
                                 "`huggingface-cli download {} config.json` puts it there; infer-plan fetches nothing)",
                                 arg, repo.string(), arg));
  if (configs.size() > 1)
    throw InputError(fmt::format("{}: {} snapshots in {} and no refs/main to choose one; give the config.json path",
                                 arg, configs.size(), repo.string()));
  return {configs.front().string(), arg};
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
  Loaded l;
  if (builtin) {
    l = load(arg, kModelDir, "model", builtin_model_names(), "a Hugging Face config.json, model folder or id");
  } else {
    const ModelConfigPath found = find_model_config(arg);
    l = {read_json_file(found.path), found.name, found.path};
  }
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
