// Ring collectives among threads (see cpu_collectives.hpp).
//
// Ring indices: in step s of the reduce-scatter, rank q adds chunk (q - s - 2) mod n of its
// left neighbour into its own, so after n-1 steps rank q holds the full sum of chunk q
// (NCCL's reduce-scatter layout). In step s of the all-gather, rank q copies chunk
// (q - s - 1) mod n from its left neighbour, which owns it since the step before. Within a step
// no chunk is written by one rank while another reads it; the barrier ends each step.
#include "parasim/executor/cpu_collectives.hpp"

#include <algorithm>
#include <cstring>

#include "cpu_sync.hpp"
#include "parasim/common/error.hpp"

namespace parasim::executor {

namespace {

int mod(int a, int n) { return ((a % n) + n) % n; }

void add_into(float* __restrict__ dst, const float* __restrict__ src, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) dst[i] += src[i];
}

}  // namespace

RingCommunicator::RingCommunicator(int ranks, TimeNs spin_ns)
    : n_(ranks), spin_ns_(spin_ns), barrier_(std::make_unique<detail::SpinFutexBarrier>(ranks)),
      buffers_(static_cast<std::size_t>(std::max(ranks, 1)), nullptr),
      sends_(static_cast<std::size_t>(std::max(ranks, 1)), nullptr) {
  if (ranks < 1) throw InputError("RingCommunicator: ranks must be >= 1, found " + std::to_string(ranks));
}

RingCommunicator::~RingCommunicator() = default;

std::size_t RingCommunicator::chunk_offset(std::size_t count, int n, int c) {
  const std::size_t base = count / static_cast<std::size_t>(n), extra = count % static_cast<std::size_t>(n);
  const auto uc = static_cast<std::size_t>(c);
  return uc * base + std::min(uc, extra);
}

std::size_t RingCommunicator::chunk_size(std::size_t count, int n, int c) {
  const std::size_t base = count / static_cast<std::size_t>(n), extra = count % static_cast<std::size_t>(n);
  return base + (static_cast<std::size_t>(c) < extra ? 1 : 0);
}

void RingCommunicator::abort() {
  aborted_.store(true, std::memory_order_release);
  barrier_->abort();
}

void RingCommunicator::step_barrier() { barrier_->arrive_and_wait(spin_ns_, aborted_); }

// Publishes this rank's buffers, then waits until every rank has published (the rendezvous).
void RingCommunicator::join(int rank, float* buffer, const float* send) {
  if (rank < 0 || rank >= n_) throw InputError("RingCommunicator: rank " + std::to_string(rank) + " out of range");
  buffers_[static_cast<std::size_t>(rank)] = buffer;
  sends_[static_cast<std::size_t>(rank)] = send;
  step_barrier();
}

void RingCommunicator::ring_reduce_scatter(int rank, std::size_t count) {
  const float* left = buffers_[static_cast<std::size_t>(mod(rank - 1, n_))];
  float* mine = buffers_[static_cast<std::size_t>(rank)];
  for (int s = 0; s < n_ - 1; ++s) {
    const int c = mod(rank - s - 2, n_);
    const std::size_t off = chunk_offset(count, n_, c);
    add_into(mine + off, left + off, chunk_size(count, n_, c));
    step_barrier();
  }
}

void RingCommunicator::ring_all_gather(int rank, std::size_t count) {
  const float* left = buffers_[static_cast<std::size_t>(mod(rank - 1, n_))];
  float* mine = buffers_[static_cast<std::size_t>(rank)];
  for (int s = 0; s < n_ - 1; ++s) {
    const int c = mod(rank - s - 1, n_);
    const std::size_t off = chunk_offset(count, n_, c);
    std::memcpy(mine + off, left + off, chunk_size(count, n_, c) * sizeof(float));
    step_barrier();
  }
}

void RingCommunicator::all_reduce(int rank, float* buffer, std::size_t count) {
  join(rank, buffer, nullptr);
  if (n_ == 1) return;
  ring_reduce_scatter(rank, count);
  ring_all_gather(rank, count);
}

void RingCommunicator::reduce_scatter(int rank, float* buffer, std::size_t count) {
  join(rank, buffer, nullptr);
  if (n_ == 1) return;
  ring_reduce_scatter(rank, count);
}

void RingCommunicator::all_gather(int rank, float* buffer, std::size_t count) {
  join(rank, buffer, nullptr);
  if (n_ == 1) return;
  ring_all_gather(rank, count);
}

void RingCommunicator::broadcast(int rank, float* buffer, std::size_t count) {
  join(rank, buffer, nullptr);
  if (n_ == 1) return;
  // Pipelined chain 0 -> 1 -> ... -> n-1 in k chunks: in step j rank r copies chunk j - (r - 1)
  // from rank r - 1, so all ranks copy concurrently once the pipeline is full.
  const int k = static_cast<int>(std::clamp<std::size_t>(count / 16384, 1, 64));
  const float* left = buffers_[static_cast<std::size_t>(mod(rank - 1, n_))];
  float* mine = buffers_[static_cast<std::size_t>(rank)];
  for (int j = 0; j < k + n_ - 2; ++j) {
    const int c = j - (rank - 1);
    if (rank > 0 && c >= 0 && c < k) {
      const std::size_t off = chunk_offset(count, k, c);
      std::memcpy(mine + off, left + off, chunk_size(count, k, c) * sizeof(float));
    }
    step_barrier();
  }
}

void RingCommunicator::all_to_all(int rank, const float* send, float* receive, std::size_t count) {
  join(rank, receive, send);
  // One step: every rank pulls its chunk from every peer (a direct exchange, as NCCL's
  // all-to-all over peer-to-peer sends), starting with its right neighbour to spread the load.
  for (int i = 0; i < n_; ++i) {
    const int p = mod(rank + i, n_);
    const std::size_t src_off = chunk_offset(count, n_, rank);
    const std::size_t dst_off = chunk_offset(count, n_, p);
    const std::size_t len = std::min(chunk_size(count, n_, rank), chunk_size(count, n_, p));
    std::memcpy(receive + dst_off, sends_[static_cast<std::size_t>(p)] + src_off, len * sizeof(float));
  }
  step_barrier();  // nobody reuses its send buffer while a peer still reads it
}

}  // namespace parasim::executor
