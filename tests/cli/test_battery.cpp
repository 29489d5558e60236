// The hostile-input battery (issue 15): several hundred bad inputs across every command, each run
// as a user would run it (the real binary, its own process, a time limit). For every input: no
// signal (crash), no hang, an exit code of 2 (or 0 where the value may be valid), and on exit 2 a
// message that names what is wrong (the flag, the file or the field). Inputs are generated here:
// mutated plans, profiles, configs and GGUFs, deep and huge JSON, FIFOs, devices, folders.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "planner/core/json_fields.hpp"
#include "tests/support/toy_gguf.hpp"

using namespace infer_plan;
namespace fs = std::filesystem;

namespace {

struct Outcome {
  int exit_code = -1;  // -1 when a signal ended it
  int signal = 0;
  bool timed_out = false;
  std::string output;  // stdout and stderr together
};

// Runs the binary with `args`, its output in a file, killed after `limit_s`.
Outcome run_cli(const std::vector<std::string>& args, double limit_s) {
  static const fs::path out_file = fs::temp_directory_path() / fmt::format("infer_plan_battery_{}.txt", getpid());
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    setpgid(0, 0);
    const int fd = open(out_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    const int null_in = open("/dev/null", O_RDONLY);
    dup2(null_in, 0);
    std::vector<char*> argv{const_cast<char*>(INFER_PLAN_BINARY)};
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(INFER_PLAN_BINARY, argv.data());
    _exit(127);
  }
  Outcome o;
  const auto start = std::chrono::steady_clock::now();
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > limit_s) {
      o.timed_out = true;
      kill(-pid, SIGKILL);
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (WIFEXITED(status)) o.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) o.signal = WTERMSIG(status);
  std::ifstream in(out_file);
  o.output.assign(std::istreambuf_iterator<char>(in), {});
  return o;
}

struct Case {
  std::vector<std::string> args;
  std::string names;              // exit 2 must print this (a flag, a file, a field)
  bool may_succeed = false;       // a value that can be valid: exit 0 is fine too
  double limit_s = 30;
};

// Every case in one pass; failures are reported one per line with the command and its output.
void run_battery(const std::vector<Case>& cases) {
  int failures = 0;
  for (const Case& c : cases) {
    const Outcome o = run_cli(c.args, c.limit_s);
    std::string why;
    if (o.timed_out) why = fmt::format("hung (killed after {} s)", c.limit_s);
    else if (o.signal) why = fmt::format("crashed with signal {}", o.signal);
    else if (o.exit_code != 2 && !(c.may_succeed && o.exit_code == 0)) why = fmt::format("exit {}", o.exit_code);
    else if (o.exit_code == 2 && o.output.find(c.names) == std::string::npos)
      why = fmt::format("the message does not name '{}'", c.names);
    if (!why.empty()) {
      ++failures;
      std::string cmd;
      for (const std::string& a : c.args) cmd += (cmd.empty() ? "" : " ") + (a.empty() ? "''" : a);
      MESSAGE(fmt::format("infer-plan {}: {}\n  output: {}", cmd, why, o.output.substr(0, 400)));
    }
  }
  MESSAGE(fmt::format("{} inputs, {} failed", cases.size(), failures));
  CHECK(failures == 0);
}

// The battery's scratch folder, with the hostile files every group shares.
struct Files {
  fs::path dir = fs::temp_directory_path() / fmt::format("infer_plan_battery_{}", getpid());
  std::string fifo, folder, empty, malformed, deep_array, deep_object, array, garbage, huge_number, missing;

  Files() {
    fs::remove_all(dir);
    fs::create_directories(dir / "folder");
    folder = (dir / "folder").string();
    fifo = (dir / "fifo.json").string();
    REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
    empty = write("empty.json", "");
    malformed = write("malformed.json", "{\"model\": ");
    deep_array = write("deep_array.json", std::string(100000, '[') + std::string(100000, ']'));
    std::string deep = "{\"model\": ";
    for (int i = 0; i < 100000; ++i) deep += "{\"a\": ";
    deep += "1" + std::string(100000, '}') + "}";
    deep_object = write("deep_object.json", deep);
    array = write("array.json", "[1, 2, 3]");
    std::mt19937 rng(15);
    std::string bytes(4096, '\0');
    for (char& ch : bytes) ch = static_cast<char>(rng());
    garbage = write("garbage.bin", bytes);
    huge_number = write("huge_number.json", "{\"context\": 1e400}");
    missing = (dir / "no-such-file.json").string();
  }
  ~Files() { fs::remove_all(dir); }

  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(dir / name, std::ios::binary) << text;
    return (dir / name).string();
  }
  std::string json(const std::string& name, const Json& j) const {
    return write(name, j.dump(2, ' ', false, Json::error_handler_t::replace));
  }
  // Every unreadable kind of path, for a flag or positional that takes a file.
  std::vector<std::string> unreadable() const {
    return {missing, folder, fifo, "/dev/zero", "/dev/urandom", empty, malformed, deep_array, deep_object, garbage};
  }
};

