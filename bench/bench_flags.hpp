// The benches' own flags beside Google Benchmark's, which refuses flags it does not know.
#pragma once
#include <cstring>
#include <string>

namespace infer_plan::bench {

// "--name=value" taken out of argv (argc shrinks), or `fallback` when absent.
inline std::string take_flag(int& argc, char** argv, const char* name, const char* fallback) {
  const std::string prefix = std::string("--") + name + "=";
  for (int i = 1; i < argc; ++i)
    if (std::strncmp(argv[i], prefix.c_str(), prefix.size()) == 0) {
      std::string value = argv[i] + prefix.size();
      for (int j = i; j + 1 < argc; ++j) argv[j] = argv[j + 1];
      --argc;
      return value;
    }
  return fallback;
}

}  // namespace infer_plan::bench
