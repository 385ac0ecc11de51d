// Which history events a write makes (history_events.hpp).
#include "backend/sqlite/history_events.hpp"

#include <algorithm>

namespace simba::backend::sqlite {

int history_events(const core::Lease& cur, const core::Lease& next, bool new_lease,
                   const EventContext& c, HistoryEvent (&out)[2]) {
  const int64_t at = c.now + c.boot_to_wall;
  int n = 0;
  if (new_lease) {
    if (!cur.owner_id.empty()) {
      HistoryEvent& e = out[n++];
      e.event = "expired";
      e.at = cur.transition_at + c.boot_to_wall;
      e.owner_id = cur.owner_id;
      e.token = cur.fencing_token;
      e.held_ms = cur.transition_at - cur.acquired_at;
    }
    HistoryEvent& e = out[n++];
    e.event = "acquired";
    e.at = at;
    e.owner_id = next.owner_id;
    e.holder = c.holder;
    e.token = next.fencing_token;
    e.waited_ms = c.queued_at_ms ? std::max<int64_t>(0, at - *c.queued_at_ms) : 0;
  } else if (!cur.owner_id.empty() && next.owner_id.empty()) {
    HistoryEvent& e = out[n++];
    e.event = c.forced ? "forced" : "released";
    e.at = at;
    e.owner_id = cur.owner_id;
    e.token = cur.fencing_token;
    e.held_ms = c.now - cur.acquired_at;
    if (c.forced)
      e.holder = c.holder; // who forced it
    else
      e.exit_code = c.exit_code;
  }
  return n;
}

CounterSteps counter_steps(const core::Lease& cur, const core::Lease& next, bool new_lease,
                           bool forced, uint64_t lost_token) {
  CounterSteps c;
  const bool counted = lost_token != 0 && lost_token == cur.fencing_token;
  if (new_lease) {
    c.acquisitions = 1;
    if (!cur.owner_id.empty() && !cur.holding && !counted) c.losses = 1;
  } else if (forced && !cur.owner_id.empty() && next.owner_id.empty() && !counted) {
    c.losses = 1;
  }
  return c;
}

LostCount lost_count(const core::Lease& cur, const std::string& contender, uint64_t token) {
  LostCount c;
  if (cur.owner_id == contender && cur.fencing_token == token) {
    c.counts = c.note = true;
  } else if (cur.fencing_token < token) {
    c.counts = true;
  }
  return c;
}

} // namespace simba::backend::sqlite
