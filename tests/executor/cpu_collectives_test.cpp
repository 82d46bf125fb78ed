// The CPU collectives move and add real data: check the buffers afterwards.
#include <gtest/gtest.h>

#include <functional>
#include <thread>
#include <vector>

#include "parasim/executor/cpu_collectives.hpp"

namespace parasim::executor {
namespace {

// Runs body(rank) on `n` threads (rank 0 on the caller).
void on_ranks(int n, const std::function<void(int)>& body) {
  std::vector<std::thread> threads;
  for (int r = 1; r < n; ++r) threads.emplace_back(body, r);
  body(0);
  for (auto& t : threads) t.join();
}

float value(int rank, std::size_t i) { return static_cast<float>((rank + 1) * 1000 + static_cast<int>(i % 997)); }

class Collectives : public ::testing::TestWithParam<int> {};

TEST_P(Collectives, AllReduceSumsEveryElementOnEveryRank) {
  const int n = GetParam();
  const std::size_t count = 10'007;  // not a multiple of n: uneven chunks
  std::vector<std::vector<float>> buf(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r)
    for (std::size_t i = 0; i < count; ++i) buf[static_cast<std::size_t>(r)].push_back(value(r, i));
  RingCommunicator comm(n);
  for (int rep = 0; rep < 3; ++rep) {  // repeated use of one communicator
    on_ranks(n, [&](int r) { comm.all_reduce(r, buf[static_cast<std::size_t>(r)].data(), count); });
  }
  // After three all-reduces every element is n^2 x the sum... check after the first instead:
  std::vector<std::vector<float>> fresh(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r)
    for (std::size_t i = 0; i < count; ++i) fresh[static_cast<std::size_t>(r)].push_back(value(r, i));
  on_ranks(n, [&](int r) { comm.all_reduce(r, fresh[static_cast<std::size_t>(r)].data(), count); });
  for (int r = 0; r < n; ++r)
    for (std::size_t i = 0; i < count; ++i) {
      float sum = 0;
      for (int q = 0; q < n; ++q) sum += value(q, i);
      ASSERT_FLOAT_EQ(fresh[static_cast<std::size_t>(r)][i], sum) << "rank " << r << " element " << i;
      float thrice = sum;
      for (int k = 1; k < 3; ++k) thrice *= static_cast<float>(n);
      ASSERT_FLOAT_EQ(buf[static_cast<std::size_t>(r)][i], thrice) << "rank " << r << " element " << i;
    }
}

TEST_P(Collectives, ReduceScatterLeavesChunkRSummedOnRankR) {
  const int n = GetParam();
  const std::size_t count = 4'099;
  std::vector<std::vector<float>> buf(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r)
    for (std::size_t i = 0; i < count; ++i) buf[static_cast<std::size_t>(r)].push_back(value(r, i));
  RingCommunicator comm(n);
  on_ranks(n, [&](int r) { comm.reduce_scatter(r, buf[static_cast<std::size_t>(r)].data(), count); });
  for (int r = 0; r < n; ++r) {
    const std::size_t off = RingCommunicator::chunk_offset(count, n, r);
    for (std::size_t i = off; i < off + RingCommunicator::chunk_size(count, n, r); ++i) {
      float sum = 0;
      for (int q = 0; q < n; ++q) sum += value(q, i);
      ASSERT_FLOAT_EQ(buf[static_cast<std::size_t>(r)][i], sum) << "rank " << r << " element " << i;
    }
  }
}

TEST_P(Collectives, AllGatherCollectsEveryRanksChunk) {
  const int n = GetParam();
  const std::size_t count = 3'001;
  std::vector<std::vector<float>> buf(static_cast<std::size_t>(n), std::vector<float>(count, -1.0f));
  for (int r = 0; r < n; ++r) {
    const std::size_t off = RingCommunicator::chunk_offset(count, n, r);
    for (std::size_t i = off; i < off + RingCommunicator::chunk_size(count, n, r); ++i)
      buf[static_cast<std::size_t>(r)][i] = value(r, i);
  }
  RingCommunicator comm(n);
  on_ranks(n, [&](int r) { comm.all_gather(r, buf[static_cast<std::size_t>(r)].data(), count); });
  for (int r = 0; r < n; ++r)
    for (int c = 0; c < n; ++c) {
      const std::size_t off = RingCommunicator::chunk_offset(count, n, c);
      for (std::size_t i = off; i < off + RingCommunicator::chunk_size(count, n, c); ++i)
        ASSERT_FLOAT_EQ(buf[static_cast<std::size_t>(r)][i], value(c, i)) << "rank " << r << " element " << i;
    }
}

TEST_P(Collectives, BroadcastCopiesRankZerosBuffer) {
  const int n = GetParam();
  const std::size_t count = 300'000;  // several pipeline chunks
  std::vector<std::vector<float>> buf(static_cast<std::size_t>(n), std::vector<float>(count, 0.0f));
  for (std::size_t i = 0; i < count; ++i) buf[0][i] = value(0, i);
  RingCommunicator comm(n);
  on_ranks(n, [&](int r) { comm.broadcast(r, buf[static_cast<std::size_t>(r)].data(), count); });
  for (int r = 1; r < n; ++r) EXPECT_EQ(buf[static_cast<std::size_t>(r)], buf[0]) << "rank " << r;
}

TEST_P(Collectives, AllToAllTransposesChunks) {
  const int n = GetParam();
  const std::size_t count = static_cast<std::size_t>(n) * 500;
  std::vector<std::vector<float>> send(static_cast<std::size_t>(n)),
      recv(static_cast<std::size_t>(n), std::vector<float>(count, 0));
  for (int r = 0; r < n; ++r)
    for (std::size_t i = 0; i < count; ++i) send[static_cast<std::size_t>(r)].push_back(value(r, i));
  RingCommunicator comm(n);
  on_ranks(n, [&](int r) {
    comm.all_to_all(r, send[static_cast<std::size_t>(r)].data(), recv[static_cast<std::size_t>(r)].data(), count);
  });
  const std::size_t chunk = count / static_cast<std::size_t>(n);
  for (int r = 0; r < n; ++r)
    for (int p = 0; p < n; ++p)
      for (std::size_t k = 0; k < chunk; ++k)
        ASSERT_FLOAT_EQ(recv[static_cast<std::size_t>(r)][static_cast<std::size_t>(p) * chunk + k],
                        send[static_cast<std::size_t>(p)][static_cast<std::size_t>(r) * chunk + k]);
}

INSTANTIATE_TEST_SUITE_P(Ranks, Collectives, ::testing::Values(1, 2, 3, 4));

TEST(RingCommunicator, ChunksCoverTheBufferExactly) {
  for (int n = 1; n <= 5; ++n) {
    std::size_t next = 0;
    for (int c = 0; c < n; ++c) {
      EXPECT_EQ(RingCommunicator::chunk_offset(103, n, c), next);
      next += RingCommunicator::chunk_size(103, n, c);
    }
    EXPECT_EQ(next, 103u);
  }
}

}  // namespace
}  // namespace parasim::executor
