// Reading JSON inputs (model specs, hardware profiles, plans) with errors a user can act on:
// every message names the file, the field and what was expected.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

namespace infer_plan {

using Json = nlohmann::json;

// Parses `text`; `origin` names it in errors ("hwprofiles/h200.json"), which give line and column.
Json parse_json_text(std::string_view text, std::string_view origin);
// A whole file as text; a missing or unreadable file is an InputError.
std::string read_text_file(const std::string& path);
// Refuses a path that exists but is not a regular file (a FIFO, a device, a directory), naming
// what was `expected`; call it before opening any input.
void require_regular_file(const std::string& path, std::string_view expected);
// Reads and parses a file; a missing or unreadable file is an InputError.
Json read_json_file(const std::string& path);

// Field readers: `where` is the file (or "plan") for the message. Integers must be integral and
// non-negative; "missing" and "wrong type" errors say what was expected.
uint64_t require_uint(const Json& obj, std::string_view key, std::string_view where);
std::optional<uint64_t> optional_uint(const Json& obj, std::string_view key, std::string_view where);
std::string require_string(const Json& obj, std::string_view key, std::string_view where);
std::optional<std::string> optional_string(const Json& obj, std::string_view key,
                                           std::string_view where);
std::optional<bool> optional_bool(const Json& obj, std::string_view key, std::string_view where);
std::optional<double> optional_number(const Json& obj, std::string_view key, std::string_view where);
const Json& require_object(const Json& obj, std::string_view key, std::string_view where);
// Refuses a key of `obj` not in `keys` (keys starting with '_' are comments), naming it and
// listing the expected ones.
void check_known_fields(const Json& obj, std::initializer_list<std::string_view> keys, std::string_view where);

}  // namespace infer_plan
