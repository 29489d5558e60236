// infer-plan: answers capacity and latency questions about LLM inference in milliseconds.
#include "apps/cli_main.hpp"

int main(int argc, char** argv) {
  return infer_plan::apps::cli_main(argc, argv, infer_plan::apps::add_runtime_commands);
}
