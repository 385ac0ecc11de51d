#pragma once
// How many events of each mutex's history a backend keeps (Backend::history):
// SIMBA_HISTORY_LIMIT, read once (default 1000; 0: no history is written).
// Every writer trims to its own limit: give all of them the same.
#include <cstdint>

namespace simba::backend {

constexpr int64_t k_default_history_limit = 1000;

int64_t history_limit();

} // namespace simba::backend
