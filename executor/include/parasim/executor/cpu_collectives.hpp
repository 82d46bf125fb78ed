// Collectives among threads of one process, with NCCL's semantics and ring algorithms:
// each rank is a thread with its own float buffer; a ring step is "read the left neighbour's
// chunk from its buffer and add it into (or copy it to) mine", every step ends at a barrier,
// so the data really moves between the threads' buffers (memory traffic like a shared-memory
// transport, float adds like NCCL's reduction kernels).
//
//   all_reduce       ring reduce-scatter + ring all-gather: 2(n-1) steps of count/n floats
//   reduce_scatter   in place: rank r ends with the sum of chunk r of every rank's buffer
//   all_gather       in place: rank r contributes chunk r of its buffer, all end with all chunks
//   broadcast        rank 0's buffer to all, pipelined along the ring in chunks
//   all_to_all       chunk p of rank r's send buffer lands in chunk r of rank p's receive buffer
//
// Chunks split `count` as evenly as possible (the first count % n chunks one float larger).
// Every rank must call the same collectives in the same order, as with NCCL.
//
// Example (two threads):
//   RingCommunicator comm(2);
//   std::thread t1([&] { comm.all_reduce(1, buf1.data(), n); });
//   comm.all_reduce(0, buf0.data(), n);   // both now hold buf0 + buf1
//   t1.join();
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <vector>

#include "parasim/common/units.hpp"

namespace parasim::executor {

namespace detail {
class SpinFutexBarrier;
}

class RingCommunicator {
 public:
  /// `spin_ns`: how long a rank spins at a barrier before sleeping (0 when threads > cores).
  explicit RingCommunicator(int ranks, TimeNs spin_ns = 0);
  ~RingCommunicator();
  RingCommunicator(const RingCommunicator&) = delete;
  RingCommunicator& operator=(const RingCommunicator&) = delete;

  int ranks() const { return n_; }
  void all_reduce(int rank, float* buffer, std::size_t count);
  void reduce_scatter(int rank, float* buffer, std::size_t count);
  void all_gather(int rank, float* buffer, std::size_t count);
  void broadcast(int rank, float* buffer, std::size_t count);
  void all_to_all(int rank, const float* send, float* receive, std::size_t count);

  /// Wakes every rank blocked in a collective; they throw RuntimeError (used when a worker
  /// failed and the step is abandoned).
  void abort();

  /// Chunk `c` of a `count`-float buffer split in `n` chunks: [offset, offset + size).
  static std::size_t chunk_offset(std::size_t count, int n, int c);
  static std::size_t chunk_size(std::size_t count, int n, int c);

 private:
  void join(int rank, float* buffer, const float* send);
  void step_barrier();
  void ring_reduce_scatter(int rank, std::size_t count);
  void ring_all_gather(int rank, std::size_t count);

  int n_;
  TimeNs spin_ns_;
  std::unique_ptr<detail::SpinFutexBarrier> barrier_;
  std::atomic<bool> aborted_{false};
  std::vector<float*> buffers_;       // per rank, set when it joins a collective
  std::vector<const float*> sends_;   // all_to_all send buffers
};

}  // namespace parasim::executor
