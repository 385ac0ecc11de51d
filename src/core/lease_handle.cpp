#include "core/lease_handle.hpp"

#include "core/error.hpp"
#include "core/names.hpp"
#include "core/slots.hpp"

#include <vector>

namespace simba::core {

namespace {

constexpr std::string_view k_prefix = "simba1.";
constexpr char k_alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

std::string base64url(std::string_view in) {
  std::string out;
  uint32_t bits = 0;
  int count = 0;
  for (unsigned char c : in) {
    bits = (bits << 8) | c;
    count += 8;
    while (count >= 6) {
      count -= 6;
      out += k_alphabet[(bits >> count) & 63];
    }
  }
  if (count > 0) out += k_alphabet[(bits << (6 - count)) & 63];
  return out;
}

int digit_of(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '-') return 62;
  if (c == '_') return 63;
  return -1;
}

[[noreturn]] void malformed(const std::string& why) {
  throw UsageError("--lease: not a lease handle of simba acquire (" + why + ")");
}

std::string unbase64url(std::string_view in) {
  std::string out;
  uint32_t bits = 0;
  int count = 0;
  for (char c : in) {
    int d = digit_of(c);
    if (d < 0) malformed("a character outside base64url");
    bits = (bits << 6) | uint32_t(d);
    count += 6;
    if (count >= 8) {
      count -= 8;
      out += char((bits >> count) & 0xff);
    }
  }
  if (count >= 6) malformed("truncated");
  // The last character's unused bits are 0 in what we encode: otherwise
  // two texts would be one handle, and a changed last character unnoticed.
  if ((bits & ((1u << count) - 1)) != 0) malformed("damaged");
  return out;
}

uint64_t parse_number(const std::string& s, const char* what) {
  if (s.empty() || s.size() > 19 || s.find_first_not_of("0123456789") != std::string::npos)
    malformed(std::string("bad ") + what);
  return std::stoull(s);
}

} // namespace

// The last line: a check of the others, so that a handle cut short or
// mangled (a copy and paste, a log line wrapped) is refused, not misread.
std::string check_of(std::string_view fields) { return backend_fingerprint(fields).substr(0, 8); }

std::string encode_lease_handle(const LeaseHandle& h) {
  std::string payload = h.backend + "\n" + h.mutex + "\n" + h.owner_id + "\n" +
                        std::to_string(h.token) + "\n" + std::to_string(h.ttl_ms) + "\n" +
                        std::to_string(h.transition_ms);
  if (h.slots > 1) payload += "\n" + std::to_string(h.slot) + "/" + std::to_string(h.slots);
  return std::string(k_prefix) + base64url(payload + "\n" + check_of(payload));
}

LeaseHandle decode_lease_handle(std::string_view text) {
  if (text.empty()) malformed("empty");
  if (text.substr(0, k_prefix.size()) != k_prefix) malformed("it does not begin with simba1.");
  std::string payload = unbase64url(text.substr(k_prefix.size()));
  size_t last = payload.rfind('\n');
  if (last == std::string::npos || payload.substr(last + 1) != check_of(payload.substr(0, last)))
    malformed("damaged or cut short");
  payload.resize(last);
  std::vector<std::string> f(1);
  for (char c : payload) {
    if (c == '\n')
      f.emplace_back();
    else
      f.back() += c;
  }
  if (f.size() != 6 && f.size() != 7) malformed("wrong number of fields");
  LeaseHandle h;
  h.backend = f[0];
  if (h.backend.size() != 16 ||
      h.backend.find_first_not_of("0123456789abcdef") != std::string::npos)
    malformed("bad backend fingerprint");
  h.mutex = f[1];
  h.owner_id = f[2];
  try {
    validate_mutex_name(h.mutex);
    if (h.owner_id.size() < k_instance_chars + 1 || h.owner_id.size() > k_max_name)
      malformed("bad owner id");
    validate_contender_label(label_of(h.owner_id));
  } catch (const UsageError&) {
    malformed("bad mutex or owner id");
  }
  if (label_of(h.owner_id).size() == h.owner_id.size()) malformed("bad owner id");
  h.token = parse_number(f[3], "fencing token");
  h.ttl_ms = int64_t(parse_number(f[4], "ttl"));
  h.transition_ms = int64_t(parse_number(f[5], "transition"));
  if (h.token == 0 || h.ttl_ms <= 0 || h.transition_ms <= 0) malformed("zero field");
  if (f.size() == 7) { // --slots: "slot/N"
    size_t slash = f[6].find('/');
    if (slash == std::string::npos) malformed("bad slot");
    uint64_t slot = parse_number(f[6].substr(0, slash), "slot");
    uint64_t slots = parse_number(f[6].substr(slash + 1), "slots");
    if (slots < 2 || slots > uint64_t(k_max_slots) || slot >= slots) malformed("bad slot");
    h.slot = int(slot);
    h.slots = int(slots);
  }
  return h;
}

std::string lease_name(const LeaseHandle& h) {
  return h.slots > 1 ? slot_row(h.mutex, h.slot) : h.mutex;
}

std::string backend_fingerprint(std::string_view describe) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (unsigned char c : describe) {
    hash ^= c;
    hash *= 0x100000001b3ull;
  }
  static const char hex[] = "0123456789abcdef";
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i, hash >>= 4) out[size_t(i)] = hex[hash & 15];
  return out;
}

} // namespace simba::core
