// Files a command writes (reports, plots, plans): their paths checked before the work that fills
// them, and written with the flag named when that fails. In the planner's half of the CLI, so
// commands without the runtime (advise) write files too.
#pragma once
#include <string>
#include <string_view>

#include "planner/core/json_fields.hpp"

namespace infer_plan::apps {

// Refuses an output path whose folder does not exist, before minutes of probing or running.
void check_output_path(const std::string& path, std::string_view flag);
// Creates the folder (with its parents) for files written after the run, or refuses it now.
void check_output_dir(const std::string& dir, std::string_view flag);
// check_output_path for a chart of one plan, which a sweep (a flag given several values) would
// write once per point over the same file: refused then.
void check_chart_path(const std::string& path, std::string_view flag);
void write_text_file(const std::string& path, const std::string& text, std::string_view flag);

void write_json_file(const std::string& path, const Json& j, std::string_view flag);

}  // namespace infer_plan::apps
