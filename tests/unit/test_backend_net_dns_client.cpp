// One DNS server asked (backend/net/dns_client.hpp), against a DNS server
// played here on loopback (UDP and TCP on one port, a thread): A and AAAA
// both taken, a reply with another id ignored, a truncated answer asked
// again over TCP, silence given up on at the time given, NXDOMAIN and
// SERVFAIL told apart.
#include "backend/net/address.hpp"
#include "backend/net/dns_client.hpp"
#include "sys/clock.hpp"
#include "sys/fd.hpp"

#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <atomic>
#include <functional>
#include <netinet/in.h>
#include <poll.h>
#include <string>
#include <sys/socket.h>
#include <thread>
#include <vector>

using namespace simba::backend::net;
using simba::sys::Fd;

namespace {

std::string u16(int v) { return {static_cast<char>(v >> 8), static_cast<char>(v & 0xff)}; }

// The answer to `query` (its id and question echoed) with `flags` and one
// record per rdata, each of the type asked, owned by the question's name.
std::string reply_to(const std::string& query, int flags, const std::vector<std::string>& rdata,
                     int id_delta = 0) {
  int id = (uint8_t(query[0]) << 8 | uint8_t(query[1])) + id_delta;
  std::string qtype = query.substr(query.size() - 4, 2);
  std::string m = u16(id & 0xffff) + u16(flags) + u16(1) + u16(int(rdata.size())) + u16(0) + u16(0);
  m += query.substr(12);
  for (const std::string& r : rdata)
    m += u16(0xc00c) + qtype + u16(1) + u16(0) + u16(60) + u16(int(r.size())) + r;
  return m;
}

bool is_aaaa(const std::string& query) { return query[query.size() - 3] == 28; }

const std::string k_v4 = {10, 0, 0, 5};
const std::string k_v6 = {0x20, 0x01, 0x0d, static_cast<char>(0xb8), 0, 0, 0, 0, 0, 0, 0, 0, 0,
                          0,    0,    5};

// What the server sends back for one query (UDP, or TCP when `tcp`).
using Behaviour = std::function<std::vector<std::string>(const std::string& query, bool tcp)>;

class FakeDns {
public:
  explicit FakeDns(Behaviour b) : m_behaviour(std::move(b)) {
    for (int tries = 0; tries < 20 && !m_tcp; ++tries) bind_both();
    REQUIRE(m_tcp);
    m_thread = std::thread([this] { serve(); });
  }
  ~FakeDns() {
    m_stop = true;
    m_thread.join();
  }
  sockaddr_storage address() const {
    sockaddr_storage a;
    parse_address("127.0.0.1", m_port, a);
    return a;
  }
  int tcp_queries() const { return m_tcp_queries; }

private:
  void bind_both() {
    m_udp.reset(::socket(AF_INET, SOCK_DGRAM, 0));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    REQUIRE(::bind(m_udp.get(), reinterpret_cast<sockaddr*>(&a), len) == 0);
    ::getsockname(m_udp.get(), reinterpret_cast<sockaddr*>(&a), &len);
    m_port = ntohs(a.sin_port);
    Fd tcp(::socket(AF_INET, SOCK_STREAM, 0));
    int one = 1;
    ::setsockopt(tcp.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(tcp.get(), reinterpret_cast<sockaddr*>(&a), len) == 0 && ::listen(tcp.get(), 4) == 0)
      m_tcp = std::move(tcp);
  }

  void serve() {
    while (!m_stop) {
      pollfd p[2] = {{m_udp.get(), POLLIN, 0}, {m_tcp.get(), POLLIN, 0}};
      if (::poll(p, 2, 20) <= 0) continue;
      if (p[0].revents) serve_udp();
      if (p[1].revents) serve_tcp();
    }
  }

  void serve_udp() {
    char buf[512];
    sockaddr_storage from;
    socklen_t len = sizeof from;
    ssize_t n =
        ::recvfrom(m_udp.get(), buf, sizeof buf, 0, reinterpret_cast<sockaddr*>(&from), &len);
    if (n <= 0) return;
    for (const std::string& r : m_behaviour(std::string(buf, size_t(n)), false))
      ::sendto(m_udp.get(), r.data(), r.size(), 0, reinterpret_cast<sockaddr*>(&from), len);
  }

