#include "core/names.hpp"

#include "core/error.hpp"

#include <cstdio>

namespace simba::core {

namespace {

// For an error message: escaped, and cut after 40 bytes.
std::string printable(std::string_view s) {
  return escape_control(s.substr(0, 40)) + (s.size() > 40 ? "..." : "");
}

} // namespace

void validate_mutex_name(std::string_view name) {
  if (name.empty()) throw UsageError("mutex name is empty");
  if (name.size() > k_max_name) {
    throw UsageError("mutex name is longer than 128 bytes: '" + printable(name) + "'");
  }
  for (unsigned char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == ':' || c == '/' || c == '@' || c == '-';
    if (!ok) {
      throw UsageError("invalid mutex name '" + printable(name) +
                       "': only letters, digits and . _ : / @ - are allowed");
    }
  }
}

void validate_contender_label(std::string_view label) {
  if (label.empty()) throw UsageError("--contender-id is empty");
  if (label.size() > k_max_label) {
    throw UsageError("--contender-id is longer than " + std::to_string(k_max_label) +
                     " bytes (the stored owner id adds 17 to it, up to 128): '" + printable(label) +
                     "'");
  }
  for (unsigned char c : label) {
    if (c <= 0x20 || c >= 0x7f) {
      throw UsageError("invalid --contender-id '" + printable(label) +
                       "': printable characters without spaces only");
    }
  }
}

std::string escape_control(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (unsigned char c : s) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c >= 0x20 && c < 0x7f) {
      out += char(c);
    } else {
      char buf[8];
      snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  return out;
}

std::string unescape_control(std::string_view s) {
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\') {
      out += s[i];
    } else if (i + 1 < s.size() && s[i + 1] == '\\') {
      out += '\\';
      ++i;
    } else if (i + 3 < s.size() && s[i + 1] == 'x' && hex(s[i + 2]) >= 0 && hex(s[i + 3]) >= 0) {
      out += char(hex(s[i + 2]) * 16 + hex(s[i + 3]));
      i += 3;
    } else {
      throw UsageError("invalid escape in '" + escape_control(s) + "': use \\xNN or \\\\");
    }
  }
  return out;
}

std::string default_contender_label(long pid, std::string_view host) {
  std::string head = std::to_string(pid) + "@";
  std::string h;
  for (unsigned char c : host.substr(0, k_max_label - head.size()))
    h += (c > 0x20 && c < 0x7f) ? char(c) : '_';
  if (h.empty()) h = "localhost";
  return head + h;
}

std::string fit_label(std::string_view text) {
  constexpr std::string_view cut = "...";
  std::string out;
  if (text.size() > k_max_label) {
    out = cut;
    text = text.substr(text.size() - (k_max_label - cut.size()));
  }
  for (unsigned char c : text) out += (c > 0x20 && c < 0x7f) ? char(c) : '_';
  return out;
}

std::string ci_job_label(const std::function<std::string(const char*)>& env) {
  if (env("GITHUB_ACTIONS") == "true") {
    std::string repo = env("GITHUB_REPOSITORY"), run = env("GITHUB_RUN_ID"),
                job = env("GITHUB_JOB");
    if (!repo.empty() && !run.empty() && !job.empty())
      return fit_label(repo + "#" + run + "/" + job);
  }
  if (env("GITLAB_CI") == "true") return fit_label(env("CI_JOB_URL"));
  return "";
}

std::string make_owner_id(std::string_view label, uint64_t instance) {
  char tail[k_instance_chars + 1];
  snprintf(tail, sizeof tail, "#%016llx", static_cast<unsigned long long>(instance));
  return std::string(label) + tail;
}

std::string_view label_of(std::string_view owner_id) {
  if (owner_id.size() <= k_instance_chars) return owner_id;
  std::string_view tail = owner_id.substr(owner_id.size() - k_instance_chars);
  if (tail[0] != '#') return owner_id;
  for (char c : tail.substr(1)) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return owner_id;
  }
  return owner_id.substr(0, owner_id.size() - k_instance_chars);
}

} // namespace simba::core
