// Built-in data files compiled into the binary (see cmake/embed.cmake): hwprofiles/*.json,
// scenarios/**/*.json, keyed by their path relative to the repository root.
#pragma once
#include <span>
#include <string_view>

namespace infer_plan {

struct EmbeddedFile {
  std::string_view path;     // "hwprofiles/h200.json"
  std::string_view content;
};

std::span<const EmbeddedFile> embedded_files();

}  // namespace infer_plan
