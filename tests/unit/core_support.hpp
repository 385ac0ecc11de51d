#pragma once
// What the unit tests of the contend core share: a contender's usual
// settings, a contender with a fixed jitter, and the first action of a
// kind among those it returned.
#include "core/contender.hpp"

#include <string>
#include <utility>
#include <variant>

namespace simba::test {

// Mutex "m", ttl 10 s, transition 2 s, kill-after 1 s.
inline core::ContenderConfig
contender_config(const std::string& id = "me",
                 core::ContenderConfig::Mode mode = core::ContenderConfig::Mode::run) {
  core::ContenderConfig c;
  c.mutex = "m";
  c.contender_id = id;
  c.ttl_ms = 10000;
  c.transition_ms = 2000;
  c.kill_after_ms = 1000;
  c.mode = mode;
  return c;
}

// Its contend period's jitter is always `jitter`.
inline core::Contender make_contender(core::ContenderConfig c, int64_t jitter = 0) {
  std::string id = c.contender_id;
  return core::Contender(std::move(c),
                         core::ContendPeriod(id, [jitter](int64_t, int64_t) { return jitter; }));
}

// The first action of kind T in `acts`, or nullptr.
template <class T> const T* find(const core::Actions& acts) {
  for (const auto& a : acts)
    if (const T* x = std::get_if<T>(&a)) return x;
  return nullptr;
}

} // namespace simba::test
