// libFuzzer target for the GGUF reader: any byte string must either parse or raise an
// InputError naming the field and offset -- never crash, hang, or allocate from an unchecked
// count. The reader works on files, so each input is written to a private temporary file.
#include <cstdint>
#include <cstdio>
#include <string>
#include <unistd.h>

#include "planner/weights/gguf_reader.hpp"
#include "planner/core/input_error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = "/tmp/infer-plan-fuzz-" + std::to_string(getpid()) + ".gguf";
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return 0;
  std::fwrite(data, 1, size, f);
  std::fclose(f);
  try {
    const infer_plan::GgufModel model = infer_plan::read_gguf_file(path);
    (void)infer_plan::gguf_file_size_of(model);
    try {
      (void)infer_plan::model_spec_from_gguf(model);
    } catch (const infer_plan::InputError&) {
    }
  } catch (const infer_plan::InputError&) {
  }
  return 0;
}
