#include "parasim/common/units.hpp"

#include <gtest/gtest.h>

namespace parasim {
namespace {

TEST(Units, OneGBpsMovesOneBytePerNanosecond) {
  EXPECT_EQ(serialization_time(1'000'000, GBps{1.0}), 1'000'000);
  EXPECT_EQ(serialization_time(25 * MB, GBps{25.0}), 1'000'000);
}

TEST(Units, TransferTimeIsAlphaPlusBytesOverBeta) {
  // 5 us latency + 64 MiB at 25 GB/s = 5000 + 67108864/25 = 5000 + 2684354.56 -> 2689355 ns
  EXPECT_EQ(transfer_time(5'000, 64 * MiB, GBps{25.0}), 2'689'355);
  EXPECT_EQ(transfer_time(5'000, 0, GBps{25.0}), 5'000);
}

TEST(Units, BandwidthOfInvertsSerializationTime) {
  EXPECT_DOUBLE_EQ(bandwidth_of(300 * MB, 1'000'000).value, 300.0);
  EXPECT_DOUBLE_EQ(bandwidth_of(1, 0).value, 0.0);
}

TEST(Units, Conversions) {
  EXPECT_EQ(ms_to_ns(1.5), 1'500'000);
  EXPECT_EQ(us_to_ns(2.25), 2'250);
  EXPECT_EQ(s_to_ns(0.001), 1'000'000);
  EXPECT_DOUBLE_EQ(ns_to_ms(2'500'000), 2.5);
}

TEST(Units, Formatting) {
  EXPECT_EQ(format_time(812), "812 ns");
  EXPECT_EQ(format_time(12'400), "12.40 us");
  EXPECT_EQ(format_time(3'215'000), "3.215 ms");
  EXPECT_EQ(format_time(4'200'000'000), "4.20 s");
  EXPECT_EQ(format_time(119 * kNsPerS), "119.00 s");
  EXPECT_EQ(format_time(2895'080'000'000), "48.3 min");
  EXPECT_EQ(format_time(2 * 3600 * kNsPerS), "2.00 h");
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_bytes(25 * MiB), "25.00 MiB");
  EXPECT_EQ(format_bytes(16 * GiB), "16.00 GiB");
  EXPECT_EQ(format_count(25'557'032), "25.56 M");
}

}  // namespace
}  // namespace parasim
