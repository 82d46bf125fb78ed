// The MPI world (see world.hpp): init, layout, heartbeat, deadline collectives.
#include "parasim/mpi/world.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <thread>

#include "mpi_check.hpp"
#include "parasim/common/error.hpp"
#include "world_impl.hpp"

namespace parasim::mpi {

namespace {

std::unique_ptr<World> g_world;
constexpr int kHeartbeatTag = 1;
constexpr auto kHeartbeatPeriod = std::chrono::milliseconds(250);
/// After announcing a dead rank, how long a rank waits before MPI_Abort, so that every survivor
/// prints its own message before the launcher kills the job.
constexpr auto kAbortGrace = std::chrono::milliseconds(2000);

std::string seconds_text(std::chrono::milliseconds ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f s", static_cast<double>(ms.count()) / 1000.0);
  return buf;
}

std::string rank_list(const std::vector<int>& ranks) {
  std::string s;
  for (std::size_t i = 0; i < ranks.size(); ++i) s += (i ? ", " : "") + std::to_string(ranks[i]);
  return s;
}

}  // namespace

struct World::Impl {
  MPI_Comm comm = MPI_COMM_NULL;       // parasim's collectives
  MPI_Comm heartbeat = MPI_COMM_NULL;  // the heartbeat thread's own
  std::thread thread;
  std::atomic<bool> stop{false};
  std::atomic<int> dead{-1};
  std::mutex print;
};

bool built_with_mpi() { return true; }

namespace detail {

MPI_Comm world_comm(World& world) { return world.impl().comm; }

void idle_pause(int idle_rounds, bool in_step) {
  // Yielding costs a rank nothing when it has a core to itself and hands the core over when
  // ranks outnumber cores. Within a step a rank never sleeps: on a loaded host a sleeping rank
  // wakes up milliseconds late (measured: a 400 KB transfer took 6.5 ms instead of 0.1 ms).
  // Elsewhere, after ~10 ms of nothing, it sleeps (the long wait for rank 0's projection).
  if (in_step || idle_rounds < 20'000) std::this_thread::yield();
  else std::this_thread::sleep_for(std::chrono::microseconds(100));
}

void wait_all(World& world, std::vector<MPI_Request>& requests, Clock::time_point deadline, std::string_view what,
              const std::vector<int>& peers) {
  for (int idle = 0;; ++idle) {
    int done = 0;
    PARASIM_MPI_CHECK(MPI_Testall(static_cast<int>(requests.size()), requests.data(), &done, MPI_STATUSES_IGNORE));
    if (done) return;
    if (world.dead_rank() >= 0) {
      // The heartbeat thread has named the dead rank and ends the job; wait for it.
      std::this_thread::sleep_for(kAbortGrace * 4);
    }
    if (Clock::now() > deadline)
      throw RuntimeError("rank " + std::to_string(world.rank()) + ": timed out waiting for " + std::string(what) +
                         (peers.empty()
                              ? std::string()
                              : " from rank" + std::string(peers.size() > 1 ? "s " : " ") + rank_list(peers)) +
                         " (every rank still sends heartbeats: a rank hangs or ranks run different commands)");
    idle_pause(idle, false);
  }
}

}  // namespace detail

namespace {

std::vector<int> others(const World& w) {
  std::vector<int> v;
  for (int r = 0; r < w.size(); ++r)
    if (r != w.rank()) v.push_back(r);
  return v;
}

void heartbeat_main(World& w, World::Impl& impl, std::chrono::milliseconds timeout) {
  const int n = w.size(), me = w.rank();
  std::vector<MPI_Request> sends(static_cast<std::size_t>(n), MPI_REQUEST_NULL);
  std::vector<MPI_Request> recvs(static_cast<std::size_t>(n), MPI_REQUEST_NULL);
  std::vector<char> inbox(static_cast<std::size_t>(n), 0);
  char token = 1;
  const auto start = detail::Clock::now();
  std::vector<detail::Clock::time_point> seen(static_cast<std::size_t>(n), start);
  for (int p = 0; p < n; ++p)
    if (p != me)
      MPI_Irecv(&inbox[static_cast<std::size_t>(p)], 1, MPI_CHAR, p, kHeartbeatTag, impl.heartbeat,
                &recvs[static_cast<std::size_t>(p)]);
  auto next_send = start;
  while (!impl.stop.load()) {
    const auto now = detail::Clock::now();
    for (int p = 0; p < n; ++p) {
      if (p == me) continue;
      const auto i = static_cast<std::size_t>(p);
      int flag = 0;
      if (recvs[i] != MPI_REQUEST_NULL && MPI_Test(&recvs[i], &flag, MPI_STATUS_IGNORE) == MPI_SUCCESS && flag) {
        seen[i] = now;
        MPI_Irecv(&inbox[i], 1, MPI_CHAR, p, kHeartbeatTag, impl.heartbeat, &recvs[i]);
      }
      if (now >= next_send) {
        int sent = 1;
        if (sends[i] != MPI_REQUEST_NULL) MPI_Test(&sends[i], &sent, MPI_STATUS_IGNORE);
        if (sent) MPI_Isend(&token, 1, MPI_CHAR, p, kHeartbeatTag, impl.heartbeat, &sends[i]);
      }
      if (now - seen[i] > timeout && impl.dead.load() < 0) {
        impl.dead.store(p);
        {
          std::lock_guard lock(impl.print);
          std::fprintf(stderr,
                       "parasim: rank %d: rank %d (%s) sent no heartbeat for %s: it died or hangs; ending the job\n",
                       me, p, w.places()[i].host.c_str(), seconds_text(timeout).c_str());
          std::fflush(stderr);
        }
        std::this_thread::sleep_for(kAbortGrace);
        MPI_Abort(MPI_COMM_WORLD, kExitRuntime);
      }
    }
    if (now >= next_send) next_send = now + kHeartbeatPeriod;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  // Shutting down (every rank passed the final barrier): drop what is still posted.
  for (MPI_Request& r : recvs)
    if (r != MPI_REQUEST_NULL) {
      MPI_Cancel(&r);
      MPI_Wait(&r, MPI_STATUS_IGNORE);
    }
  for (MPI_Request& r : sends)
    if (r != MPI_REQUEST_NULL) MPI_Wait(&r, MPI_STATUS_IGNORE);
}

}  // namespace

World& World::init(int& argc, char**& argv, Timeouts timeouts) {
  if (g_world) throw RuntimeError("MPI: World::init() called twice");
  int provided = 0;
  PARASIM_MPI_CHECK(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided));
  std::unique_ptr<World> w(new World());
  w->timeouts_ = timeouts;
  w->impl_ = std::make_unique<Impl>();
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  PARASIM_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &w->rank_));
  PARASIM_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &w->size_));
  PARASIM_MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &w->impl_->comm));
  PARASIM_MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &w->impl_->heartbeat));
  MPI_Comm_set_errhandler(w->impl_->comm, MPI_ERRORS_RETURN);
  MPI_Comm_set_errhandler(w->impl_->heartbeat, MPI_ERRORS_RETURN);
  g_world = std::move(w);
  World& world = *g_world;

  char host[256] = {};
  gethostname(host, sizeof host - 1);
  RankPlace me{world.rank_, host, launcher_local_rank(), static_cast<int>(getpid())};
  world.places_.assign(static_cast<std::size_t>(world.size_), RankPlace{});
  world.places_[static_cast<std::size_t>(world.rank_)] = me;
  // The layout is the first collective (without a heartbeat yet: nothing has started).
  const std::string mine = std::to_string(me.local_rank) + " " + std::to_string(me.pid) + " " + me.host;
  const auto all = world.allgather(mine, "the rank layout");
  std::map<std::string, int> per_host;
  for (int r = 0; r < world.size_; ++r) {
    RankPlace& p = world.places_[static_cast<std::size_t>(r)];
    p.rank = r;
    const std::string& s = all[static_cast<std::size_t>(r)];
    const auto a = s.find(' '), b = s.find(' ', a + 1);
    p.local_rank = std::atoi(s.substr(0, a).c_str());
    p.pid = std::atoi(s.substr(a + 1, b - a - 1).c_str());
    p.host = s.substr(b + 1);
    const int index = per_host[p.host]++;
    if (p.local_rank < 0) p.local_rank = index;
  }
  if (provided >= MPI_THREAD_MULTIPLE && world.size_ > 1)
    world.impl_->thread = std::thread(heartbeat_main, std::ref(world), std::ref(*world.impl_), timeouts.heartbeat);
  return world;
}

