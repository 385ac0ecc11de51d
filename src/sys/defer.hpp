#pragma once
// Runs a function when the scope ends, however it ends (return, throw):
// the clean-up of what has no handle of its own (a SQLite statement, a
// file to remove) written once, beside what it cleans up (the idea of
// ccache's DEFER).
//
//   sqlite3_stmt* s = ...;
//   sys::Defer finalize([&] { sqlite3_finalize(s); });
#include <utility>

namespace simba::sys {

template <typename F> class Defer {
public:
  explicit Defer(F f) : m_f(std::move(f)) {}
  Defer(const Defer&) = delete;
  Defer& operator=(const Defer&) = delete;
  ~Defer() { m_f(); }

private:
  F m_f;
};

} // namespace simba::sys
