#include "parasim/common/json_io.hpp"

#include <cmath>
#include <fstream>
#include <random>
#include <sstream>
#include <system_error>
#include <unistd.h>

#include "parasim/common/error.hpp"
#include "parasim/common/interrupt.hpp"

namespace parasim {

namespace fs = std::filesystem;

std::string read_text_file(const fs::path& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) throw InputError(path.string() + ": no such file");
  if (fs::is_directory(path, ec)) throw InputError(path.string() + ": is a directory, expected a file");
  const auto size = fs::file_size(path, ec);
  if (!ec && size > kMaxInputFileBytes)
    throw InputError(path.string() + ": file is " + std::to_string(size) + " bytes, larger than the " +
                     std::to_string(kMaxInputFileBytes) + "-byte limit for inputs");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path.string() + ": cannot open for reading");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

nlohmann::json parse_json_text(std::string_view text, const std::string& origin) {
  // Depth limit enforced by the SAX-style callback: hostile input cannot blow the stack.
  int depth = 0;
  bool too_deep = false;
  auto cb = [&](int d, nlohmann::json::parse_event_t ev, nlohmann::json&) {
    if (ev == nlohmann::json::parse_event_t::object_start || ev == nlohmann::json::parse_event_t::array_start) {
      depth = d + 1;
      if (depth > kMaxJsonDepth) too_deep = true;
    }
    return !too_deep;
  };
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text.begin(), text.end(), cb, /*allow_exceptions=*/true, /*ignore_comments=*/false);
  } catch (const nlohmann::json::parse_error& e) {
    if (too_deep) throw InputError(origin + ": JSON nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
    // nlohmann reports the byte offset; turn it into line:column for humans.
    std::size_t line = 1, col = 1;
    const std::size_t upto = std::min<std::size_t>(e.byte, text.size());
    for (std::size_t i = 0; i + 1 < upto; ++i) {
      if (text[i] == '\n') { ++line; col = 1; } else { ++col; }
    }
    std::string what = e.what();
    const auto pos = what.find("parse error");
    throw InputError(origin + ":" + std::to_string(line) + ":" + std::to_string(col) + ": malformed JSON (" +
                     (pos == std::string::npos ? what : what.substr(pos)) + ")");
  } catch (const nlohmann::json::out_of_range& e) {
    // A number literal beyond double range (1e999): nlohmann refuses it with out_of_range 406,
    // which names the literal but not where it is, so find it for the line:column.
    const std::string what = e.what();
    const auto open = what.find('\''), close = what.rfind('\'');
    const std::string literal = open < close ? what.substr(open + 1, close - open - 1) : std::string();
    const std::size_t at = literal.empty() ? std::string_view::npos : text.find(literal);
    std::string where = origin;
    if (at != std::string_view::npos) {
      std::size_t line = 1, col = 1;
      for (std::size_t i = 0; i < at; ++i) {
        if (text[i] == '\n') { ++line; col = 1; } else { ++col; }
      }
      where += ":" + std::to_string(line) + ":" + std::to_string(col);
    }
    throw InputError(where + ": number " + (literal.empty() ? std::string("literal") : literal) +
                     " is out of range; expected a finite number (at most about 1.8e308 in magnitude)");
  }
  if (too_deep) throw InputError(origin + ": JSON nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
  return j;
}

nlohmann::json read_json_file(const fs::path& path) { return parse_json_text(read_text_file(path), path.string()); }

void write_file_atomic(const fs::path& path, std::string_view content) {
  throw_if_interrupted();
  std::error_code ec;
  if (path.has_parent_path()) fs::create_directories(path.parent_path(), ec);
  if (ec)
    throw RuntimeError(path.string() + ": cannot create directory " + path.parent_path().string() + ": " +
                       ec.message());
  fs::path tmp = path;
  tmp += ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw RuntimeError(path.string() + ": cannot open " + tmp.string() + " for writing");
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
    out.flush();
    if (!out) {
      out.close();
      fs::remove(tmp, ec);
      throw RuntimeError(path.string() + ": write failed (disk full?)");
    }
  }
  if (interrupted()) {  // Ctrl-C while writing: the file never appears
    fs::remove(tmp, ec);
    throw Interrupted();
  }
  fs::rename(tmp, path, ec);
  if (ec) {
    std::error_code ignore;
    fs::remove(tmp, ignore);
    throw RuntimeError(path.string() + ": cannot rename temporary file into place: " + ec.message());
  }
}

std::string dump_json(const nlohmann::json& j) { return j.dump(2) + "\n"; }

