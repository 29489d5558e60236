// infer-plan's command line: wires the subcommands and maps errors to exit codes. In the
// commands' library (apps/main.cpp only calls it), so it compiles with their precompiled headers
// and in their unity units instead of parsing CLI11 again on its own.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>
#include <string_view>
#include <memory>
#include <utility>
#include <vector>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "apps/cli_main.hpp"
#include "apps/commands.hpp"
#include "apps/exit_code.hpp"
#include "apps/llama_flags.hpp"
#include "apps/output.hpp"
#include "planner/core/input_error.hpp"
#include "planner/core/suggest.hpp"

namespace {

using infer_plan::apps::OutputFormat;
using infer_plan::apps::output_state;

// The runtime's commands, cli_main's argument (every sweep point builds its parser again).
infer_plan::apps::AddCommandsFn add_runtime = nullptr;

std::unique_ptr<CLI::App> make_app() {
  auto app = std::make_unique<CLI::App>(
      "infer-plan: does this model fit, how fast will it run, and is a lever (KV quantization,\n"
      "offload, speculative decoding, admission) worth it? Answers from a cost model; every\n"
      "figure comes with its units. Run 'infer-plan COMMAND --help' for each command's flags.\n"
      "llama.cpp's flags mean what they mean there: -m, -c, -ctk/-ctv, -np, -n, -p, -t, -ngl.\n"
      "A comma list on a flag (-c 8K,32K -ctk f16,q8_0) runs every combination as one table;\n"
      "-o text|md|csv|json|jsonl picks the output.");
  app->require_subcommand(1);
  app->set_version_flag("--version,-V", "infer-plan " INFER_PLAN_VERSION);
  app->footer("Exit codes: 0 success, 2 bad input (the message names the file, field or flag).");
  infer_plan::apps::add_fit_command(*app);
  infer_plan::apps::add_gguf_command(*app);
  infer_plan::apps::add_kv_command(*app);
  infer_plan::apps::add_roofline_command(*app);
  infer_plan::apps::add_offload_command(*app);
  infer_plan::apps::add_quant_command(*app);
  infer_plan::apps::add_model_command(*app);
  infer_plan::apps::add_hw_command(*app);
  infer_plan::apps::add_spec_command(*app);
  infer_plan::apps::add_pd_command(*app);
  infer_plan::apps::add_sweep_command(*app);
  infer_plan::apps::add_queue_command(*app);
  infer_plan::apps::add_admit_command(*app);
  infer_plan::apps::add_advise_command(*app);
  add_runtime(*app);
  infer_plan::apps::add_calibrate_command(*app);
  infer_plan::apps::add_completion_command(*app);
  return app;
}

// llama.cpp's multi-letter short flags (apps/llama_flags.hpp) read as their long names.
std::string llama_cpp_long_name(std::string_view flag) {
  for (const auto& [short_name, long_name] : infer_plan::apps::kLlamaCppShortFlags)
    if (flag == short_name) return std::string(long_name);
  return std::string(flag);
}

// No flag or argument of any command takes an empty value, a number that is not finite (queue's
// --rate inf is a word it reads itself), or a
// whole number past 2^64 - 1; prints why and returns false.
bool values_are_sane(const std::vector<std::string>& args) {
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string_view arg = args[i];
    const bool after_flag = args[i - 1][0] == '-' && args[i - 1].find('=') == std::string::npos;
    // `--ctx ""` or `--model=` would otherwise fall back to the default in silence.
    if (arg.empty()) {
      fmt::print(stderr, "infer-plan: error: {}: the value is empty; give one (or leave the {} out for its default)\n",
                 after_flag ? args[i - 1] : fmt::format("argument {}", i), after_flag ? "flag" : "argument");
      return false;
    }
    if (arg.starts_with("--") && arg.ends_with('=')) {
      fmt::print(stderr, "infer-plan: error: {}: the value is empty; give one (or leave the flag out for its default)\n",
                 arg.substr(0, arg.size() - 1));
      return false;
    }
    // NaN passes every range check (each comparison is false) and would print "nan ms" or be
    // ignored; CLI11 would wrap a number past 2^64 - 1 into a small one.
    const size_t eq = arg.starts_with("--") ? arg.find('=') : std::string_view::npos;
    std::string value(eq == std::string_view::npos ? arg : arg.substr(eq + 1));
    for (char& ch : value) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (!value.empty() && (value[0] == '-' || value[0] == '+')) value.erase(0, 1);
    uint64_t parsed = 0;
    const bool digits = !value.empty() && value.find_first_not_of("0123456789") == std::string::npos;
    const bool beyond = digits && std::from_chars(value.data(), value.data() + value.size(), parsed).ec ==
                                      std::errc::result_out_of_range;
    if (beyond || value == "nan" || value.starts_with("nan(") || value == "inf" || value == "infinity") {
      const std::string flag = eq != std::string_view::npos ? std::string(arg.substr(0, eq))
                               : after_flag                 ? args[i - 1]
                                                            : fmt::format("argument {}", i);
      // vLLM bench's spelling of "every request at once": queue --rate checks it (a word, not a number)
      if (flag == "--rate" && (eq == std::string_view::npos ? arg : arg.substr(eq + 1)) == "inf") continue;
      fmt::print(stderr, "infer-plan: error: {}: '{}' is {}\n", flag, eq == std::string_view::npos ? arg : arg.substr(eq + 1),
                 beyond ? "beyond 2^64 - 1" : "not a finite number");
      return false;
    }
  }
  return true;
}

