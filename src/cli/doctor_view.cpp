// What simba doctor prints (doctor_view.hpp).
#include "cli/doctor_view.hpp"

#include "core/error.hpp"
#include "core/names.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>

namespace simba::cli {

using backend::Finding;

const char* verdict_name(Finding::Verdict v) {
  switch (v) {
  case Finding::Verdict::ok: return "ok";
  case Finding::Verdict::warn: return "warn";
  case Finding::Verdict::fail: return "fail";
  }
  return "?";
}

Finding::Verdict overall(const backend::Diagnosis& found) {
  Finding::Verdict worst = Finding::Verdict::ok;
  for (const Finding& f : found) worst = std::max(worst, f.verdict);
  return worst;
}

int doctor_exit_code(const backend::Diagnosis& found) {
  switch (overall(found)) {
  case Finding::Verdict::ok: return 0;
  case Finding::Verdict::warn: return 1;
  case Finding::Verdict::fail: return exit_code::k_unavailable;
  }
  return exit_code::k_internal;
}

void print_findings_text(std::ostream& out, const backend::Diagnosis& found) {
  size_t width = 0;
  for (const Finding& f : found) width = std::max(width, f.check.size());
  for (const Finding& f : found) {
    std::string verdict = verdict_name(f.verdict);
    std::string line = verdict + std::string(6 - verdict.size(), ' ') +
                       core::escape_control(f.check) +
                       std::string(width - f.check.size() + 2, ' ') +
                       core::escape_control(f.detail);
    if (f.verdict != Finding::Verdict::ok && !f.fix.empty())
      line += " \u2014 fix: " + core::escape_control(f.fix);
    out << line << '\n';
  }
}

void print_findings_json(std::ostream& out, const std::string& backend,
                         const backend::Diagnosis& found) {
  nlohmann::json findings = nlohmann::json::array();
  for (const Finding& f : found) {
    nlohmann::json j;
    j["check"] = f.check;
    j["verdict"] = verdict_name(f.verdict);
    j["detail"] = f.detail;
    j["fix"] = f.fix.empty() ? nlohmann::json(nullptr) : nlohmann::json(f.fix);
    findings.push_back(std::move(j));
  }
  nlohmann::json doc;
  doc["backend"] = backend;
  doc["findings"] = std::move(findings);
  doc["verdict"] = verdict_name(overall(found));
  doc["schema"] = 1;
  out << doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
}

} // namespace simba::cli
