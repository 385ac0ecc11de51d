#pragma once
// What `simba doctor` prints (docs/commands.md, "simba doctor"): a line per
// finding for people, one JSON object for programs; and the exit code the
// findings make. Reads nothing: the findings are given.
#include "backend/diagnosis.hpp"

#include <ostream>
#include <string>

namespace simba::cli {

// "ok", "warn", "fail".
const char* verdict_name(backend::Finding::Verdict v);

// The worst verdict of all; ok when there is none.
backend::Finding::Verdict overall(const backend::Diagnosis& found);

// 0 all ok, 1 any warn, 69 any fail.
int doctor_exit_code(const backend::Diagnosis& found);

// One line per finding, the verdict and the check in aligned columns:
//   ok    connection  sqlite:///var/lib/simba/simba.db opened
//   warn  clock       the backend's clock is ... — fix: synchronise ...
void print_findings_text(std::ostream& out, const backend::Diagnosis& found);

// {"backend": ..., "findings": [{"check", "verdict", "detail", "fix"}],
// "verdict": ..., "schema": 1}; fix is null when ok.
void print_findings_json(std::ostream& out, const std::string& backend,
                         const backend::Diagnosis& found);

} // namespace simba::cli
