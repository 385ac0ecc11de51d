#pragma once
// DNS messages as RFC 1035 §4 lays them out: the one question simba asks
// (a name's A or AAAA records, recursion desired) and the answer to it,
// checked against that question. Bytes only: no socket here (dns_client).
#include <cstdint>
#include <string>
#include <vector>

namespace simba::backend::net {

constexpr uint16_t k_dns_a = 1;
constexpr uint16_t k_dns_cname = 5;
constexpr uint16_t k_dns_aaaa = 28;

constexpr int k_rcode_no_error = 0;
constexpr int k_rcode_server_failure = 2;
constexpr int k_rcode_no_such_name = 3;

// The query for `name` (no trailing dot needed) and `type`, with message id
// `id`, into `out`; "" or why the name cannot be asked (an empty label, a
// label over 63 bytes, a name over 255).
std::string encode_query(uint16_t id, const std::string& name, uint16_t type, std::string& out);

struct DnsReply {
  // The message answers our question: our id, a response, our one question
  // (name compared case-insensitively, type, class IN). Anything else is
  // ignored as if it never came (a late answer, a spoofing attempt).
  bool ours = false;
  bool truncated = false; // TC: ask again over TCP
  int rcode = k_rcode_no_error;
  // The A (4 bytes each) or AAAA (16) records of the name asked, or of the
  // end of the CNAME chain the answer section leads to from it.
  std::vector<std::string> addresses;
};

// `msg` read as the answer to query `id` for `name` and `type`. A message
// that cannot be parsed is not ours.
DnsReply decode_reply(const std::string& msg, uint16_t id, const std::string& name, uint16_t type);

} // namespace simba::backend::net