World* World::current() { return g_world.get(); }

void World::finalize() {
  if (!g_world) return;
  World& w = *g_world;
  try {
    if (w.size_ > 1) w.barrier("the end of the job");
  } catch (const std::exception& e) {
    w.abort(e.what(), kExitRuntime);
  }
  w.impl_->stop.store(true);
  if (w.impl_->thread.joinable()) w.impl_->thread.join();
  MPI_Comm_free(&w.impl_->heartbeat);
  MPI_Comm_free(&w.impl_->comm);
  g_world.reset();
  MPI_Finalize();
}

World::~World() = default;

int World::dead_rank() const { return impl_->dead.load(); }

std::vector<std::string> World::hosts() const {
  std::vector<std::string> h;
  for (const RankPlace& p : places_)
    if (std::find(h.begin(), h.end(), p.host) == h.end()) h.push_back(p.host);
  return h;
}

std::vector<int> World::host_of_rank() const {
  const auto h = hosts();
  std::vector<int> out;
  for (const RankPlace& p : places_) out.push_back(static_cast<int>(std::find(h.begin(), h.end(), p.host) - h.begin()));
  return out;
}

std::string World::broadcast(std::string bytes, int root, std::string_view what, std::chrono::milliseconds timeout) {
  const auto deadline = detail::Clock::now() + (timeout.count() > 0 ? timeout : timeouts_.call);
  const std::vector<int> peers = rank_ == root ? std::vector<int>{} : std::vector<int>{root};
  long long size = static_cast<long long>(bytes.size());
  std::vector<MPI_Request> req(1, MPI_REQUEST_NULL);
  PARASIM_MPI_CHECK(MPI_Ibcast(&size, 1, MPI_LONG_LONG, root, impl_->comm, &req[0]));
  detail::wait_all(*this, req, deadline, what, peers);
  if (size > (1ll << 31) - 1) throw RuntimeError("MPI: " + std::string(what) + " is larger than 2 GiB");
  bytes.resize(static_cast<std::size_t>(size));
  if (size == 0) return bytes;
  PARASIM_MPI_CHECK(MPI_Ibcast(bytes.data(), static_cast<int>(size), MPI_CHAR, root, impl_->comm, &req[0]));
  detail::wait_all(*this, req, deadline, what, peers);
  return bytes;
}

