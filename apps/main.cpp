// infer-plan: answers capacity and latency questions about LLM inference in milliseconds.
// main only wires the subcommands and maps errors to exit codes.
#include <cctype>
#include <charconv>
#include <cstdint>
#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>
#include <string_view>
#include <fmt/format.h>

#include "apps/commands.hpp"
#include "apps/exit_code.hpp"
#include "planner/core/input_error.hpp"

int main(int argc, char** argv) {
  CLI::App app{
      "infer-plan: does this model fit, how fast will it run, and is a lever (KV quantization,\n"
      "offload, speculative decoding, admission) worth it? Answers from a cost model; every\n"
      "figure comes with its units. Run 'infer-plan COMMAND --help' for each command's flags."};
  app.require_subcommand(1);
  app.set_version_flag("--version", "infer-plan 0.1.0");
  app.footer("Exit codes: 0 success, 2 bad input (the message names the file, field or flag).");
  infer_plan::apps::add_fit_command(app);
  infer_plan::apps::add_gguf_command(app);
  infer_plan::apps::add_kv_command(app);
  infer_plan::apps::add_roofline_command(app);
  infer_plan::apps::add_offload_command(app);
  infer_plan::apps::add_quant_command(app);
  infer_plan::apps::add_model_command(app);
  infer_plan::apps::add_hw_command(app);
  infer_plan::apps::add_spec_command(app);
  infer_plan::apps::add_pd_command(app);
  infer_plan::apps::add_sweep_command(app);
  infer_plan::apps::add_queue_command(app);
  infer_plan::apps::add_admit_command(app);
  infer_plan::apps::add_run_command(app);
  infer_plan::apps::add_probe_command(app);
  infer_plan::apps::add_report_command(app);
  infer_plan::apps::add_calibrate_command(app);
  if (argc > 1 && argv[1][0] != '-') {
    bool known = false;
    std::string names;
    for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
      known = known || sub->check_name(argv[1]);
      names += (names.empty() ? "" : ", ") + sub->get_name();
    }
    if (!known) {
      fmt::print(stderr, "infer-plan: error: unknown command '{}'; commands: {}\n", argv[1], names);
      return 2;
    }
  }
  // No flag or argument of any command takes an empty value: `--ctx ""` or `--model=` would
  // otherwise fall back to the default in silence.
  for (int i = 2; i < argc; ++i) {
    const std::string_view arg = argv[i];
    const bool after_flag = argv[i - 1][0] == '-' && std::string_view(argv[i - 1]).find('=') == std::string_view::npos;
    if (arg.empty()) {
      fmt::print(stderr, "infer-plan: error: {}: the value is empty; give one (or leave the {} out for its default)\n",
                 after_flag ? argv[i - 1] : fmt::format("argument {}", i - 1).c_str(), after_flag ? "flag" : "argument");
      return 2;
    }
    if (arg.starts_with("--") && arg.ends_with('=')) {
      fmt::print(stderr, "infer-plan: error: {}: the value is empty; give one (or leave the flag out for its default)\n",
                 arg.substr(0, arg.size() - 1));
      return 2;
    }
    // Nor a number that is not finite: NaN passes every range check (each comparison is false)
    // and would print "nan ms" or be ignored.
    const size_t eq = arg.starts_with("--") ? arg.find('=') : std::string_view::npos;
    std::string value(eq == std::string_view::npos ? arg : arg.substr(eq + 1));
    for (char& ch : value) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (!value.empty() && (value[0] == '-' || value[0] == '+')) value.erase(0, 1);
    // Nor a whole number past 2^64 - 1, which CLI11 would wrap into a small one.
    uint64_t parsed = 0;
    const bool digits = !value.empty() && value.find_first_not_of("0123456789") == std::string::npos;
    const bool beyond = digits && std::from_chars(value.data(), value.data() + value.size(), parsed).ec ==
                                      std::errc::result_out_of_range;
    if (beyond || value == "nan" || value.starts_with("nan(") || value == "inf" || value == "infinity") {
      const std::string flag = eq != std::string_view::npos ? std::string(arg.substr(0, eq))
                               : after_flag                 ? std::string(argv[i - 1])
                                                            : fmt::format("argument {}", i - 1);
      fmt::print(stderr, "infer-plan: error: {}: '{}' is {}\n", flag, eq == std::string_view::npos ? arg : arg.substr(eq + 1),
                 beyond ? "beyond 2^64 - 1" : "not a finite number");
      return 2;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);  // prints CLI11's message naming the flag
    return 2;
  } catch (const infer_plan::apps::ExitCode& e) {
    return e.code;
  } catch (const infer_plan::InputError& e) {
    fmt::print(stderr, "infer-plan: error: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "infer-plan: internal error: {}\n", e.what());
    return 3;
  }
  return 0;
}