std::string describe_json(const nlohmann::json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::null: return "null";
    case nlohmann::json::value_t::boolean: return std::string("boolean ") + (j.get<bool>() ? "true" : "false");
    case nlohmann::json::value_t::string: {
      std::string s = j.get<std::string>();
      if (s.size() > 40) s = s.substr(0, 40) + "...";
      return "string \"" + s + "\"";
    }
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned:
    case nlohmann::json::value_t::number_float: return "number " + j.dump();
    case nlohmann::json::value_t::object: return "an object";
    case nlohmann::json::value_t::array: return "an array";
    default: return "an unsupported value";
  }
}

void JsonField::fail(const std::string& expected) const {
  throw InputError(file_ + ": " + path_ + ": expected " + expected + ", found " + describe_json(*value_));
}

bool JsonField::has(const std::string& key) const { return value_->is_object() && value_->contains(key); }

JsonField JsonField::at(const std::string& key) const {
  if (!value_->is_object()) fail("an object with field \"" + key + "\"");
  auto it = value_->find(key);
  if (it == value_->end()) throw InputError(file_ + ": " + path_ + ": missing required field \"" + key + "\"");
  return JsonField(*it, file_, path_ + "." + key);
}

std::optional<JsonField> JsonField::find(const std::string& key) const {
  if (!value_->is_object()) fail("an object");
  auto it = value_->find(key);
  if (it == value_->end()) return std::nullopt;
  return JsonField(*it, file_, path_ + "." + key);
}

JsonField JsonField::at(std::size_t index) const {
  if (!value_->is_array()) fail("an array");
  if (index >= value_->size())
    throw InputError(file_ + ": " + path_ + ": index " + std::to_string(index) + " out of range (array has " +
                     std::to_string(value_->size()) + " elements)");
  return JsonField((*value_)[index], file_, path_ + "[" + std::to_string(index) + "]");
}

std::vector<JsonField> JsonField::items_of_array() const {
  if (!value_->is_array()) fail("an array");
  std::vector<JsonField> out;
  out.reserve(value_->size());
  for (std::size_t i = 0; i < value_->size(); ++i)
    out.emplace_back((*value_)[i], file_, path_ + "[" + std::to_string(i) + "]");
  return out;
}

std::size_t JsonField::array_size() const {
  if (!value_->is_array()) fail("an array");
  return value_->size();
}

std::string JsonField::as_string() const {
  if (!value_->is_string()) fail("a string");
  return value_->get<std::string>();
}

bool JsonField::as_bool() const {
  if (!value_->is_boolean()) fail("true or false");
  return value_->get<bool>();
}

std::int64_t JsonField::as_int(std::int64_t min, std::int64_t max) const {
  std::int64_t v = 0;
  if (value_->is_number_integer()) {
    v = value_->get<std::int64_t>();
  } else if (value_->is_number_unsigned()) {
    const auto u = value_->get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(INT64_MAX)) fail("an integer that fits in 64 bits");
    v = static_cast<std::int64_t>(u);
  } else if (value_->is_number_float()) {
    const double d = value_->get<double>();
    if (!std::isfinite(d) || d != std::floor(d) || std::abs(d) > 9.0e18) fail("an integer");
    v = static_cast<std::int64_t>(d);
  } else {
    fail("an integer");
  }
  if (v < min || v > max) {
    std::string range = "an integer";
    if (min != INT64_MIN && max != INT64_MAX) range += " in [" + std::to_string(min) + ", " + std::to_string(max) + "]";
    else if (min != INT64_MIN) range += " >= " + std::to_string(min);
    else range += " <= " + std::to_string(max);
    fail(range);
  }
  return v;
}

double JsonField::as_double(double min, double max) const {
  if (!value_->is_number()) fail("a number");
  const double v = value_->get<double>();
  if (!std::isfinite(v)) fail("a finite number");
  if (v < min || v > max) {
    std::ostringstream ss;
    ss << "a number in [" << min << ", " << max << "]";
    fail(ss.str());
  }
  return v;
}

void JsonField::expect_schema(const std::string& expected) const {
  if (!value_->is_object()) fail("a JSON object with \"schema\": \"" + expected + "\"");
  auto it = value_->find("schema");
  if (it == value_->end())
    throw InputError(file_ + ": " + path_ + ".schema: missing; expected \"" + expected + "\"");
  if (!it->is_string() || it->get<std::string>() != expected)
    throw InputError(file_ + ": " + path_ + ".schema: expected \"" + expected + "\", found " + describe_json(*it));
}

}  // namespace parasim
