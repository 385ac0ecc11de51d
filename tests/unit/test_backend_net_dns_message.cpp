// DNS messages (backend/net/dns_message.hpp) against byte vectors written by
// hand from RFC 1035 §4.1: the query simba sends, and answers it must take
// (a CNAME chain with compressed names) or ignore (another id, another
// question, not a response, a pointer loop).
#include "backend/net/dns_message.hpp"

#include <doctest/doctest.h>

#include <initializer_list>
#include <string>

using namespace simba::backend::net;

namespace {

std::string bytes(std::initializer_list<int> b) {
  std::string s;
  for (int c : b) s.push_back(static_cast<char>(c));
  return s;
}

// The bytes are laid out as the RFC's diagrams are:
// clang-format off
// The query for db.example, type A, id 0x1234: header (id, flags RD, one
// question), then the name as labels, QTYPE 1, QCLASS 1 (IN).
const std::string k_query = bytes({
    0x12, 0x34, 0x01, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // header
    2, 'd', 'b', 7, 'e', 'x', 'a', 'm', 'p', 'l', 'e', 0,                    // offset 12
    0x00, 0x01, 0x00, 0x01});

// Its answer: flags QR RD RA (0x8180), two answers: db.example CNAME
// pg.example (the name a pointer to offset 12; the target "pg" then a
// pointer to "example" at offset 15), then pg.example (a pointer to offset
// 40, the CNAME's rdata) A 10.0.0.5.
std::string answer(int id_low = 0x34, int flags_high = 0x81, int rcode = 0) {
  return bytes({
      0x12, id_low, flags_high, 0x80 | rcode, 0x00, 0x01, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00,
      2, 'd', 'b', 7, 'e', 'x', 'a', 'm', 'p', 'l', 'e', 0, 0x00, 0x01, 0x00, 0x01,
      0xc0, 0x0c, 0x00, 0x05, 0x00, 0x01, 0x00, 0x00, 0x00, 0x3c, 0x00, 0x05, // offset 28
      2, 'p', 'g', 0xc0, 0x0f,                                                // offset 40
      0xc0, 0x28, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00, 0x00, 0x3c, 0x00, 0x04, // offset 45
      10, 0, 0, 5});
}
// clang-format on

} // namespace

TEST_SUITE("backend::net::dns_message") {
  TEST_CASE("the query is RFC 1035's: one question, recursion desired") {
    std::string out;
    CHECK(encode_query(0x1234, "db.example", k_dns_a, out).empty());
    CHECK(out == k_query);
    CHECK(encode_query(0x1234, "db.example.", k_dns_a, out).empty()); // absolute: the same
    CHECK(out == k_query);
    CHECK(encode_query(0xbeef, "db.example", k_dns_aaaa, out).empty());
    CHECK(out.substr(0, 2) == bytes({0xbe, 0xef}));
    CHECK(out.substr(out.size() - 4) == bytes({0x00, 28, 0x00, 0x01}));
  }

  TEST_CASE("a name that cannot be asked is refused") {
    std::string out;
    CHECK(encode_query(1, "", k_dns_a, out) == "an empty name");
    CHECK(encode_query(1, "db..example", k_dns_a, out).find("empty label") != std::string::npos);
    CHECK(encode_query(1, std::string(64, 'a') + ".example", k_dns_a, out).find("63 bytes") !=
          std::string::npos);
    CHECK(encode_query(1, std::string(63, 'a') + ".example", k_dns_a, out).empty());
    std::string long_name;
    for (int i = 0; i < 5; ++i) long_name += std::string(60, 'a') + ".";
    CHECK(encode_query(1, long_name + "example", k_dns_a, out).find("255") != std::string::npos);
  }

  TEST_CASE("an answer's CNAME chain is followed to the address") {
    DnsReply r = decode_reply(answer(), 0x1234, "db.example", k_dns_a);
    CHECK(r.ours);
    CHECK_FALSE(r.truncated);
    CHECK(r.rcode == 0);
    REQUIRE(r.addresses.size() == 1);
    CHECK(r.addresses[0] == bytes({10, 0, 0, 5}));
    // Names compare case-insensitively (a server may echo 0x20 casing).
    CHECK(decode_reply(answer(), 0x1234, "DB.Example.", k_dns_a).ours);
  }

  TEST_CASE("a reply to another question is not ours") {
    CHECK_FALSE(decode_reply(answer(0x35), 0x1234, "db.example", k_dns_a).ours); // another id
    CHECK_FALSE(decode_reply(answer(), 0x1234, "pg.example", k_dns_a).ours);     // another name
    CHECK_FALSE(decode_reply(answer(), 0x1234, "db.example", k_dns_aaaa).ours);  // another type
    CHECK_FALSE(decode_reply(answer(0x34, 0x01), 0x1234, "db.example", k_dns_a).ours); // a query
    CHECK_FALSE(decode_reply(k_query, 0x1234, "db.example", k_dns_a).ours);
    CHECK_FALSE(decode_reply(answer().substr(0, 20), 0x1234, "db.example", k_dns_a).ours);
  }

  TEST_CASE("truncated, NXDOMAIN and SERVFAIL are told apart") {
    // TC (0x02 in the high flag byte), the answer section cut short.
    DnsReply tc = decode_reply(answer(0x34, 0x83).substr(0, 35), 0x1234, "db.example", k_dns_a);
    CHECK(tc.ours);
    CHECK(tc.truncated);
    DnsReply nx = decode_reply(answer(0x34, 0x81, 3), 0x1234, "db.example", k_dns_a);
    CHECK(nx.rcode == k_rcode_no_such_name);
    CHECK(decode_reply(answer(0x34, 0x81, 2), 0x1234, "db.example", k_dns_a).rcode ==
          k_rcode_server_failure);
  }

  TEST_CASE("a compression pointer that loops is malformed, not followed forever") {
    std::string m = answer();
    m[40] = static_cast<char>(0xc0); // the CNAME's target points at itself
    m[41] = 40;
    CHECK_FALSE(decode_reply(m, 0x1234, "db.example", k_dns_a).ours);
  }

  TEST_CASE("only records of the type asked count, of their size") {
    std::string m = answer();
    m[48] = 28; // the A record (type at offset 47) made AAAA, its rdata still 4 bytes
    DnsReply r = decode_reply(m, 0x1234, "db.example", k_dns_a);
    CHECK(r.ours);
    CHECK(r.addresses.empty());
  }
}
