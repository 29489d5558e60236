// Finds models, hardware profiles and links by built-in name ("qwen3-8b", "h200",
// "pcie-gen5-x16") or by path to a JSON file. Unknown names list what is known.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "planner/model/hw_profile.hpp"
#include "planner/model/model_spec.hpp"

namespace infer_plan {

// A model by built-in name, a config.json path, a model directory (its config.json), a GGUF
// file, or a Hugging Face id (ORG/NAME, not a path that exists): the config.json of its snapshot
// in the local hub cache ($HF_HUB_CACHE, else $HF_HOME/hub, else $XDG_CACHE_HOME/huggingface/hub,
// else ~/.cache/huggingface/hub, as huggingface_hub looks), the one refs/main names where there
// are several. Nothing is fetched. A config found by id or in a model's folder is named by the id
// or the folder, not "config".
ModelSpec load_model(std::string_view name_or_path);
HwProfile load_hw_profile(std::string_view name_or_path);
// The profile's JSON as written (for `calibrate`, which writes it back with a calibration).
Json hw_profile_json(std::string_view name_or_path);
LinkProfile load_link(std::string_view name_or_path);

std::vector<std::string> builtin_model_names();
std::vector<std::string> builtin_hw_names();
std::vector<std::string> builtin_link_names();

// True when the argument is meant as a file path rather than a built-in name.
bool looks_like_path(std::string_view arg);

// Where `-m` finds a model that is not built in: the config.json to read and the model's name
// (see load_model). InputError naming where it looked when neither a file nor a cached id.
struct ModelConfigPath {
  std::string path, name;
};
ModelConfigPath find_model_config(std::string_view arg);

}  // namespace infer_plan