  void serve_tcp() {
    Fd c(::accept(m_tcp.get(), nullptr, nullptr));
    unsigned char len[2];
    char buf[512];
    if (::recv(c.get(), len, 2, MSG_WAITALL) != 2) return;
    size_t want = size_t(len[0]) << 8 | len[1];
    if (want > sizeof buf || ::recv(c.get(), buf, want, MSG_WAITALL) != ssize_t(want)) return;
    ++m_tcp_queries;
    for (const std::string& r : m_behaviour(std::string(buf, want), true)) {
      std::string framed = u16(int(r.size())) + r;
      ::send(c.get(), framed.data(), framed.size(), MSG_NOSIGNAL);
    }
  }

  Behaviour m_behaviour;
  Fd m_udp, m_tcp;
  int m_port = 0;
  std::atomic<bool> m_stop{false};
  std::atomic<int> m_tcp_queries{0};
  std::thread m_thread;
};

DnsAnswer ask(const FakeDns& server, int64_t ms = 2000) {
  return ask_server(server.address(), "db.example", simba::sys::boottime_ms() + ms);
}

} // namespace

TEST_SUITE("backend::net::dns_client") {
  TEST_CASE("A and AAAA are both asked and both taken, A first") {
    FakeDns dns([](const std::string& q, bool) {
      return std::vector<std::string>{reply_to(q, 0x8180, {is_aaaa(q) ? k_v6 : k_v4})};
    });
    DnsAnswer a = ask(dns);
    CHECK(a.kind == DnsAnswer::Kind::addresses);
    CHECK(a.addresses == std::vector<std::string>{k_v4, k_v6});
  }

  TEST_CASE("a reply with another id is ignored; the answer after it is taken") {
    FakeDns dns([](const std::string& q, bool) {
      std::string bogus = {10, 9, 9, 9};
      return std::vector<std::string>{reply_to(q, 0x8180, {bogus}, 1),
                                      reply_to(q, 0x8180, {is_aaaa(q) ? k_v6 : k_v4})};
    });
    DnsAnswer a = ask(dns);
    CHECK(a.addresses == std::vector<std::string>{k_v4, k_v6});
  }

  TEST_CASE("a truncated UDP answer is asked again over TCP") {
    FakeDns dns([](const std::string& q, bool tcp) {
      if (!tcp && !is_aaaa(q)) return std::vector<std::string>{reply_to(q, 0x8380, {})}; // TC
      return std::vector<std::string>{reply_to(q, 0x8180, {is_aaaa(q) ? k_v6 : k_v4})};
    });
    DnsAnswer a = ask(dns);
    CHECK(a.addresses == std::vector<std::string>{k_v4, k_v6});
    CHECK(dns.tcp_queries() == 1);
  }

  TEST_CASE("a silent server is given up on at the time given") {
    FakeDns dns([](const std::string&, bool) { return std::vector<std::string>{}; });
    int64_t start = simba::sys::boottime_ms();
    DnsAnswer a = ask(dns, 300);
    int64_t took = simba::sys::boottime_ms() - start;
    CHECK(a.kind == DnsAnswer::Kind::no_answer);
    CHECK(took >= 290);
    CHECK(took < 1000);
  }

  TEST_CASE("NXDOMAIN, no data and SERVFAIL are told apart") {
    FakeDns nx([](const std::string& q, bool) {
      return std::vector<std::string>{reply_to(q, 0x8183, {})};
    });
    CHECK(ask(nx).kind == DnsAnswer::Kind::no_such_name);
    FakeDns empty([](const std::string& q, bool) {
      return std::vector<std::string>{reply_to(q, 0x8180, {})};
    });
    CHECK(ask(empty).kind == DnsAnswer::Kind::no_data);
    FakeDns broken([](const std::string& q, bool) {
      return std::vector<std::string>{reply_to(q, 0x8182, {})};
    });
    DnsAnswer a = ask(broken);
    CHECK(a.kind == DnsAnswer::Kind::failed);
    CHECK(a.why == "SERVFAIL");
  }
}
