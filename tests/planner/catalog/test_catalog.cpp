// Where -m finds a model that is not built in: a config.json, a model folder, a Hugging Face id in
// the local hub cache (built here in a temporary folder, as huggingface_hub lays it out).
#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "planner/catalog/catalog.hpp"
#include "planner/core/input_error.hpp"
#include "planner/model/model_spec.hpp"

using namespace infer_plan;
namespace fs = std::filesystem;

namespace {

// HF_HUB_CACHE set for the scope, restored after.
struct HubCache {
  fs::path root;
  std::string saved;
  bool had = false;
  HubCache() : root(fs::temp_directory_path() / fmt_root()) {
    fs::remove_all(root);
    fs::create_directories(root);
    if (const char* v = std::getenv("HF_HUB_CACHE")) saved = v, had = true;
    setenv("HF_HUB_CACHE", root.c_str(), 1);
  }
  ~HubCache() {
    if (had) setenv("HF_HUB_CACHE", saved.c_str(), 1);
    else unsetenv("HF_HUB_CACHE");
    fs::remove_all(root);
  }
  static std::string fmt_root() { return "infer-plan-hub-" + std::to_string(::getpid()); }
  // models--ORG--NAME/snapshots/HASH/config.json, a copy of a built-in model's config
  void snapshot(const std::string& repo, const std::string& hash, const std::string& builtin) {
    const fs::path dir = root / repo / "snapshots" / hash;
    fs::create_directories(dir);
    fs::copy_file("scenarios/models/" + builtin + ".json", dir / "config.json", fs::copy_options::overwrite_existing);
  }
};

}  // namespace

TEST_CASE("a Hugging Face id: the snapshot's config.json in the hub cache, named by the id") {
  HubCache hub;
  hub.snapshot("models--Qwen--Qwen3-8B", "abc123", "qwen3-8b");
  const ModelSpec by_id = load_model("Qwen/Qwen3-8B");
  CHECK(by_id.name == "Qwen/Qwen3-8B");
  // the same config as the built-in: the same parameters
  CHECK(parameter_count(by_id).total == parameter_count(load_model("qwen3-8b")).total);
  // a folder holding config.json (the snapshot's), and its config.json, are named by the id too
  const fs::path folder = hub.root / "models--Qwen--Qwen3-8B" / "snapshots" / "abc123";
  CHECK(load_model(folder.string() + "/").name == "Qwen/Qwen3-8B");
  CHECK(load_model((folder / "config.json").string()).name == "Qwen/Qwen3-8B");
  // two snapshots: refs/main chooses; without it, the user must
  hub.snapshot("models--Qwen--Qwen3-8B", "def456", "qwen3-4b");
  CHECK_THROWS_WITH_AS(load_model("Qwen/Qwen3-8B"), doctest::Contains("2 snapshots"), InputError);
  fs::create_directories(hub.root / "models--Qwen--Qwen3-8B" / "refs");
  std::ofstream(hub.root / "models--Qwen--Qwen3-8B" / "refs" / "main") << "def456\n";
  CHECK(parameter_count(load_model("Qwen/Qwen3-8B")).total == parameter_count(load_model("qwen3-4b")).total);
  // not cached: where it looked, and that nothing is fetched
  CHECK_THROWS_WITH_AS(load_model("Qwen/Qwen3-32B"), doctest::Contains("models--Qwen--Qwen3-32B/snapshots/*/config.json"),
                       InputError);
  CHECK_THROWS_WITH_AS(load_model("Qwen/Qwen3-32B"), doctest::Contains("fetches nothing"), InputError);
  // a folder without config.json
  CHECK_THROWS_WITH_AS(load_model(hub.root.string()), doctest::Contains("a folder without config.json"), InputError);
}