std::vector<std::string> World::allgather(const std::string& bytes, std::string_view what,
                                          std::chrono::milliseconds timeout) {
  const auto deadline = detail::Clock::now() + (timeout.count() > 0 ? timeout : timeouts_.call);
  const auto peers = others(*this);
  if (bytes.size() > (1u << 30)) throw RuntimeError("MPI: " + std::string(what) + " is larger than 1 GiB");
  int mine = static_cast<int>(bytes.size());
  std::vector<int> sizes(static_cast<std::size_t>(size_), 0);
  std::vector<MPI_Request> req(1, MPI_REQUEST_NULL);
  PARASIM_MPI_CHECK(MPI_Iallgather(&mine, 1, MPI_INT, sizes.data(), 1, MPI_INT, impl_->comm, &req[0]));
  detail::wait_all(*this, req, deadline, what, peers);
  std::vector<int> offsets(static_cast<std::size_t>(size_), 0);
  long long total = 0;
  for (int r = 0; r < size_; ++r) {
    offsets[static_cast<std::size_t>(r)] = static_cast<int>(total);
    total += sizes[static_cast<std::size_t>(r)];
  }
  if (total > (1ll << 31) - 1) throw RuntimeError("MPI: " + std::string(what) + " is larger than 2 GiB in all");
  std::string all(static_cast<std::size_t>(total), '\0');
  PARASIM_MPI_CHECK(MPI_Iallgatherv(bytes.data(), mine, MPI_CHAR, all.data(), sizes.data(), offsets.data(), MPI_CHAR,
                                    impl_->comm, &req[0]));
  detail::wait_all(*this, req, deadline, what, peers);
  std::vector<std::string> out;
  for (int r = 0; r < size_; ++r)
    out.push_back(all.substr(static_cast<std::size_t>(offsets[static_cast<std::size_t>(r)]),
                             static_cast<std::size_t>(sizes[static_cast<std::size_t>(r)])));
  return out;
}

void World::barrier(std::string_view what, std::chrono::milliseconds timeout) {
  const auto deadline = detail::Clock::now() + (timeout.count() > 0 ? timeout : timeouts_.call);
  std::vector<MPI_Request> req(1, MPI_REQUEST_NULL);
  PARASIM_MPI_CHECK(MPI_Ibarrier(impl_->comm, &req[0]));
  detail::wait_all(*this, req, deadline, what, others(*this));
}

void World::abort(const std::string& message, int code) {
  {
    std::lock_guard lock(impl_->print);
    std::fprintf(stderr, "parasim: rank %d: %s\n", rank_, message.c_str());
    std::fflush(stderr);
  }
  if (size_ > 1) std::this_thread::sleep_for(kAbortGrace);
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

}  // namespace parasim::mpi