// A llama-bench calibration input that `calibrate` reads (with --hw rtx-3090).
const char* const kBenchFile = "hwprofiles/calibrations/rtx-3090.json";

std::string basename_of(const std::string& path) { return fs::path(path).filename().string(); }

Json read_json(const std::string& path) {
  std::ifstream in(path);
  return Json::parse(in);
}

}  // namespace

TEST_CASE("unreadable files and folders in every file argument [files]") {
  const Files f;
  std::vector<Case> cases;
  const std::vector<std::vector<std::string>> file_flags{
      {"fit", "--plan"},       {"fit", "--hw"},         {"fit", "--model"},     {"quant", "--quantize"},
      {"kv", "--model"},       {"roofline", "--plan"},  {"roofline", "--hw"},   {"spec", "--plan"},
      {"spec", "--draft"},     {"offload", "--plan"},   {"offload", "--link"},  {"pd", "--model"},
      {"pd", "--link"},        {"pd", "--hw"},          {"queue", "--hw"},      {"calibrate", "--hw"},
      {"run", "--plan"},       {"run", "--hw"},         {"report", "--plan"},   {"report", "--hw"},
      {"kv", "--plan"},        {"gguf", "size", "--model"}};
  // every kind of unreadable path in the first five; a missing file, a FIFO and a device elsewhere
  for (size_t i = 0; i < file_flags.size(); ++i) {
    const std::vector<std::string>& ff = file_flags[i];
    for (const std::string& path : i < 5 ? f.unreadable() : std::vector<std::string>{f.missing, f.fifo, "/dev/zero"}) {
      Case c;
      c.args = ff;
      if (ff.back() == "--quantize") c.args = {"quant", "--quantize", "q8_0:" + path};
      else c.args.push_back(path);
      if (ff[0] == "queue") c.args.insert(c.args.begin() + 1, {"--simulate", "--rate", "1"});
      if (ff[0] == "calibrate") c.args.insert(c.args.begin() + 1, kBenchFile);
      c.names = basename_of(path);
      if (ff.back() == "--quantize") c.names = "--quantize";
      cases.push_back(c);
    }
  }
  // positionals that are files
  for (const std::string& path : {f.missing, f.fifo, f.folder, std::string("/dev/zero"), f.deep_object}) {
    cases.push_back({{"model", path}, basename_of(path)});
    cases.push_back({{"hw", path}, basename_of(path)});
    cases.push_back({{"gguf", "inspect", path}, basename_of(path)});
    cases.push_back({{"calibrate", path, "--hw", "rtx-3090"}, basename_of(path)});
    cases.push_back({{"run", path}, basename_of(path)});
    cases.push_back({{"report", path}, basename_of(path)});
  }
  cases.push_back({{"fit", "--plan", f.array}, "array.json"});
  cases.push_back({{"fit", "--plan", f.huge_number}, "huge_number.json"});
  run_battery(cases);
}

TEST_CASE("outputs that cannot be written are refused before any work [outputs]") {
  const Files f;
  const std::string tiny = "tests/data/tiny_config.json";
  std::vector<Case> cases;
  for (const std::string& out : std::vector<std::string>{"/dev/null/x", f.folder, "/nonexistent-dir/x.json"}) {
    cases.push_back({{"run", "--model", tiny, "--ctx", "40", "--output", "8", "--quiet", "--out", out}, "--out", false, 10});
    cases.push_back({{"report", "--model", tiny, "--ctx", "40", "--output", "8", "--quiet", "--out", out}, "--out", false, 10});
    cases.push_back({{"probe", "--quick", "--out", out}, "--out", false, 10});
    cases.push_back({{"calibrate", kBenchFile, "--hw", "rtx-3090", "--out", out}, "--out", false, 10});
  }
  // (as root any missing folder can be created, so only a path under a file is a bad --svg)
  cases.push_back({{"report", "--model", tiny, "--ctx", "40", "--output", "8", "--quiet", "--svg", "/dev/null/svg"}, "--svg",
                   false, 10});
  run_battery(cases);
}