// A flag whose value is a comma list: each value is one axis of the sweep.
struct Axis {
  size_t index;      // of the argument holding the value
  std::string flag;  // the option's long name, without dashes
  std::string prefix;  // "--ctx=" when written with '=', else empty
  std::vector<std::string> values;
};

// The comma lists among the flags of the command `args` names: a flag that takes one value, not
// a file, whose type name does not itself say it takes a list.
// The (sub)command the leading words of `args` name; `i` is left at the first argument after them.
CLI::App* command_named(CLI::App& app, const std::vector<std::string>& args, size_t& i) {
  CLI::App* cmd = &app;
  i = 0;
  while (i < args.size() && !args[i].empty() && args[i][0] != '-') {
    CLI::App* sub = nullptr;
    for (CLI::App* candidate : cmd->get_subcommands([](CLI::App*) { return true; }))
      if (candidate->check_name(args[i])) sub = candidate;
    if (sub == nullptr) break;
    cmd = sub;
    ++i;
  }
  return cmd;
}

// A flag the command does not have, refused before CLI11 reads its value as a positional
// ("File does not exist: x" for `calibrate f.json --engien x`), with the command's nearest flags.
// Returns the message, or "" when every flag is known.
std::string unknown_flag(CLI::App& app, const std::vector<std::string>& args) {
  size_t i = 0;
  CLI::App* cmd = command_named(app, args, i);
  if (cmd->get_allow_extras()) return "";  // it reads what it is given itself (a build's absent command)
  for (; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") break;  // what follows is positional
    // not a flag: a word, a lone dash, a negative number
    if (arg.size() < 2 || arg[0] != '-' || std::isdigit(static_cast<unsigned char>(arg[1])) || arg[1] == '.') continue;
    const std::string name = arg.substr(0, arg.starts_with("--") ? arg.find('=') : std::string::npos);
    const CLI::Option* opt = cmd->get_option_no_throw(name);
    if (opt == nullptr) opt = app.get_option_no_throw(name);
    if (opt != nullptr) {
      // its value is the next argument, whatever it looks like (--ctx -1 is refused by --ctx itself)
      if (opt->get_type_size() > 0 && name.size() == arg.size()) ++i;
      continue;
    }
    // The nearest of the command's flags (and the program's: --help, -o), each by its first long name.
    std::vector<std::string> bare;
    std::vector<std::string> shown;
    for (const CLI::App* owner : {static_cast<const CLI::App*>(cmd), static_cast<const CLI::App*>(&app)})
      for (const CLI::Option* o : owner->get_options()) {
        if (o->get_lnames().empty() && o->get_snames().empty()) continue;  // a positional
        const std::string show = o->get_lnames().empty() ? "-" + o->get_snames().front() : "--" + o->get_lnames().front();
        for (const std::string& n : o->get_lnames()) bare.push_back(n), shown.push_back(show);
        for (const std::string& n : o->get_snames()) bare.push_back(n), shown.push_back(show);
      }
    std::vector<std::string> near;
    for (const std::string& n : infer_plan::nearest_names(name.substr(name.find_first_not_of('-')), bare, bare.size()))
      for (size_t k = 0; k < bare.size(); ++k)
        if (bare[k] == n && std::find(near.begin(), near.end(), shown[k]) == near.end() && near.size() < 3)
          near.push_back(shown[k]);
    const std::string command = cmd == &app ? "infer-plan" : cmd->get_name();
    if (near.empty())
      return fmt::format("{}: unknown flag '{}' (infer-plan {} --help lists its flags)", command, name,
                         cmd == &app ? "" : command);
    return fmt::format("{}: unknown flag '{}'; did you mean {}?", command, name,
                       near.size() == 1 ? near[0]
                                        : fmt::format("{} or {}", fmt::join(near.begin(), near.end() - 1, ", "), near.back()));
  }
  return "";
}

