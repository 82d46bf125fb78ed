#include "parasim/common/json_io.hpp"

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "parasim/common/error.hpp"
#include "support/input_error.hpp"

namespace parasim {
namespace {

namespace fs = std::filesystem;

using test_support::input_error;

TEST(JsonIo, MalformedJsonNamesFileLineAndColumn) {
  const std::string msg = input_error([] { parse_json_text("{\n  \"a\": 1,\n  \"b\": }", "m.json"); });
  EXPECT_NE(msg.find("m.json:3:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("malformed JSON"), std::string::npos) << msg;
}

TEST(JsonIo, DeepNestingIsRejectedNotRecursedInto) {
  std::string deep(10'000, '[');
  deep += std::string(10'000, ']');
  const std::string msg = input_error([&] { parse_json_text(deep, "deep.json"); });
  EXPECT_NE(msg.find("nested deeper than 64"), std::string::npos) << msg;
}

TEST(JsonIo, FieldErrorsNameThePathAndWhatWasExpected) {
  const auto doc = parse_json_text(R"({"schema":"parasim.model/1","ops":[{"name":"c","stride":-1}]})", "m.json");
  JsonField root{doc, "m.json", "$"};
  root.expect_schema("parasim.model/1");
  auto op = root.at("ops").at(std::size_t{0});
  EXPECT_EQ(op.at("name").as_string(), "c");
  EXPECT_EQ(input_error([&] { op.at("stride").as_int(1, 64); }),
            "m.json: $.ops[0].stride: expected an integer in [1, 64], found number -1");
  EXPECT_EQ(input_error([&] { op.at("kind"); }), "m.json: $.ops[0]: missing required field \"kind\"");
  EXPECT_EQ(input_error([&] { op.at("name").as_int(); }),
            "m.json: $.ops[0].name: expected an integer, found string \"c\"");
  EXPECT_EQ(input_error([&] { root.expect_schema("parasim.cluster/1"); }),
            "m.json: $.schema: expected \"parasim.cluster/1\", found string \"parasim.model/1\"");
}

TEST(JsonIo, IntegersMustBeIntegral) {
  const auto doc = parse_json_text(R"({"a": 2.5, "b": 3.0, "c": 1e300})", "x.json");
  JsonField root{doc, "x.json", "$"};
  EXPECT_EQ(input_error([&] { root.at("a").as_int(); }), "x.json: $.a: expected an integer, found number 2.5");
  EXPECT_EQ(root.at("b").as_int(), 3);
  EXPECT_NE(input_error([&] { root.at("c").as_int(); }).find("expected an integer"), std::string::npos);
}

TEST(JsonIo, MissingFileIsInputError) {
  EXPECT_EQ(input_error([] { read_json_file("/nonexistent/parasim.json"); }),
            "/nonexistent/parasim.json: no such file");
}

TEST(JsonIo, AtomicWriteReplacesWholeFileAndLeavesNoTemp) {
  const fs::path dir = fs::temp_directory_path() / "parasim_json_io_test";
  fs::remove_all(dir);
  const fs::path p = dir / "sub" / "out.json";
  write_file_atomic(p, "first\n");
  write_file_atomic(p, dump_json(nlohmann::json{{"k", 1}}));
  std::ifstream in(p);
  std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(content, "{\n  \"k\": 1\n}\n");
  int files = 0;
  for (const auto& e : fs::directory_iterator(p.parent_path())) { (void)e; ++files; }
  EXPECT_EQ(files, 1);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace parasim