TEST_CASE("bad numbers in every numeric flag [numbers]") {
  std::vector<Case> cases;
  const std::vector<std::string> bad{"-1", "nan", "99999999999999999999999"};
  const std::vector<std::string> odd{"0"};
  const std::vector<std::pair<std::string, std::string>> flags{
      {"fit", "--ctx-size"},     {"fit", "--parallel"},     {"fit", "--tp"},             {"fit", "--scale"},
      {"fit", "--weights-size"}, {"kv", "--ctx"},           {"kv", "--parallel"},        {"roofline", "--batch"},
      {"fit", "--n-gpu-layers"}, {"roofline", "--output-len"},
      {"roofline", "--decode-ms"}, {"roofline", "--output"}, {"roofline", "--deadline"},  {"spec", "--verify-ms"},
      {"spec", "--draft-ms"},    {"spec", "--decode-ms"},   {"spec", "--max-block"},     {"spec", "--group"},
      {"spec", "--accept"},      {"spec", "--batch"},       {"spec", "--draft-layers"},  {"offload", "--every"},
      {"offload", "--buffers"},  {"offload", "--max-batch"}, {"pd", "--input-len"},      {"pd", "--output-len"},
      {"pd", "--prefill-ms"},    {"pd", "--decode-ms"},     {"pd", "--decode-batch"},    {"pd", "--qps"},
      {"pd", "--concurrency"},   {"pd", "--gpus"},          {"admit", "--deadline"},     {"admit", "--ttft"},
      {"admit", "--kv-free"},    {"queue", "--rate"},       {"queue", "--sojourn"},      {"queue", "--in-system"}};
  // The command's required flags, less the one under test.
  auto base = [](const std::string& cmd, const std::string& flag) -> std::vector<std::string> {
    std::vector<std::string> args{cmd};
    if (cmd == "admit") args = {"admit", "--ttft", "1", "--generation", "1", "--deadline", "5"};
    if (cmd == "queue") args = {"queue", "--rate", "2", "--sojourn", "1"};
    for (size_t i = 1; i + 1 < args.size(); ++i)
      if (args[i] == flag) {
        args.erase(args.begin() + static_cast<long>(i), args.begin() + static_cast<long>(i) + 2);
        break;
      }
    if (cmd == "queue" && flag == "--in-system") args.resize(3);  // two of the three
    return args;
  };
  for (const auto& [cmd, flag] : flags) {
    for (const std::string& v : bad) {
      std::vector<std::string> args = base(cmd, flag);
      args.insert(args.end(), {flag, v});
      cases.push_back({args, flag});
    }
    if (cmd == "admit") continue;
    for (const std::string& v : odd) {
      std::vector<std::string> args = base(cmd, flag);
      args.insert(args.end(), {flag, v});
      cases.push_back({args, flag, true});
    }
  }
  // the serving simulation's flags
  for (const char* flag : {"--iteration-ms", "--per-seq-ms", "--prefill-ms", "--deadline", "--slo-reject",
                                  "--rate-tolerance", "--num-prompts", "--max-batch", "--kv-tokens", "--input-len",
                                  "--output-len", "--goodput"})
    for (const char* v : {"-1", "1e308"})
      cases.push_back({{"queue", "--simulate", "--rate", "2", "--iteration-ms", "10", flag, v}, flag});
  // the runtime's: every one refused before a weight is written
  for (const char* flag : {"--threads", "--seed", "--ctx", "--parallel", "--scale", "--spec-repeats"})
    for (const char* v : {"-1", "99999999999999999999999"})
      cases.push_back({{"run", "--model", "tests/data/tiny_config.json", "--quiet", flag, v}, flag, false, 10});
  cases.push_back({{"run", "--model", "tests/data/tiny_config.json", "--quiet", "--threads", "100000"}, "--threads", false, 10});
  run_battery(cases);
}

