// The CUPTI implementation of ActivitySource (builds with CUDA only).
//
// Discipline (the one Kineto follows):
//   - CUPTI asks for buffers and hands them back through two process-global callbacks; static
//     trampolines forward them to the one live source (registered in a global slot).
//   - A completed buffer is parsed (cuptiActivityGetNextRecord: a CUPTI call) into plain records
//     *before* any lock is taken; only then is our mutex locked to append them. CUPTI is never
//     called while our mutex is held, so CUPTI's internal locks and ours cannot deadlock.
//   - flush() = cuptiActivityFlushAll(FORCED) (blocking: every completion callback has run when it
//     returns) + the dropped-record count, then hands over everything pending.
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <cupti.h>

#include "parasim/common/error.hpp"
#include "parasim/common/units.hpp"
#include "parasim/kernels/cuda_check.hpp"
#include "parasim/profiler/cupti_activity.hpp"

namespace parasim::profiler {
namespace {

// The newest record layouts of the CUPTI this is built against; CUPTI emits the layout of its
// own version, which is the toolkit's.
#if CUPTI_API_VERSION >= 130000
using CuptiKernelRecord = CUpti_ActivityKernel10;
using CuptiMemcpyRecord = CUpti_ActivityMemcpy6;
#else
using CuptiKernelRecord = CUpti_ActivityKernel9;
using CuptiMemcpyRecord = CUpti_ActivityMemcpy5;
#endif
using CuptiMemsetRecord = CUpti_ActivityMemset4;
using CuptiPeerCopyRecord = CUpti_ActivityMemcpyPtoP4;

constexpr std::size_t kBufferBytes = 8 * 1024 * 1024;  // Kineto's default; few, large buffers
constexpr std::size_t kBufferAlignment = 8;             // CUPTI requires 8-byte aligned buffers

// What CUPTI must trace: kernels (concurrent kind: real start/end even with overlapping kernels),
// copies and memsets (device work a phase may issue; copies between two devices are their own
// kind, MEMCPY2, and without it a peer copy's time is lost), the external correlation join records,
// and the runtime and driver API calls those join records attach to (cuBLAS/cuDNN launch through
// the driver API, so RUNTIME alone would leave their kernels unattributed).
constexpr CUpti_ActivityKind kTracedKinds[] = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMCPY2,
    CUPTI_ACTIVITY_KIND_MEMSET,
    CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION, CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_DRIVER,
};

MemcpyKind memcpy_kind(std::uint8_t cupti_kind) {
  switch (cupti_kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return MemcpyKind::HostToDevice;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return MemcpyKind::DeviceToHost;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return MemcpyKind::DeviceToDevice;
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return MemcpyKind::HostToHost;
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return MemcpyKind::PeerToPeer;
    default: return MemcpyKind::Unknown;
  }
}

/// Copies the records we use out of one CUPTI buffer. Calls CUPTI; never under our lock.
ActivityBatch parse_buffer(std::uint8_t* buffer, std::size_t valid_bytes) {
  ActivityBatch batch;
  CUpti_Activity* record = nullptr;
  while (cuptiActivityGetNextRecord(buffer, valid_bytes, &record) == CUPTI_SUCCESS) {
    switch (record->kind) {
      case CUPTI_ACTIVITY_KIND_KERNEL:
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
        const auto* k = reinterpret_cast<const CuptiKernelRecord*>(record);
        batch.kernels.push_back({k->correlationId, k->start, k->end, k->deviceId, k->streamId,
                                 k->name != nullptr ? k->name : "?"});
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const auto* m = reinterpret_cast<const CuptiMemcpyRecord*>(record);
        batch.memcpys.push_back({m->correlationId, m->start, m->end, m->deviceId, m->streamId,
                                 static_cast<Bytes>(m->bytes), memcpy_kind(m->copyKind)});
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMCPY2: {
        // Device-to-device copies across devices (cudaMemcpyPeerAsync); one device: plain d2d.
        const auto* m = reinterpret_cast<const CuptiPeerCopyRecord*>(record);
        batch.memcpys.push_back(
            {m->correlationId, m->start, m->end, m->deviceId, m->streamId, static_cast<Bytes>(m->bytes),
             m->srcDeviceId == m->dstDeviceId ? MemcpyKind::DeviceToDevice : MemcpyKind::PeerToPeer});
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMSET: {
        const auto* m = reinterpret_cast<const CuptiMemsetRecord*>(record);
        batch.memsets.push_back({m->correlationId, m->start, m->end, m->deviceId, m->streamId,
                                 static_cast<Bytes>(m->bytes)});
        break;
      }
      case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
        const auto* c = reinterpret_cast<const CUpti_ActivityExternalCorrelation*>(record);
        if (c->externalKind == CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0)
          batch.external_correlations.push_back({c->externalId, c->correlationId});
        break;
      }
      case CUPTI_ACTIVITY_KIND_RUNTIME:
      case CUPTI_ACTIVITY_KIND_DRIVER: {
        const auto* a = reinterpret_cast<const CUpti_ActivityAPI*>(record);
        batch.runtime_calls.push_back({a->correlationId, a->start, a->end, static_cast<std::uint32_t>(a->cbid),
                                       record->kind == CUPTI_ACTIVITY_KIND_DRIVER, a->threadId});
        break;
      }
      default: break;
    }
  }
  return batch;
}

/// Turns CUPTI's refusals that have a known cause into messages a user can act on.
void check_cupti_setup(CUptiResult status, const char* call_text, int line) {
  if (status == CUPTI_SUCCESS) return;
  if (status == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
    throw RuntimeError(
        "CUPTI is already in use by another profiler (Nsight Systems, Nsight Compute, cuda-gdb, or a second "
        "tracer in this process); another profiler already subscribed, and CUPTI allows only one. Run parasim's GPU "
        "profiling without an outside profiler attached (" + std::string(call_text) + " returned "
        "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)");
  }
  if (status == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES ||
      status == CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES) {
    throw RuntimeError(std::string("CUPTI refused to trace: insufficient privileges (") + call_text +
                       "). Profiling may be restricted to administrators on this machine "
                       "(NVreg_RestrictProfilingToAdminUsers) or by the hypervisor");
  }
  const char* text = nullptr;
  if (cuptiGetResultString(status, &text) != CUPTI_SUCCESS) text = nullptr;
  kernels::throw_vendor_call_failure(
      "CUPTI", call_text, __FILE__, line,
      std::string(text ? text : "unknown CUPTI error") + " (code " + std::to_string(static_cast<int>(status)) + ")");
}

#define PARASIM_CUPTI_SETUP(call) check_cupti_setup((call), #call, __LINE__)

class CuptiActivitySource;

/// The process-global slot the trampolines deliver to, and the records not yet flushed.
struct Registry {
  std::mutex mutex;
  CuptiActivitySource* active = nullptr;  // guarded by mutex
  ActivityBatch pending;                  // guarded by mutex
};
/// Deliberately never destroyed: CUPTI flushes its buffers from its own exit handler, which may
/// run after this file's statics are gone; a destroyed mutex there is undefined behaviour, a
/// leaked one is not (the callback then finds no active source and frees the buffer).
Registry& registry() {
  static Registry* const r = new Registry;
  return *r;
}

void CUPTIAPI on_buffer_requested(std::uint8_t** buffer, std::size_t* size, std::size_t* max_records) {
  *buffer = static_cast<std::uint8_t*>(std::aligned_alloc(kBufferAlignment, kBufferBytes));
  *size = *buffer != nullptr ? kBufferBytes : 0;  // null: CUPTI drops records and counts them
  *max_records = 0;                               // as many as fit
}

void CUPTIAPI on_buffer_completed(CUcontext context, std::uint32_t stream_id, std::uint8_t* buffer, std::size_t size,
                                  std::size_t valid_size) {
  (void)size;
  ActivityBatch batch;
  if (buffer != nullptr && valid_size > 0) batch = parse_buffer(buffer, valid_size);
  std::size_t dropped = 0;
  if (cuptiActivityGetNumDroppedRecords(context, stream_id, &dropped) == CUPTI_SUCCESS) batch.dropped.count = dropped;
  std::free(buffer);
  // Only now, with every CUPTI call done, take our lock.
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  if (r.active != nullptr) r.pending.append(std::move(batch));  // no live source: late records are dropped
}

class CuptiActivitySource final : public ActivitySource {
 public:
  CuptiActivitySource() {
    {
      Registry& r = registry();
      std::lock_guard<std::mutex> lock(r.mutex);
      if (r.active != nullptr)
        throw RuntimeError("a CUPTI activity tracer is already active in this process; CUPTI allows only one");
      r.active = this;
      r.pending = ActivityBatch{};
    }
    try {
      PARASIM_CUPTI_SETUP(cuptiActivityRegisterCallbacks(on_buffer_requested, on_buffer_completed));
      for (CUpti_ActivityKind kind : kTracedKinds) {
        PARASIM_CUPTI_SETUP(cuptiActivityEnable(kind));
        enabled_.push_back(kind);
      }
    } catch (...) {
      teardown();
      throw;
    }
  }

