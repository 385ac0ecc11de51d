#pragma once
// `simba status`'s table for people: one row per mutex, indented lines
// below it, laid out to fit the width it is given. On a terminal that is
// the terminal's (output_width); piped or with --wide, no limit: scripts
// and grep see every field whole.
#include "backend/backend.hpp"

#include <cstddef>
#include <ostream>
#include <string>

namespace simba::cli {

// No limit: every field whole.
constexpr size_t k_unlimited_width = 0;

// The width status lays its table out to: k_unlimited_width with `wide`
// or when stdout is not a terminal; else $COLUMNS when set to a number
// (as ls and many others honour it), else the terminal's (TIOCGWINSZ),
// else 80.
size_t output_width(bool wide);

// `width`: the widest a line may be (k_unlimited_width: no limit). The
// columns that can take it (mutex, holder, host, command) are cut, the
// widest first, each to no less than a few characters; a line still too
// long (a narrow terminal) is cut at the width. A cut field ends in "~".
// The lines under a row are broken (print_fitted).
void print_status_table(std::ostream& out, const backend::Listing& l, size_t width);

// `line` and a newline; longer than `width` (k_unlimited_width: no limit),
// broken after its commas into lines that fit, those after the first
// indented (a part still too long is cut).
void print_fitted(std::ostream& out, const std::string& line, size_t width);

} // namespace simba::cli