TEST_CASE("unknown names: models, types, devices, links, commands, flags [names]") {
  std::vector<Case> cases;
  for (const char* cmd : {"fit", "kv", "roofline", "spec", "offload", "run", "report"}) {
    cases.push_back({{cmd, "--model", "qwen9-800b"}, "qwen9-800b", false, 10});
    // kv has no --hw: the flag is what it names
    cases.push_back({{cmd, "--hw", "tpu-v9"}, std::string_view(cmd) == "kv" ? "unknown flag '--hw'" : "tpu-v9", false, 10});
    cases.push_back({{cmd, "--kv", "q3_k"}, "--kv", false, 10});
    cases.push_back({{cmd, "--bogus-flag", "1"}, "--bogus-flag", false, 10});
    if (std::string_view(cmd) != "kv") cases.push_back({{cmd, "--weights", "Q9_K"}, "Q9_K", false, 10});
  }
  for (const char* cmd : {"model", "hw", "queue", "pd", "quant", "sweep", "probe"})
    cases.push_back({{cmd, "--bogus-flag", "1"}, "--bogus-flag", false, 10});
  cases.push_back({{"admit", "--ttft", "1", "--generation", "1", "--deadline", "5", "--bogus-flag"}, "--bogus-flag"});
  cases.push_back({{"calibrate", kBenchFile, "--hw", "rtx-3090", "--bogus-flag"}, "--bogus-flag"});
  cases.push_back({{"model", "qwen9-800b"}, "qwen9-800b"});
  cases.push_back({{"hw", "tpu-v9"}, "tpu-v9"});
  cases.push_back({{"gguf", "size", "--model", "qwen3-8b", "--type", "Q9_K"}, "Q9_K"});
  cases.push_back({{"offload", "--link", "carrier-pigeon"}, "carrier-pigeon"});
  cases.push_back({{"pd", "--link", "carrier-pigeon"}, "carrier-pigeon"});
  cases.push_back({{"spec", "--draft", "qwen9-800b"}, "qwen9-800b"});
  cases.push_back({{"queue", "--simulate", "--rate", "2", "--hw", "h200", "--engine", "tgi"}, "tgi"});
  cases.push_back({{"fit", "--engine", "tgi"}, "tgi"});
  cases.push_back({{"frobnicate"}, "frobnicate"});
  cases.push_back({{"run", "--backend", "tpu", "--model", "tests/data/tiny_config.json", "--quiet"}, "tpu"});
  cases.push_back({{"quant", "--quantize", "q9_9:x"}, "--quantize"});
  cases.push_back({{"sweep", "--format", "xml", "scenarios/"}, "--format"});
  for (const char* cmd : {"fit", "kv", "roofline", "queue", "sweep", "hw", "model"})
    cases.push_back({{cmd, "-o", "xml"}, "-o: 'xml'"});  // as typed
  run_battery(cases);
}

TEST_CASE("mutated config.json shapes in every command that reads a model [configs]") {
  const Files f;
  const Json base = read_json("tests/data/tiny_config.json");
  const std::vector<std::pair<std::string, Json>> mutations{
      {"head_dim", 0},
      {"head_dim", uint64_t{1} << 40},
      {"head_dim", 63},
      {"num_hidden_layers", uint64_t{1} << 62},
      {"num_hidden_layers", 1000000000},
      {"num_hidden_layers", 0},
      {"hidden_size", uint64_t{1} << 63},
      {"hidden_size", -256},
      {"vocab_size", uint64_t{1} << 62},
      {"vocab_size", "many"},
      {"num_attention_heads", 0},
      {"num_key_value_heads", 3},
      {"num_key_value_heads", 0},
      {"intermediate_size", uint64_t{1} << 50},
      {"max_position_embeddings", uint64_t{1} << 60},
      {"rope_theta", -1},
      {"rms_norm_eps", 0},
      {"model_type", "gemma7"},
      {"model_type", 42},
  };
  std::vector<Case> cases;
  int n = 0;
  for (const auto& [key, value] : mutations) {
    Json c = base;
    c[key] = value;
    const std::string path = f.json(fmt::format("config_{}.json", n++), c);
    const std::string name = basename_of(path);
    cases.push_back({{"model", path}, name});
    cases.push_back({{"fit", "--model", path}, name});
    cases.push_back({{"gguf", "size", "--model", path}, name});
    cases.push_back({{"run", "--model", path, "--quiet"}, name, false, 10});
  }
  // a config that is not an object, and a key that shapes nothing in a dense type
  cases.push_back({{"model", f.array}, "array.json"});
  run_battery(cases);
}

