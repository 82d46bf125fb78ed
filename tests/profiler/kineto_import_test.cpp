#include "parasim/profiler/kineto_import.hpp"

#include <fstream>

#include <gtest/gtest.h>

#include "parasim/common/error.hpp"
#include "parasim/common/json_io.hpp"
#include "profile_fixtures.hpp"

namespace parasim::profiler {
namespace {

using testing_fixtures::stats;
using testing_fixtures::temp_file;

const std::string kTrace = std::string(PARASIM_TEST_DATA_DIR) + "/kineto/small_training_step.json";

const ProfileEntry& entry(const Profile& p, const std::string& name) {
  for (const auto& e : p.ops)
    if (e.names.front() == name) return e;
  throw std::runtime_error("no entry " + name);
}

TEST(KinetoImport, GroupsGpuTimeByTopLevelCpuOp) {
  const Profile p = import_kineto_trace(kTrace, KinetoImportOptions{"tiny_cnn", 8, models::DType::F32, "import"});
  EXPECT_EQ(p.backend, "kineto");
  EXPECT_EQ(p.source, CostSource::Imported);
  EXPECT_EQ(p.model, "tiny_cnn");
  EXPECT_EQ(p.device.name, "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(p.device.kind, "A100-SXM4-80GB");
  EXPECT_EQ(p.device.compute_capability, "8.0");

  ASSERT_EQ(p.ops.size(), 7u);
  std::vector<std::string> order;
  for (const auto& e : p.ops) order.push_back(e.names.front());
  EXPECT_EQ(order, (std::vector<std::string>{"aten::copy_", "aten::conv2d", "aten::relu_", "aten::linear",
                                             "autograd::engine::evaluate_function: ConvolutionBackward0",
                                             "aten::_foreach_add_", "(GPU work without a CPU op)"}));

  // Two conv2d instances: 25.5 + 3.5 us (the bias kernel found through its runtime launch
  // nested in aten::add_) and 20 + 3 us (both through External id).
  const ProfileEntry& conv = entry(p, "aten::conv2d");
  EXPECT_EQ(conv.signature, "kineto:aten::conv2d [[8,3,32,32],[16,3,3,3],[16],[],[],[],[]]");
  ASSERT_TRUE(conv.has(Phase::Forward));
  EXPECT_EQ(conv.phase(Phase::Forward), stats(23'000, 26'000, 29'000, 2, 2));

  EXPECT_EQ(entry(p, "aten::copy_").phase(Phase::Forward), stats(5'000, 5'000, 5'000, 1, 1));  // gpu_memcpy
  EXPECT_EQ(entry(p, "aten::relu_").phase(Phase::Forward), stats(4'250, 4'250, 4'250, 1, 1));
  EXPECT_EQ(entry(p, "aten::linear").phase(Phase::Forward), stats(12'000, 12'000, 12'000, 1, 1));

  // wgrad via External id, dgrad via the ac2g flow (no runtime event in the trace).
  const ProfileEntry& bwd = entry(p, "autograd::engine::evaluate_function: ConvolutionBackward0");
  EXPECT_FALSE(bwd.has(Phase::Forward));
  EXPECT_EQ(bwd.phase(Phase::BackwardData), stats(58'000, 58'000, 58'000, 2, 1));

  EXPECT_EQ(entry(p, "aten::_foreach_add_").phase(Phase::Update), stats(7'500, 7'500, 7'500, 1, 1));
  EXPECT_EQ(entry(p, "(GPU work without a CPU op)").phase(Phase::Forward), stats(1'000, 1'000, 1'000, 1, 1));
}

TEST(KinetoImport, ImportedProfileSavesAndLoads) {
  const Profile p = import_kineto_trace(kTrace);
  const auto path = temp_file("imported.json");
  save_profile(p, path);
  EXPECT_EQ(load_profile(path), p);
}

TEST(KinetoImport, TruncatedTraceNamesFileAndPosition) {
  const std::string text = read_text_file(kTrace);
  const auto path = temp_file("truncated_trace.json");
  std::ofstream(path) << text.substr(0, 1500);
  try {
    import_kineto_trace(path);
    FAIL();
  } catch (const InputError& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind(path.string() + ":", 0), 0u) << msg;
    EXPECT_NE(msg.find("malformed JSON"), std::string::npos) << msg;
  }
}

TEST(KinetoImport, MalformedEventsNameTheirJsonPath) {
  auto error = [](const nlohmann::json& j) {
    try {
      import_kineto_json(j, "t.json");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_EQ(error(nlohmann::json::object()), "t.json: $: missing required field \"traceEvents\"");
  nlohmann::json j = {{"traceEvents", nlohmann::json::array({{{"ph", "X"}, {"cat", "kernel"}, {"name", "k"}, {"pid", 0},
                                                              {"tid", 7}, {"ts", 10.0}, {"dur", -1.0}}})}};
  EXPECT_EQ(error(j),
            "t.json: $.traceEvents[0].dur: expected a non-negative duration in microseconds, found number -1.0");
  j["traceEvents"][0]["dur"] = 1.0;
  j["traceEvents"][0].erase("ts");
  EXPECT_EQ(error(j), "t.json: $.traceEvents[0]: missing required field \"ts\"");
  j = {{"traceEvents", nlohmann::json::array({42})}};
  EXPECT_EQ(error(j), "t.json: $.traceEvents[0]: expected a trace event object, found number 42");
}

}  // namespace
}  // namespace parasim::profiler
