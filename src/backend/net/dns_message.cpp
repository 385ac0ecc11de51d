// DNS messages, RFC 1035 §4 (dns_message.hpp).
#include "backend/net/dns_message.hpp"

#include <cctype>

namespace simba::backend::net {
namespace {

constexpr uint16_t k_class_in = 1;
constexpr uint16_t k_flag_response = 0x8000;
constexpr uint16_t k_flag_truncated = 0x0200;
constexpr uint16_t k_flag_recursion_desired = 0x0100;
constexpr size_t k_header = 12;
constexpr size_t k_max_name = 255;
constexpr int k_max_chain = 16; // CNAMEs followed within one answer

void put16(std::string& out, uint16_t v) {
  out.push_back(static_cast<char>(v >> 8));
  out.push_back(static_cast<char>(v & 0xff));
}

uint16_t get16(const std::string& m, size_t at) {
  return static_cast<uint16_t>(uint8_t(m[at]) << 8 | uint8_t(m[at + 1]));
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string without_final_dot(const std::string& name) {
  return !name.empty() && name.back() == '.' ? name.substr(0, name.size() - 1) : name;
}

// The name at `at` (labels, or a pointer to labels earlier: §4.1.4), as
// "a.b.c", lowercased; `at` moves past it. False when malformed, including
// a pointer loop (a pointer must point back).
bool read_name(const std::string& m, size_t& at, std::string& name) {
  name.clear();
  size_t pos = at;
  bool jumped = false;
  for (int hops = 0;; ++hops) {
    if (pos >= m.size() || hops > 128) return false;
    uint8_t len = uint8_t(m[pos]);
    if (len == 0) {
      if (!jumped) at = pos + 1;
      return name.size() <= k_max_name;
    }
    if ((len & 0xc0) == 0xc0) {
      if (pos + 1 >= m.size()) return false;
      size_t target = get16(m, pos) & 0x3fff;
      if (target >= pos) return false;
      if (!jumped) at = pos + 2;
      jumped = true;
      pos = target;
      continue;
    }
    if ((len & 0xc0) != 0 || pos + 1 + len > m.size()) return false;
    if (!name.empty()) name += '.';
    name += lower(m.substr(pos + 1, len));
    pos += 1 + len;
  }
}

struct Record {
  std::string owner;
  uint16_t type = 0;
  uint16_t klass = 0;
  std::string data; // rdata, or the target's name for a CNAME
};

bool read_record(const std::string& m, size_t& at, Record& r) {
  if (!read_name(m, at, r.owner) || at + 10 > m.size()) return false;
  r.type = get16(m, at);
  r.klass = get16(m, at + 2);
  size_t len = get16(m, at + 8); // after the TTL (4 bytes)
  at += 10;
  if (at + len > m.size()) return false;
  if (r.type == k_dns_cname) {
    size_t name_at = at;
    if (!read_name(m, name_at, r.data)) return false;
  } else {
    r.data = m.substr(at, len);
  }
  at += len;
  return true;
}

// The addresses of `name` in `answers`, following CNAMEs from it.
std::vector<std::string> addresses_of(const std::vector<Record>& answers, std::string name,
                                      uint16_t type) {
  size_t want = type == k_dns_a ? 4 : 16;
  std::vector<std::string> out;
  for (int hop = 0; hop <= k_max_chain; ++hop) {
    std::string next;
    for (const Record& r : answers) {
      if (r.owner != name || r.klass != k_class_in) continue;
      if (r.type == type && r.data.size() == want) out.push_back(r.data);
      if (r.type == k_dns_cname) next = r.data;
    }
    if (!out.empty() || next.empty()) break;
    name = next;
  }
  return out;
}

} // namespace

std::string encode_query(uint16_t id, const std::string& name, uint16_t type, std::string& out) {
  out.clear();
  put16(out, id);
  put16(out, k_flag_recursion_desired);
  put16(out, 1); // one question, no answer, authority or additional records
  put16(out, 0);
  put16(out, 0);
  put16(out, 0);
  const std::string n = without_final_dot(name);
  if (n.empty()) return "an empty name";
  for (size_t start = 0; start <= n.size();) {
    size_t dot = n.find('.', start);
    if (dot == std::string::npos) dot = n.size();
    size_t len = dot - start;
    if (len == 0) return "an empty label in \"" + name + "\"";
    if (len > 63) return "a label longer than 63 bytes in \"" + name + "\"";
    out.push_back(static_cast<char>(len));
    out.append(n, start, len);
    start = dot + 1;
  }
  out.push_back('\0');
  if (out.size() - k_header > k_max_name) return "a name longer than 255 bytes";
  put16(out, type);
  put16(out, k_class_in);
  return "";
}

DnsReply decode_reply(const std::string& m, uint16_t id, const std::string& name, uint16_t type) {
  DnsReply r;
  if (m.size() < k_header || get16(m, 0) != id) return r;
  uint16_t flags = get16(m, 2);
  if (!(flags & k_flag_response) || (flags & 0x7800) != 0) return r; // opcode QUERY only
  if (get16(m, 4) != 1) return r;
  size_t at = k_header;
  std::string qname;
  if (!read_name(m, at, qname) || at + 4 > m.size()) return r;
  const std::string asked = lower(without_final_dot(name));
  if (qname != asked || get16(m, at) != type || get16(m, at + 2) != k_class_in) return r;
  at += 4;
  r.truncated = flags & k_flag_truncated;
  r.rcode = flags & 0x000f;
  std::vector<Record> answers(get16(m, 6));
  for (Record& rec : answers)
    if (!read_record(m, at, rec)) {
      // A truncated answer may end mid-record: it is asked again over TCP.
      r.ours = r.truncated;
      return r;
    }
  r.ours = true;
  r.addresses = addresses_of(answers, asked, type);
  return r;
}

} // namespace simba::backend::net
