// Pieces of the GPU code paths that decide things without a GPU: the attention kernel's chunking
// of its score buffers and the NCCL group guard. Built and run on every machine.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "parasim/common/error.hpp"
#include "parasim/kernels/attention_chunks.hpp"
#include "parasim/kernels/cuda_check.hpp"

namespace parasim::kernels {
namespace {

TEST(AttentionChunks, TheIssuesGpt3LayerNoLongerNeedsGigabyteBuffers) {
  // B=8, H=96, T=2048, fp16: one (batch, head) score matrix is 2048 * 2048 * 2 B = 8 MiB; whole,
  // each of the four buffers would be 768 * 8 MiB = 6 GiB (6.4 GB).
  const AttentionChunks c = plan_attention_chunks(8 * 96, 2048 * 2048 * 2, 4, kAttentionScoreBudget);
  EXPECT_EQ(c.units_per_chunk, 16);  // 16 x 8 MiB x 4 buffers = 512 MiB
  EXPECT_EQ(c.chunks, 48);
  EXPECT_FALSE(c.whole());
  EXPECT_LE(c.units_per_chunk * 2048 * 2048 * 2 * 4, kAttentionScoreBudget);
}

TEST(AttentionChunks, SmallAttentionStaysWholeAndHugeMatricesGoOneByOne) {
  // tiny_transformer-sized: 2 x 4 heads of 16 x 16 fp32.
  AttentionChunks c = plan_attention_chunks(8, 16 * 16 * 4, 4, kAttentionScoreBudget);
  EXPECT_EQ(c.units_per_chunk, 8);
  EXPECT_EQ(c.chunks, 1);
  EXPECT_TRUE(c.whole());
  // One matrix above the budget: still computed, one per chunk.
  c = plan_attention_chunks(3, 300 * MiB, 4, 512 * MiB);
  EXPECT_EQ(c.units_per_chunk, 1);
  EXPECT_EQ(c.chunks, 3);
  // Uneven split: 10 units, 3 fit -> 4 chunks (3, 3, 3, 1).
  c = plan_attention_chunks(10, 10, 1, 30);
  EXPECT_EQ(c.units_per_chunk, 3);
  EXPECT_EQ(c.chunks, 4);
  EXPECT_THROW(plan_attention_chunks(0, 10, 4, 100), InputError);
  EXPECT_THROW(plan_attention_chunks(4, 10, 0, 100), InputError);
}

TEST(NcclGroupGuard, ClosesOnceOnTheNormalPath) {
  int ends = 0, fails = 0;
  {
    NcclGroupGuard g([&] { ++ends; }, [&] { ++fails; });
    g.close();
  }
  EXPECT_EQ(ends, 1);
  EXPECT_EQ(fails, 0);
}

TEST(NcclGroupGuard, AnEnqueueThatThrowsStillEndsTheGroupAndMarksFailure) {
  int ends = 0, fails = 0;
  try {
    NcclGroupGuard g([&] { ++ends; }, [&] { ++fails; });
    throw RuntimeError("NCCL call failed: ncclAllReduce(...)");
  } catch (const RuntimeError&) {
  }
  EXPECT_EQ(ends, 1);   // ncclGroupEnd ran, so the thread's group depth is balanced again
  EXPECT_EQ(fails, 1);  // the communicators are marked for ncclCommAbort
}

TEST(NcclGroupGuard, AFailingGroupEndMarksFailureAndPropagatesOnce) {
  int ends = 0, fails = 0;
  try {
    NcclGroupGuard g(
        [&] {
          ++ends;
          throw RuntimeError("NCCL call failed: ncclGroupEnd()");
        },
        [&] { ++fails; });
    g.close();
    FAIL() << "close() must rethrow";
  } catch (const RuntimeError& e) {
    EXPECT_EQ(std::string(e.what()), "NCCL call failed: ncclGroupEnd()");
  }
  EXPECT_EQ(ends, 1);  // not called again by the destructor
  EXPECT_EQ(fails, 1);
}

TEST(NcclGroupGuard, AnEndThatThrowsDuringUnwindingIsSwallowed) {
  int fails = 0;
  try {
    NcclGroupGuard g([] { throw RuntimeError("ncclGroupEnd failed too"); }, [&] { ++fails; });
    throw std::runtime_error("enqueue failed");
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), "enqueue failed");  // the first error, not the cleanup's
  }
  EXPECT_EQ(fails, 1);
}

}  // namespace
}  // namespace parasim::kernels