std::vector<Axis> sweep_axes(CLI::App& app, const std::vector<std::string>& args) {
  size_t i = 0;
  CLI::App* cmd = command_named(app, args, i);
  std::vector<Axis> axes;
  for (; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg.size() < 2 || arg[0] != '-') continue;
    const size_t eq = arg.starts_with("--") ? arg.find('=') : std::string::npos;
    const std::string name = arg.substr(0, eq);
    const CLI::Option* opt = cmd->get_option_no_throw(name);
    if (opt == nullptr || opt->get_type_size() == 0 || opt->get_items_expected_max() != 1) continue;
    const size_t at = eq == std::string::npos ? i + 1 : i;
    if (at >= args.size()) break;
    const std::string value = eq == std::string::npos ? args[at] : arg.substr(eq + 1);
    const std::string type = opt->get_type_name();
    // Not swept: files, the output format, and a flag whose own value is a list ("RATE[,RATE...]").
    const bool own_list = type.find(',') != std::string::npos;
    const bool file = type.find("FILE") != std::string::npos || type.find("DIR") != std::string::npos ||
                      type == "PATH" || opt->check_name("--output-format");
    if (!file && !own_list && value.find(',') != std::string::npos) {
      std::string long_name = opt->get_name();  // the column: "ctx-size" for -c, --ctx or --ctx-size
      long_name.erase(0, long_name.find_first_not_of('-'));
      Axis axis{at, long_name, eq == std::string::npos ? "" : name + "=", {}};
      for (size_t from = 0;;) {
        const size_t comma = value.find(',', from);
        axis.values.push_back(value.substr(from, comma == std::string::npos ? std::string::npos : comma - from));
        if (comma == std::string::npos) break;
        from = comma + 1;
      }
      for (const std::string& v : axis.values)
        if (v.empty())
          throw infer_plan::InputError(fmt::format("{}: '{}' has an empty item in its comma list", opt->get_name(), value));
      axes.push_back(std::move(axis));
    }
    if (eq == std::string::npos) ++i;
  }
  return axes;
}

// The arguments as typed (before llama.cpp's short flags were read as their long names).
std::vector<std::string> typed_args;

// A refusal that begins with a flag ("--parallel: 0 is out of range") names it as the user typed
// it (--requests, -np), when they typed one of that option's other names.
std::string as_typed(CLI::App& app, const std::vector<std::string>& args, std::string message) {
  const size_t colon = message.find(':');
  if (!message.starts_with("-") || colon == std::string::npos) return message;
  const std::string flag = message.substr(0, colon);
  size_t i = 0;
  const CLI::App* cmd = command_named(app, args, i);
  const CLI::Option* opt = cmd->get_option_no_throw(flag);
  if (opt == nullptr) return message;
  for (const std::string& t : typed_args) {
    const std::string name = t.substr(0, t.starts_with("--") ? t.find('=') : std::string::npos);
    if (t.starts_with("-") && name != flag && opt->check_name(llama_cpp_long_name(name)))
      return name + message.substr(colon);
  }
  return message;
}

