#include "apps/output_files.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "apps/format.hpp"
#include "apps/output.hpp"
#include "planner/core/input_error.hpp"

namespace infer_plan::apps {

void check_chart_path(const std::string& path, std::string_view flag) {
  if (output_state().documents_wanted)
    throw InputError(fmt::format("{}: a chart of one plan; a sweep's points would each overwrite it (leave the sweep or {} out)",
                                 flag, flag));
  check_output_path(path, flag);
}

void check_output_path(const std::string& path, std::string_view flag) {
  if (path.empty()) return;
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  std::error_code ec;
  if (!parent.empty() && !std::filesystem::is_directory(parent, ec))
    throw InputError(fmt::format("{}: cannot write '{}': folder '{}' does not exist", flag, path, parent.string()));
  if (std::filesystem::is_directory(path, ec))
    throw InputError(fmt::format("{}: cannot write '{}': it is a folder; expected a file name", flag, path));
  const std::string folder = parent.empty() ? "." : parent.string();
  if (::access(folder.c_str(), W_OK) != 0 ||
      (std::filesystem::exists(path, ec) && ::access(path.c_str(), W_OK) != 0))
    throw InputError(fmt::format("{}: cannot write '{}': permission denied", flag, path));
}

void check_output_dir(const std::string& dir, std::string_view flag) {
  if (dir.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir, ec))
    throw InputError(fmt::format("{}: cannot create folder '{}'{}", flag, dir, ec ? ": " + ec.message() : ""));
  if (::access(dir.c_str(), W_OK) != 0)
    throw InputError(fmt::format("{}: cannot write into folder '{}': permission denied", flag, dir));
}

void write_text_file(const std::string& path, const std::string& text, std::string_view flag) {
  std::ofstream out(path);
  if (!(out << text)) throw InputError(fmt::format("{}: cannot write '{}'", flag, path));
}

void write_json_file(const std::string& path, const Json& j, std::string_view flag) {
  std::ofstream out(path);
  if (!out) throw InputError(fmt::format("{}: cannot write '{}'", flag, path));
  out << json_text(j) << "\n";
}

}  // namespace infer_plan::apps
