#include "parasim/strategies/strategy.hpp"

#include <functional>

#include <gtest/gtest.h>

#include "parasim/common/error.hpp"
#include "support/input_error.hpp"

namespace parasim::strategies {
namespace {

using test_support::input_error;

TEST(StrategyGrammar, DefaultsArePlainDataParallelism) {
  const Strategy s = parse_strategy("");
  EXPECT_EQ(s.dp, 1);
  EXPECT_EQ(s.mp, 1);
  EXPECT_EQ(s.tp, 1);
  EXPECT_EQ(s.schedule, Schedule::None);
  EXPECT_DOUBLE_EQ(s.bucket_mb, 25.0);
  EXPECT_TRUE(s.overlap);
  EXPECT_EQ(to_string(s), "dp=1");
}

TEST(StrategyGrammar, ParsesEveryKey) {
  const Strategy s = parse_strategy(
      "dp=4,mp=2,tp=2,schedule=interleaved,micro=8,interleave=2,placement=layers,recompute=selective,zero=1,"
      "bucket_mb=50,split=speed,overlap=off,mapping=mp-tp-dp");
  EXPECT_EQ(s.devices(), 16);
  EXPECT_EQ(s.schedule, Schedule::Interleaved);
  EXPECT_EQ(s.micro, 8);
  EXPECT_EQ(s.interleave, 2);
  EXPECT_EQ(s.recompute, Recompute::Selective);
  EXPECT_EQ(s.zero, 1);
  EXPECT_DOUBLE_EQ(s.bucket_mb, 50.0);
  EXPECT_EQ(s.split, BatchSplit::Speed);
  EXPECT_FALSE(s.overlap);
  EXPECT_EQ(s.mapping, "mp-tp-dp");
}

TEST(StrategyGrammar, CanonicalFormRoundTrips) {
  for (const char* text : {"dp=8", "dp=4,mp=2,schedule=1f1b,micro=8", "mp=4,placement=branches",
                           "dp=2,tp=4,recompute=full,zero=1", "dp=3,split=speed", "mp=2,schedule=spectrain,micro=4",
                           "dp=2,bucket_mb=12.5,overlap=off", "dp=2,tp=4,sp=on", "tp=2,recompute=selective,sp=off",
                           "dp=2,tp=2,tp_overlap=off", "mp=4,schedule=1f1b,recompute=full,recompute_layers=3"}) {
    const Strategy s = parse_strategy(text);
    EXPECT_EQ(to_string(s), text);
    EXPECT_EQ(parse_strategy(to_string(s)), s);
    EXPECT_EQ(strategy_from_json(strategy_to_json(s), "s.json"), s);
  }
}

TEST(StrategyGrammar, SequenceParallelPairsWithSelectiveUnlessStated) {
  EXPECT_FALSE(parse_strategy("tp=4").sequence_parallel());
  EXPECT_TRUE(parse_strategy("tp=4,recompute=selective").sequence_parallel());
  EXPECT_TRUE(parse_strategy("tp=4,sp=on").sequence_parallel());
  EXPECT_TRUE(parse_strategy("tp=4,recompute=full,sp=on").sequence_parallel());
  EXPECT_FALSE(parse_strategy("tp=4,recompute=selective,sp=off").sequence_parallel());
  EXPECT_FALSE(parse_strategy("dp=4,recompute=selective").sequence_parallel());  // no TP, nothing to split
  // The JSON form carries sp only when it is set, so existing files keep their bytes.
  EXPECT_FALSE(strategy_to_json(parse_strategy("tp=4")).contains("sp"));
  EXPECT_EQ(strategy_to_json(parse_strategy("tp=4,sp=off"))["sp"], "off");
}

TEST(StrategyGrammar, PlacementFileIsKept) {
  const Strategy s = parse_strategy("mp=2,placement=my_map.json");
  EXPECT_EQ(s.placement, Placement::File);
  EXPECT_EQ(s.placement_file, "my_map.json");
  EXPECT_EQ(to_string(s), "mp=2,placement=my_map.json");
}

TEST(StrategyGrammar, GrammarEndingInJsonIsNotAFile) {
  const Strategy s = load_strategy("mp=2,placement=my_map.json");
  EXPECT_EQ(s.placement, Placement::File);
  EXPECT_EQ(s.placement_file, "my_map.json");
  EXPECT_EQ(input_error([] { load_strategy("/nonexistent/strategy.json"); }),
            "/nonexistent/strategy.json: no such file");
}

TEST(StrategyGrammar, BadInputIsNamed) {
  EXPECT_EQ(input_error([] { parse_strategy("schedule=foo"); }),
            "--strategy: schedule=foo: expected one of none, gpipe, 1f1b, interleaved, pipedream, spectrain");
  EXPECT_EQ(input_error([] { parse_strategy("dp=0"); }), "--strategy: dp=0: expected an integer in [1, 1048576]");
  EXPECT_EQ(input_error([] { parse_strategy("dp=two"); }), "--strategy: dp=two: expected an integer in [1, 1048576]");
  EXPECT_EQ(input_error([] { parse_strategy("dp=4,dp=2"); }), "--strategy: key \"dp\" given twice");
  EXPECT_EQ(input_error([] { parse_strategy("dp4"); }),
            "--strategy: \"dp4\": expected key=value (e.g. dp=4,mp=2,schedule=1f1b)");
  EXPECT_EQ(input_error([] { parse_strategy("foo=1"); }),
            "--strategy: unknown key \"foo\"; expected dp, mp, tp, cp, ep, etp, imbalance, schedule, micro, "
            "interleave, placement, recompute, recompute_layers, sp, zero, bucket_mb, split, overlap, tp_overlap, "
            "ep_overlap or mapping");
  EXPECT_EQ(input_error([] { parse_strategy("mp=2,interleave=2"); }),
            "--strategy: interleave=2 needs schedule=interleaved");
  EXPECT_EQ(input_error([] { parse_strategy("recompute=selective,recompute_layers=2"); }),
            "--strategy: recompute_layers=2 needs recompute=full (it recomputes the first N transformer layers of "
            "each pipeline chunk in full)");
  EXPECT_EQ(input_error([] { parse_strategy("recompute=full,recompute_layers=0"); }),
            "--strategy: recompute_layers=0: expected an integer in [1, 1024]");
  EXPECT_EQ(input_error([] { parse_strategy("dp=1024,mp=1024,tp=2"); }),
            "--strategy: dp*mp*tp*cp = 2097152 devices; at most 1048576 are supported");
  EXPECT_EQ(input_error([] { parse_strategy("bucket_mb=nan"); }),
            "--strategy: bucket_mb=nan: expected a positive number of megabytes (at most 1e6)");
  EXPECT_EQ(input_error([] { parse_strategy("zero=4"); }), "--strategy: zero=4: expected an integer in [0, 3]");
  EXPECT_EQ(parse_strategy("dp=2,micro=2,zero=2").micro, 2);  // ZeRO-2 with gradient accumulation
  EXPECT_EQ(parse_strategy("dp=4,zero=2").zero, 2);
  EXPECT_EQ(input_error([] { parse_strategy("dp=2,sp=on"); }),
            "--strategy: sp=on needs tp > 1 (sequence parallelism splits the tensor-parallel blocks' norms, dropouts "
            "and residual adds across the TP ranks)");
  EXPECT_EQ(input_error([] { parse_strategy("tp=2,sp=yes"); }), "--strategy: sp=yes: expected one of auto, on, off");
  EXPECT_EQ(input_error([] { parse_strategy("dp=2,tp_overlap=off"); }),
            "--strategy: tp_overlap=off needs tp > 1 (it orders the tensor-parallel all-reduces)");
  EXPECT_EQ(
      input_error([] { parse_strategy("mapping=dp-dp-dp"); }),
      "--strategy: mapping=dp-dp-dp: expected an order of tp, mp and dp from innermost to outermost, e.g. tp-mp-dp");
}

// Found by fuzzing (tests/fuzz/regressions/strategy_json/placement_comma.json): a JSON placement
// name with a comma was written as grammar text that could not be read back.
TEST(StrategyJson, PlacementNamesWithACommaAreRefusedAtLoad) {
  const nlohmann::json j = {{"schema", "parasim.strategy/1"}, {"dp", 4}, {"mp", 2}, {"schedule", "1f1b"},
                            {"placement", "22222,22222222222222222layep"}};
  EXPECT_EQ(input_error([&] { strategy_from_json(j, "s.json"); }),
            "s.json: $.placement: placement=22222,22222222222222222layep: a placement file name cannot hold a comma "
            "(the strategy grammar separates key=value pairs with commas); rename the file");
  // Names without a comma still round-trip through the grammar.
  const Strategy ok =
      strategy_from_json({{"schema", "parasim.strategy/1"}, {"mp", 2}, {"placement", "a=b;c.json"}}, "s.json");
  EXPECT_EQ(parse_strategy(to_string(ok)), ok);
}

TEST(StrategyJson, ErrorsNameFileAndPath) {
  EXPECT_EQ(input_error([] {
              strategy_from_json(nlohmann::json{{"schema", "parasim.strategy/1"}, {"dp", -2}}, "s.json");
            }),
            "s.json: $.dp: dp=-2: expected an integer in [1, 1048576]");
  EXPECT_EQ(input_error([] {
              strategy_from_json(nlohmann::json{{"schema", "parasim.strategy/1"}, {"dpp", 2}}, "s.json");
            }),
            "s.json: $.dpp: unknown strategy field");
  EXPECT_EQ(input_error([] {
              strategy_from_json(nlohmann::json{{"dp", 2}}, "s.json");
            }),
            "s.json: $.schema: missing; expected \"parasim.strategy/1\"");
}

}  // namespace
}  // namespace parasim::strategies