// Parses and runs one command line with `app` (not parsed before); returns its exit code. `label`
// prefixes errors (a sweep's point).
int parse_and_run(std::unique_ptr<CLI::App> app, const std::vector<std::string>& args, const std::string& label) {
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app->parse(reversed);
  } catch (const CLI::CallForHelp& e) {
    return app->exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app->exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app->exit(e);
  } catch (const CLI::ParseError& e) {
    app->exit(e);  // prints CLI11's message naming the flag
    return 2;
  } catch (const infer_plan::apps::ExitCode& e) {
    return e.code;
  } catch (const infer_plan::InputError& e) {
    fmt::print(stderr, "infer-plan: error: {}{}\n", label, as_typed(*app, args, e.what()));
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "infer-plan: internal error: {}{}\n", label, e.what());
    return 3;
  }
  return 0;
}

}  // namespace

int infer_plan::apps::cli_main(int argc, char** argv, AddCommandsFn add_runtime_commands) {
  add_runtime = add_runtime_commands;
  std::vector<std::string> args;
  typed_args.clear();
  for (int i = 1; i < argc; ++i) {
    typed_args.emplace_back(argv[i]);
    args.push_back(llama_cpp_long_name(argv[i]));
  }
  auto app = make_app();
  if (!args.empty() && args[0][0] != '-') {
    bool known = false;
    std::string names;
    for (const CLI::App* sub : app->get_subcommands([](CLI::App*) { return true; })) {
      known = known || sub->check_name(args[0]);
      names += (names.empty() ? "" : ", ") + sub->get_name();
    }
    if (!known) {
      fmt::print(stderr, "infer-plan: error: unknown command '{}'; commands: {}\n", args[0], names);
      return 2;
    }
  }
  if (!values_are_sane(args)) return 2;
  if (const std::string unknown = unknown_flag(*app, args); !unknown.empty()) {
    fmt::print(stderr, "infer-plan: error: {}\n", unknown);
    return 2;
  }
  std::vector<Axis> axes;
  try {
    axes = sweep_axes(*app, args);
  } catch (const infer_plan::InputError& e) {
    fmt::print(stderr, "infer-plan: error: {}\n", e.what());
    return 2;
  }
  const std::string command = args.empty() ? "" : args[0];
  std::vector<infer_plan::apps::OutputRow> rows;
  int code = 0;
  if (axes.empty()) {
    code = parse_and_run(std::move(app), args, "");  // a command that ends with a verdict (sweep --check: 1) has printed
    for (infer_plan::Json& d : output_state().documents) rows.push_back({{}, std::move(d)});
  } else {
    output_state().documents_wanted = true;  // every point is a row, text included
    size_t points = 1;
    for (const Axis& a : axes) points *= a.values.size();
    if (points > 10000) {
      fmt::print(stderr, "infer-plan: error: the comma lists make {} combinations; at most 10000\n", points);
      return 2;
    }
    for (size_t p = 0; p < points; ++p) {
      std::vector<std::string> point_args = args;
      infer_plan::apps::OutputRow row;
      std::string label;
      for (size_t a = axes.size(), rest = p; a-- > 0;) {  // the first flag varies slowest
        const std::string& v = axes[a].values[rest % axes[a].values.size()];
        rest /= axes[a].values.size();
        point_args[axes[a].index] = axes[a].prefix + v;
        row.sweep.insert(row.sweep.begin(), {axes[a].flag, v});
      }
      for (const auto& [flag, value] : row.sweep) label += fmt::format("{}--{} {}", label.empty() ? "[" : ", ", flag, value);
      if (!values_are_sane(point_args)) return 2;  // each item of a list, as a value of its own
      output_state().documents.clear();
      code = parse_and_run(make_app(), point_args, label + "] ");  // a fresh parser per point
      if (code != 0) return code;
      if (output_state().documents.size() != 1) {
        fmt::print(stderr, "infer-plan: error: {}: this command has no table output; run its points one by one\n",
                   command);
        return 2;
      }
      row.document = std::move(output_state().documents.front());
      rows.push_back(std::move(row));
    }
  }
  if (!rows.empty()) {
    const std::string key = command == "gguf" && args.size() > 1 ? "gguf " + args[1] : command;
    fmt::print("{}", infer_plan::apps::render_rows(key, rows, output_state().format));
  }
  return code;
}
