#pragma once
// What `simba status` prints: the state of each mutex as one word, and the
// listing as JSON for programs (man simba: "STATUS JSON"), or OpenMetrics
// for scrapers (the table for people: status_table.hpp). Reads nothing:
// the listing is given.
#include "backend/backend.hpp"
#include "core/once_per.hpp"

#include <map>
#include <optional>
#include <ostream>
#include <string>

namespace simba::cli {

// free, held, holding (only kept for --min-hold after CMD ended), leased
// (simba acquire's lease between steps), transition (not renewed in time,
// not yet free), revoked, quarantine.
std::string state_name(const backend::MutexLease& m, int64_t now);

// How many of its slots hold a valid lease (a plain mutex: 1 slot).
size_t used_slots(const backend::MutexLease& m, int64_t now);

// The --once-per done records (--mutex, --all), by mutex name.
using DoneRecords = std::map<std::string, core::DoneRecord>;

void print_status_json(std::ostream& out, const backend::Listing& l, const DoneRecords& done);
// `prometheus`: Prometheus' text format 0.0.4 (node_exporter's textfile
// collector): a counter's family is named with its _total, and no # EOF.
void print_status_openmetrics(std::ostream& out, const backend::Listing& l, bool prometheus = false);

} // namespace simba::cli
