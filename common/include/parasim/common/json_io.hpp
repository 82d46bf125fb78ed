// Reading and writing parasim's JSON files with errors a user can act on.
//
// Every loader goes through JsonField so that a bad value produces
//   "model.json: $.ops[3].attrs.stride: expected a positive integer, found -1"
// and every writer goes through write_file_atomic so a failed run never leaves half a file.
//
// Example:
//   nlohmann::json doc = read_json_file(path);                 // InputError on parse failure
//   JsonField root{doc, path.string(), "$"};
//   root.expect_schema("parasim.model/1");
//   for (auto op : root.at("ops").items_of_array()) {
//     std::string name = op.at("name").as_string();
//     std::int64_t c = op.at("out_channels").as_int(1, 1 << 20);
//   }
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace parasim {

/// Limits that keep hostile input from exhausting the machine.
inline constexpr std::uintmax_t kMaxInputFileBytes = 512ull * 1024 * 1024;
inline constexpr int kMaxJsonDepth = 64;

/// Reads and parses a JSON file. Throws InputError naming the file (and line/column on a parse
/// error, or the depth/size limit that was exceeded).
nlohmann::json read_json_file(const std::filesystem::path& path);
/// Parses JSON text; `origin` names where it came from in error messages.
nlohmann::json parse_json_text(std::string_view text, const std::string& origin);
/// Reads a whole text file; InputError if it cannot be opened or is larger than the limit.
std::string read_text_file(const std::filesystem::path& path);

/// Writes `content` to a temporary file beside `path` and renames it into place.
/// Creates parent directories. Throws RuntimeError on failure and removes the temporary file;
/// Interrupted (interrupt.hpp), leaving nothing behind, once Ctrl-C was pressed.
void write_file_atomic(const std::filesystem::path& path, std::string_view content);
/// Canonical serialization: 2-space indent, trailing newline. Same value -> same bytes.
std::string dump_json(const nlohmann::json& j);

/// A view of one JSON value with the file name and JSON path it came from.
class JsonField {
 public:
  JsonField(const nlohmann::json& value, std::string file, std::string path)
      : value_(&value), file_(std::move(file)), path_(std::move(path)) {}

  const nlohmann::json& raw() const { return *value_; }
  const std::string& file() const { return file_; }
  const std::string& path() const { return path_; }

  bool has(const std::string& key) const;
  JsonField at(const std::string& key) const;   // InputError if missing or not an object
  JsonField at(std::size_t index) const;        // InputError if out of range
  std::optional<JsonField> find(const std::string& key) const;
  std::vector<JsonField> items_of_array() const;  // InputError if not an array

  std::string as_string() const;
  bool as_bool() const;
  std::int64_t as_int(std::int64_t min = INT64_MIN, std::int64_t max = INT64_MAX) const;
  double as_double(double min = -1e300, double max = 1e300) const;  // rejects NaN/Inf
  std::size_t array_size() const;
  bool is_array() const { return value_->is_array(); }
  bool is_object() const { return value_->is_object(); }

  /// Checks `"schema"` equals `expected` ("parasim.model/1").
  void expect_schema(const std::string& expected) const;
  /// Throws InputError "<file>: <path>: expected <expected>, found <what is there>".
  [[noreturn]] void fail(const std::string& expected) const;

 private:
  const nlohmann::json* value_;
  std::string file_;
  std::string path_;
};

/// Short description of a JSON value for error messages ("string \"abc\"", "number -1", "null").
std::string describe_json(const nlohmann::json& j);

}  // namespace parasim
