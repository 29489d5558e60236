// planner/core/json_fields: inputs that would crash or hang anything reading them are refused
// with the file named (issue 15, classes 1 and 4).
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "planner/core/input_error.hpp"
#include "planner/core/json_fields.hpp"
#include "planner/weights/gguf_reader.hpp"

using namespace infer_plan;

TEST_CASE("JSON nested past 64 levels is refused at parsing, whatever the shape") {
  const auto nested = [](int levels, char open, char close) {
    return std::string(static_cast<size_t>(levels), open) + std::string(static_cast<size_t>(levels), close);
  };
  // 63 levels inside a field's object: 64 in all, the most accepted.
  CHECK_NOTHROW(parse_json_text("{\"a\": " + nested(63, '[', ']') + "}", "ok.json"));
  CHECK_THROWS_WITH_AS(parse_json_text("{\"a\": " + nested(64, '[', ']') + "}", "deep.json"),
                       doctest::Contains("deep.json: JSON nested deeper than 64 levels"), InputError);
  // 100k levels (what crashed `fit --plan` when the error printed the value) end the same way.
  CHECK_THROWS_WITH_AS(parse_json_text("{\"context\": " + nested(100000, '[', ']') + "}", "deep.json"),
                       doctest::Contains("nested deeper than 64"), InputError);
  std::string objects;
  for (int i = 0; i < 100000; ++i) objects += "{\"a\":";
  objects += "1" + std::string(100000, '}');
  CHECK_THROWS_WITH_AS(parse_json_text(objects, "objects.json"), doctest::Contains("nested deeper than 64"), InputError);
}

TEST_CASE("non-regular files are refused before opening: a FIFO with no writer, a device, a directory") {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "infer_plan_test_json_fields";
  std::filesystem::create_directories(dir);
  const std::string fifo = (dir / "fifo").string();
  std::filesystem::remove(fifo);
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  // Each would block forever (the FIFO) or read until memory runs out (/dev/zero).
  CHECK_THROWS_WITH_AS(read_json_file(fifo), doctest::Contains("not a regular file; expected a JSON or text file"),
                       InputError);
  CHECK_THROWS_WITH_AS(read_gguf_file(fifo), doctest::Contains("not a regular file; expected a .gguf file"), InputError);
  CHECK_THROWS_WITH_AS(read_gguf_file("/dev/zero"), doctest::Contains("/dev/zero: not a regular file"), InputError);
  CHECK_THROWS_WITH_AS(read_text_file(dir.string()), doctest::Contains("not a regular file"), InputError);
  std::filesystem::remove_all(dir);
}