  ~CuptiActivitySource() override { teardown(); }

  void push_external_id(std::uint64_t external_id) override {
    PARASIM_CUPTI_CHECK(cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, external_id));
  }

  void pop_external_id() override {
    std::uint64_t last = 0;
    PARASIM_CUPTI_CHECK(cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &last));
  }

  ActivityBatch flush() override {
    // Both CUPTI calls run without our lock; the completion callbacks they trigger take it.
    PARASIM_CUPTI_CHECK(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
    std::size_t dropped = 0;
    PARASIM_CUPTI_CHECK(cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped));
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    ActivityBatch out = std::exchange(r.pending, ActivityBatch{});
    out.dropped.count += dropped;
    return out;
  }

  std::string name() const override { return "cupti"; }

 private:
  void teardown() noexcept {
    for (CUpti_ActivityKind kind : enabled_) (void)cuptiActivityDisable(kind);
    enabled_.clear();
    (void)cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    if (r.active == this) {
      r.active = nullptr;
      r.pending = ActivityBatch{};
    }
  }

  std::vector<CUpti_ActivityKind> enabled_;
};

}  // namespace

std::unique_ptr<ActivitySource> make_cupti_activity_source() { return std::make_unique<CuptiActivitySource>(); }

}  // namespace parasim::profiler