TEST_CASE("mutated GGUF metadata and bytes [gguf]") {
  const Files f;
  auto write_with = [&](const std::string& name, const std::string& key, const GgufValue& value) {
    const std::string path = (f.dir / name).string();
    test_support::write_toy_gguf_with(path, key, value);
    return path;
  };
  const std::vector<std::pair<std::string, GgufValue>> mutations{
      {"qwen3.attention.key_length", GgufValue::of_u32(0)},
      {"qwen3.attention.key_length", GgufValue::of_u64(uint64_t{1} << 40)},
      {"qwen3.block_count", GgufValue::of_u64(uint64_t{1} << 62)},
      {"qwen3.block_count", GgufValue::of_u32(0)},
      {"qwen3.embedding_length", GgufValue::of_u64(uint64_t{1} << 63)},
      {"qwen3.attention.head_count", GgufValue::of_u32(0)},
      {"qwen3.attention.head_count_kv", GgufValue::of_u32(3)},
      {"qwen3.context_length", GgufValue::of_u64(uint64_t{1} << 62)},
      {"qwen3.rope.freq_base", GgufValue::of_f32(0.0f)},
      {"qwen3.expert_count", GgufValue::of_u32(100000)},
      {"general.architecture", GgufValue::of_u32(7)},
      {"general.architecture", GgufValue::of_string("gemma9")},
  };
  std::vector<Case> cases;
  int n = 0;
  std::vector<std::string> paths;
  for (const auto& [key, value] : mutations) paths.push_back(write_with(fmt::format("mut_{}.gguf", n++), key, value));
  // bytes: truncated at several points, and random corruption of the header
  const std::string good = write_with("good.gguf", "qwen3.context_length", GgufValue::of_u32(256));
  std::string bytes;
  {
    std::ifstream in(good, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  for (size_t cut : {size_t{3}, size_t{20}, size_t{100}, bytes.size() / 2, bytes.size() - 1})
    paths.push_back(f.write(fmt::format("cut_{}.gguf", cut), bytes.substr(0, cut)));
  std::mt19937 rng(7);
  for (int i = 0; i < 6; ++i) {
    std::string b = bytes;
    for (int k = 0; k < 4; ++k) b[8 + rng() % 600] = static_cast<char>(rng());
    paths.push_back(f.write(fmt::format("flip_{}.gguf", i), b));
  }
  for (const std::string& path : paths) {
    const std::string name = basename_of(path);
    const bool flipped = name.starts_with("flip_");  // a flip may land in a value that stays valid
    // inspect shows a readable file's metadata as stored, shapes included (as gguf-dump does)
    const bool readable = flipped || name.starts_with("mut_");
    cases.push_back({{"gguf", "inspect", path}, name, readable});
    cases.push_back({{"gguf", "inspect", "--json", path}, name, readable});
    cases.push_back({{"fit", "--model", path}, name, flipped});
  }
  run_battery(cases);
}

TEST_CASE("mutated vocabularies in tokenize and run --prompt [gguf]") {
  // A toy GGUF with a synthetic vocabulary, then one tokenizer key at a time made hostile: the
  // wrong type, a count that disagrees, an id beyond the vocabulary, a tokenizer or
  // pre-tokenizer not implemented, merges missing. Each is refused naming the key; none crashes.
  const Files f;
  std::vector<std::string> tokens;  // the toy GGUF's 32 ids: too few for byte tokens, so by hand
  for (int i = 0; i < 32; ++i) tokens.push_back(std::string(1, static_cast<char>('A' + i)));
  const std::vector<GgufKeyValue> good{{"tokenizer.ggml.model", GgufValue::of_string("gpt2")},
                                       {"tokenizer.ggml.pre", GgufValue::of_string("qwen2")},
                                       {"tokenizer.ggml.tokens", GgufValue::of_strings(tokens)},
                                       {"tokenizer.ggml.token_type", GgufValue::of_i32s(std::vector<int32_t>(32, 1))},
                                       {"tokenizer.ggml.merges", GgufValue::of_strings({"A B"})}};
  const std::vector<std::pair<GgufKeyValue, std::string>> mutations{
      {{"tokenizer.ggml.tokens", GgufValue::of_u32(7)}, "tokenizer.ggml.tokens"},
      {{"tokenizer.ggml.token_type", GgufValue::of_i32s({1, 1})}, "tokenizer.ggml.token_type"},
      {{"tokenizer.ggml.bos_token_id", GgufValue::of_u32(1000)}, "tokenizer.ggml.bos_token_id"},
      {{"tokenizer.ggml.model", GgufValue::of_string("rwkv")}, "tokenizer.ggml.model"},
      {{"tokenizer.ggml.model", GgufValue::of_u32(1)}, "tokenizer.ggml.model"},
      {{"tokenizer.ggml.pre", GgufValue::of_string("chatglm-bpe")}, "tokenizer.ggml.pre"},
      {{"tokenizer.ggml.merges", GgufValue::of_u32(3)}, "tokenizer.ggml.merges"},
      {{"tokenizer.ggml.add_bos_token", GgufValue::of_u32(1)}, "tokenizer.ggml.add_bos_token"},
      // the byte-level vocabulary lacks byte tokens: 'A'..'`' cover 32 of the 256 bytes
      {{"tokenizer.ggml.pre", GgufValue::of_string("qwen2")}, "byte-level vocabulary has no token for byte"},
  };
  std::vector<Case> cases;
  int n = 0;
  for (const auto& [mutation, names] : mutations) {
    std::vector<GgufKeyValue> meta = good;
    bool replaced = false;
    for (GgufKeyValue& kv : meta)
      if (kv.key == mutation.key) kv = mutation, replaced = true;
    if (!replaced) meta.push_back(mutation);
    const std::string path = (f.dir / fmt::format("vocab_{}.gguf", n++)).string();
    test_support::write_toy_gguf_with(path, meta);
    cases.push_back({{"tokenize", "-m", path, "Hello"}, names});
    cases.push_back({{"run", "-m", path, "-w", "file", "--prompt", "Hello", "-n", "2", "--quiet"}, names});
  }
  run_battery(cases);
}

TEST_CASE("mutated plan files in every command that reads a plan [plans]") {
  const Files f;
  const Json base = {{"model", "tests/data/tiny_config.json"}, {"hw", "h200"}, {"context", 64}, {"output", 16},
                     {"requests", 2}};
  const std::vector<std::pair<std::string, Json>> mutations{
      {"context", 0},
      {"context", uint64_t{1} << 40},
      {"context", -5},
      {"context", "64K tokens"},
      {"requests", 0},
      {"requests", 1000000000000},
      {"tp", 0},
      {"tp", 1000},
      {"scale", 0},
      {"scale", 2},
      {"scale", 1e-300},
      {"weights", "Q9_K"},
      {"weights_size", "10000 PiB"},
      {"weights_size", "-3 GiB"},
      {"kv", "q3"},
      {"kv", Json::array()},
      {"reserves", {{"cuda", "18446744073709551615 B"}}},
      {"reserves", {{"cuda", 5}}},
      {"decode_ms", -1},
      {"deadline_s", 0},
      {"hw", {{"name", "x"}}},
      {"hw", 7},
      {"offload", {{"every", 0}}},
      {"offload", {{"part", "brain"}}},
      {"offload", {{"buffers", 0}}},
      {"speculative", {{"accept", 2.0}, {"verify_ms", 1}, {"draft_ms", 1}}},
      {"speculative", {{"accept", -1}, {"verify_ms", 1}, {"draft_ms", 1}}},
      {"speculative", {{"accept", 0.5}, {"verify_ms", 1}, {"draft_ms", 1}, {"max_block", 0}}},
      {"speculative", {{"accept", 0.5}, {"verify_ms", 1}, {"draft_ms", 1}, {"group", 0}}},
      {"speculative", {{"accept", 0.5}, {"verify_ms", 1}, {"draft_ms", 1}, {"max_block", 4}, {"block", 9}}},
      {"speculative", {{"accept", 0.5}, {"draft", "qwen9-800b"}}},
      {"speculative", {{"accept", 0.5}, {"draft_layers", 99}}},
      {"speculative", {{"accept", 0.5}, {"verify_ms", -1}, {"draft_ms", 1}}},
      {"load", {{"rate_per_s", 0}}},
      {"load", {{"rate_per_s", -2}}},
      {"load", {{"rate_per_s", 2}, {"requests", 1000000000000}}},
      {"load", {{"rate_per_s", 2}, {"max_batch", 0}}},
      {"load", {{"simulate", true}}},
      {"pd", {{"prefill_workers", 0}}},
      {"pd", {{"link_scale", -1}}},
      {"pd", {{"links", "25gbe"}}},
      {"pd", "split"},
      {"mdoel", "qwen3-8b"},
  };
  std::vector<Case> cases;
  int n = 0;
  for (const auto& [key, value] : mutations) {
    Json p = base;
    p[key] = value;
    const std::string path = f.json(fmt::format("plan_{}.json", n++), p);
    const std::string name = basename_of(path);
    // fit, kv, roofline and offload share one reader (apps/plan_options); spec and run add their own
    cases.push_back({{"kv", "--plan", path}, name});
    cases.push_back({{"spec", "--plan", path}, name});
    cases.push_back({{"run", path, "--quiet"}, name, false, 10});
  }
  run_battery(cases);
}

TEST_CASE("mutated hardware profiles and scenarios [profiles]") {
  const Files f;
  const Json base = read_json("hwprofiles/h200.json");
  std::vector<Case> cases;
  const std::vector<std::pair<std::string, Json>> memory{
      {"capacity", "0 GB"}, {"capacity", "18446744073709551615 B"}, {"capacity", "-1 GB"},
      {"reserved", "200 GB"}, {"bandwidth", "0 TB/s"}, {"bandwidth", -1}, {"bandwidth", "1e300 TB/s"},
      {"bandwidth", "fast"}};
  int n = 0;
  for (const auto& [key, value] : memory) {
    Json p = base;
    p["memory"][key] = value;
    const std::string path = f.json(fmt::format("profile_{}.json", n++), p);
    // (kv reads no profile: it has no --hw, and says so)
    for (const char* cmd : {"fit", "roofline"}) cases.push_back({{cmd, "--hw", path}, basename_of(path)});
    cases.push_back({{"hw", path}, basename_of(path)});
  }
  for (const Json& bf16 : {Json("0 TFLOPS"), Json("-5 TFLOPS"), Json(989), Json("1e30 PFLOPS")}) {
    Json p = base;
    p["compute"]["bf16"] = bf16;
    const std::string path = f.json(fmt::format("profile_{}.json", n++), p);
    for (const char* cmd : {"fit", "roofline", "hw"})
      cases.push_back({std::string_view(cmd) == "hw" ? std::vector<std::string>{"hw", path} : std::vector<std::string>{cmd, "--hw", path},
                       basename_of(path)});
  }
  {
    Json p = base;
    p["memroy"] = p["memory"];
    const std::string path = f.json("profile_typo.json", p);
    cases.push_back({{"fit", "--hw", path}, "memroy"});
  }
  // scenarios: a misspelled expectation path and an axis into a section that is not an object
  {
    Json s = {{"name", "battery"},
              {"cases", {{{"name", "typo"}, {"plan", {{"model", "qwen3-8b"}}},
                          {"expect", {{{"path", "fit.fitz"}, {"value", true}}}}}}}};
    const std::string path = f.json("scenario_typo.json", s);
    cases.push_back({{"sweep", "--check", path}, "fit.fitz"});
    s["cases"][0]["expect"] = Json::array();
    s["cases"][0]["sweep"] = {{"hw.memory", Json::array({"1 GB"})}};
    s["cases"][0]["plan"]["hw"] = "h200";
    const std::string axis = f.json("scenario_axis.json", s);
    cases.push_back({{"sweep", "--check", axis}, "hw.memory"});
  }
  cases.push_back({{"sweep", "--check", f.deep_object}, "deep_object.json"});
  cases.push_back({{"sweep", "--check", f.fifo}, "fifo.json"});
  cases.push_back({{"sweep", "--check", f.folder}, "folder"});
  run_battery(cases);
}

namespace {

// The documented form of every key in `j`: nested objects joined by '.', lists of objects as
// "key[]", numeric keys as N; a distribution (it has "unresolved") and the opaque objects
// (`at_rate`: a whole simulation document; advise's `plan`: a plan file; `metadata`: a GGUF's own keys; a calibration's
// efficiency by weight type) count as one key.
void documented_keys(const Json& j, const std::string& prefix, std::set<std::string>& out) {
  if (j.is_object() && !j.contains("unresolved") && prefix != "at_rate" && prefix != "metadata" && !prefix.ends_with("].plan") &&
      !prefix.ends_with("_efficiency_by_type")) {  // maps keyed by weight type: documented whole
    for (const auto& [key, value] : j.items()) {
      const bool numeric = !key.empty() && key.find_first_not_of("0123456789") == std::string::npos;
      documented_keys(value, (prefix.empty() ? "" : prefix + ".") + (numeric ? "N" : key), out);
    }
    return;
  }
  if (j.is_array() && !j.empty() && j.front().is_object()) {
    for (const Json& e : j) documented_keys(e, prefix + "[]", out);
    return;
  }
  out.insert(prefix);
}

// Every figure whose key names bytes is a whole number, written as one (never 17510719488.0).
void check_byte_figures(const Json& j, const std::string& path, const std::string& command) {
  if (j.is_object())
    for (const auto& [key, value] : j.items()) check_byte_figures(value, path + "." + key, command);
  else if (j.is_array())
    for (const Json& e : j) check_byte_figures(e, path + "[]", command);
  else if (j.is_number_float() && path.find("bytes") != std::string::npos && path.find("_per_s") == std::string::npos)
    FAIL_CHECK(command << ": " << path << " = " << j.dump() << " is a byte figure written as a float");
}

}  // namespace

TEST_CASE("every key a command prints is in docs/json.md, byte figures are integers [jsondoc]") {
  std::ifstream in("docs/json.md");
  REQUIRE(in.good());
  const std::string doc(std::istreambuf_iterator<char>(in), {});
  const std::vector<std::vector<std::string>> commands{
      {"fit", "--json"},
      {"fit", "--plan", "scenarios/plans/h200-offload.json", "--json"},
      {"fit", "--engine", "llama.cpp", "--hw", "rtx-4090", "--json"},
      {"fit", "-m", "gpt-oss-120b", "-w", "MXFP4_MOE", "--engine", "llama.cpp", "--hw", "rtx-4090", "-np", "1", "--fit", "on", "--json"},
      {"kv", "--json"},
      {"roofline", "--json"},
      {"roofline", "--hw", "rtx-4090", "--engine", "llama.cpp", "-m", "llama-2-7b", "-w", "Q4_0", "--batch", "1", "--json"},
      {"offload", "--json"},
      {"quant", "Q2_K", "--json"},
      {"model", "qwen3-235b-a22b", "--json"},
      {"hw", "h200", "--json"},
      {"hw", "--json"},
      {"model", "--json"},
      {"quant", "--json"},
      {"spec", "--json"},
      {"pd", "--gpus", "8", "--prefill-concurrency", "4", "--json"},
      {"queue", "--rate", "4", "--sojourn", "0.5", "--json"},
      {"queue", "--simulate", "--rate", "4", "--iteration-ms", "20", "--goodput", "ttft:500", "--json"},
      {"queue", "--max-rate", "--iteration-ms", "20", "--slo-ttft-p99", "1", "--json"},
      {"admit", "--ttft", "0.196", "--generation", "6.76", "--deadline", "7", "--json"},
      {"advise", "-m", "qwen3-8b", "--hw", "h200", "--rate", "2", "--slo-tpot-p99", "50ms", "--weights", "Q8_0", "--json"},
      {"advise", "-m", "qwen3-8b", "--hw", "h200", "-c", "8K", "--weights", "Q8_0", "--json"},
      {"gguf", "size", "--json"},
      {"gguf", "inspect", "tests/data/gguf/tiny-qwen3.gguf", "--json"},
      {"calibrate", "hwprofiles/calibrations/rtx-3090.json", "--hw", "rtx-3090", "--json"},
      {"calibrate", "--loo", "device", "--json"},
      {"calibrate", "hwprofiles/calibrations/rtx-4090.json", "--hw", "rtx-4090", "--loo", "device", "--json"},
      {"roofline", "--hw", "h200", "--engine", "llama.cpp", "--json"},
      {"sweep", "scenarios/s23-j23.json", "--json"},
      {"tokenize", "-m", "tests/data/tiny_config.json", "Hello, world!", "--json"},
      {"tokenize", "-m", "tests/data/tiny_config.json", "--ids", "72,101", "--json"},
      {"quality", "-m", "tests/conformance/models/llama.json", "-w", "Q8_0:pure", "-c", "128", "--json"}};
  for (const auto& args : commands) {
    const Outcome o = run_cli(args, 30);
    const std::string command = fmt::format("{}", fmt::join(args, " "));
    REQUIRE_MESSAGE(o.exit_code == 0, command << ": " << o.output);
    const Json j = Json::parse(o.output);
    CHECK_MESSAGE(j.value("schema", 0) == 1, command << ": no \"schema\": 1");
    check_byte_figures(j, "", command);
    std::set<std::string> keys;
    documented_keys(j, "", keys);
    for (const std::string& key : keys) {
      // sweep nests the other commands' figures: its own keys are documented by their last name;
      // a list of every built-in (hw, model, quant without a name) has the keys of one of them.
      std::string name = args[0] == "sweep" ? key.substr(key.find_last_of(".]") + 1) : key;
      for (const char* list : {"devices[].", "links[].", "models[].", "types[]."})
        if (name.starts_with(list)) name = name.substr(std::string_view(list).size());
      for (const char* list : {"frontier[].", "near_misses[]."})  // advise's lists of plans: ranked[]'s keys
        if (name.starts_with(list)) name = "ranked[]." + name.substr(std::string_view(list).size());
      if (args[0] == "sweep" && (key.find(".figures.") != std::string::npos || key.find(".axes.") != std::string::npos))
        continue;  // the figures and the plan fields a point sets are documented as objects
      CHECK_MESSAGE(doc.find("`" + name + "`") != std::string::npos,
                    command << ": key '" << name << "' is not in docs/json.md");
    }
  }
}
