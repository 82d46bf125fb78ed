// A memo whose entries are worked out once even when threads ask for them at the same time: the
// first caller of a key computes it, callers meanwhile wait for that result instead of repeating
// the work, and an exception reaches every caller of the key. Shared by StepCache (models, costs,
// partitions) and the planner's StepBoundCache.
#pragma once

#include <exception>
#include <future>
#include <mutex>
#include <type_traits>
#include <utility>

namespace parasim::strategies {

/// `map` maps keys to std::shared_future<V>, guarded by `mu`; `make()` returns the V of `key`.
template <class Map, class Make>
auto compute_once(std::mutex& mu, Map& map, const typename Map::key_type& key, const Make& make) {
  using Value = std::decay_t<decltype(std::declval<const typename Map::mapped_type&>().get())>;
  std::promise<Value> promise;
  typename Map::mapped_type entry;
  bool mine = false;
  {
    const std::lock_guard lock(mu);
    auto [it, added] = map.try_emplace(key);
    if (added) it->second = promise.get_future().share();
    entry = it->second;
    mine = added;
  }
  if (mine) {
    try {
      promise.set_value(make());
    } catch (...) {
      promise.set_exception(std::current_exception());
    }
  }
  return Value(entry.get());
}

}  // namespace parasim::strategies
