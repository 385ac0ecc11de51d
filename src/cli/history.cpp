// simba history (history.hpp).
#include "cli/history.hpp"

#include "core/duration.hpp"
#include "core/error.hpp"
#include "core/names.hpp"
#include "sys/clock.hpp"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <ctime>
#include <iostream>

namespace simba::cli {
namespace {

constexpr int64_t k_history_timeout_ms = 5000;

template <typename T> nlohmann::json or_null(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

nlohmann::json event_json(const backend::HistoryEvent& e) {
  nlohmann::json j;
  j["mutex"] = e.mutex;
  j["at"] = e.at;
  j["event"] = e.event;
  j["owner"] = e.owner_id;
  j["label"] = std::string(core::label_of(e.owner_id));
  const auto& h = e.holder;
  j["host"] = h ? nlohmann::json(h->host) : nlohmann::json(nullptr);
  j["pid"] = h ? nlohmann::json(h->pid) : nlohmann::json(nullptr);
  j["command"] = h && !h->command.empty() ? nlohmann::json(h->command) : nlohmann::json(nullptr);
  j["via"] = h ? nlohmann::json(h->via) : nlohmann::json(nullptr);
  j["fencing_token"] = e.token;
  j["exit_code"] = or_null(e.exit_code);
  j["held_ms"] = or_null(e.held_ms);
  j["waited_ms"] = or_null(e.waited_ms);
  j["reason"] = e.reason.empty() ? nlohmann::json(nullptr) : nlohmann::json(e.reason);
  j["by"] = e.by.empty() ? nlohmann::json(nullptr) : nlohmann::json(e.by);
  j["by_label"] =
      e.by.empty() ? nlohmann::json(nullptr) : nlohmann::json(std::string(core::label_of(e.by)));
  return j;
}

// A skipped event's holder (or runner) since when: held_ms before it.
std::string skipped_since(const backend::HistoryEvent& e) {
  if (e.event != "skipped" || !e.held_ms) return "";
  return (e.reason == "already-ran" ? " at " : " since ") + core::format_utc(e.at - *e.held_ms);
}

// "2026-12-01T04:43:03Z deploy acquired ci-7 (build-3, pid 4711, make),
// token 17..., waited 3s"; "... deploy lost (taken by ci-8) ci-7 (...)";
// "... deploy skipped (busy by ci-7 since 2026-...Z) ci-8 (...), token 17...".
std::string event_line(const backend::HistoryEvent& e) {
  std::string event = core::escape_control(e.event);
  if (!e.reason.empty()) {
    event += " (" + core::escape_control(e.reason);
    if (!e.by.empty()) event += " by " + core::escape_control(core::label_of(e.by));
    event += skipped_since(e) + ")";
  }
  std::string line = core::format_utc(e.at) + " " + core::escape_control(e.mutex) + " " + event +
                     " " + core::escape_control(core::label_of(e.owner_id));
  if (e.holder && e.event != "forced")
    line += " (" + core::escape_control(e.holder->host) + ", pid " + std::to_string(e.holder->pid) +
            (e.holder->command.empty() ? "" : ", " + core::escape_control(e.holder->command)) + ")";
  line += ", token " + std::to_string(e.token);
  if (e.exit_code) line += ", exit " + std::to_string(*e.exit_code);
  if (e.held_ms && e.event != "skipped") line += ", held " + core::format_duration(*e.held_ms);
  if (e.waited_ms && *e.waited_ms > 0) line += ", waited " + core::format_duration(*e.waited_ms);
  if (e.holder && e.event == "forced")
    line +=
        ", by " + core::escape_control(e.holder->host) + " pid " + std::to_string(e.holder->pid);
  return line;
}

} // namespace

CLI::App* add_history_command(CLI::App& app, HistoryOptions& o) {
  CLI::App* cmd = app.add_subcommand("history", k_history_description);
  cmd->footer("Usage: simba history [--mutex NAME] [--since D] [--json] [--backend URI]");
  cmd->add_option("--mutex", o.common.mutex, "Only this mutex");
  cmd->add_option("--since", o.since, "Only the events of the last D (e.g. 1h)");
  add_backend_options(*cmd, o.common, "Print nothing but errors");
  cmd->add_flag("--json", o.json, "JSON for programs");
  return cmd;
}

int history_command(const HistoryOptions& o) {
  if (!o.common.mutex.empty()) core::validate_mutex_name(o.common.mutex);
  int64_t since = 0;
  if (!o.since.empty()) since = sys::wall_ms() - core::parse_duration(o.since, "--since");
  auto backend = open_backend(o.common, backend::Access::inspect);
  backend::History h = backend->history(o.common.mutex, since, k_history_timeout_ms);
  if (!h.ok) throw UnavailableError("cannot read " + backend->describe() + ": " + h.error);
  if (o.common.quiet) return 0;
  if (o.json) {
    // Written event by event, never as one document in memory (issue 36
    // §11: 1,000,000 events took 2.57 GB): the bytes of the document
    // nlohmann would write, keys in its (sorted) order.
    std::cout << "{\"backend_now\":" << h.now << ",\"events\":[";
    for (size_t i = 0; i < h.events.size(); ++i)
      std::cout << (i ? "," : "") << event_json(h.events[i]).dump();
    std::cout << "],\"kept\":" << (h.kept ? "true" : "false") << ",\"schema\":1}\n";
    return 0;
  }
  if (!h.kept) std::cerr << "simba: " << backend->describe() << " keeps no history\n";
  for (const auto& e : h.events) std::cout << event_line(e) << '\n';
  return 0;
}

} // namespace simba::cli
