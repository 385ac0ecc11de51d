// The resolver's inputs (backend/net/address.hpp, hosts_file.hpp,
// resolv_conf.hpp): addresses taken as they are, /etc/hosts lines and
// resolv.conf as glibc reads them, the names a search list makes; then
// resolve() itself on what needs no DNS server (tests/e2e/test_resolver_dns.sh
// plays a DNS server).
#include "backend/net/address.hpp"
#include "backend/net/hosts_file.hpp"
#include "backend/net/resolv_conf.hpp"
#include "backend/net/resolve.hpp"
#include "sys/clock.hpp"

#include <doctest/doctest.h>

#include <net/if.h>
#include <netinet/in.h>
#include <string>
#include <vector>

using namespace simba::backend::net;

namespace {

std::string shown(const sockaddr_storage& a) {
  int port = a.ss_family == AF_INET ? ntohs(reinterpret_cast<const sockaddr_in*>(&a)->sin_port)
                                    : ntohs(reinterpret_cast<const sockaddr_in6*>(&a)->sin6_port);
  return address_text(a) + " port " + std::to_string(port);
}

std::vector<std::string> shown(const std::vector<sockaddr_storage>& list) {
  std::vector<std::string> out;
  for (const sockaddr_storage& a : list) out.push_back(address_text(a));
  return out;
}

} // namespace

TEST_SUITE("backend::net::resolve") {
  TEST_CASE("an address is taken as it is, IPv6 with its scope") {
    sockaddr_storage a;
    REQUIRE(parse_address("10.0.0.1", 5432, a));
    CHECK(shown(a) == "10.0.0.1 port 5432");
    REQUIRE(parse_address("::1", 6379, a));
    CHECK(shown(a) == "::1 port 6379");
    REQUIRE(parse_address("[2001:db8::7]", 1, a));
    CHECK(address_text(a) == "2001:db8::7");
    REQUIRE(parse_address("fe80::1%3", 1, a));
    CHECK(address_text(a) == "fe80::1%3");
    REQUIRE(parse_address("fe80::1%lo", 1, a));
    CHECK(address_text(a) == "fe80::1%" + std::to_string(if_nametoindex("lo")));
    CHECK_FALSE(parse_address("fe80::1%no-such-interface", 1, a));
    CHECK_FALSE(parse_address("db.example", 1, a));
    CHECK_FALSE(parse_address("10.0.1", 1, a)); // inet_aton's short forms are names here
    CHECK(address_length(a) > 0);
  }

  TEST_CASE("/etc/hosts: every line naming the host, in order, aliases and case alike") {
    const std::string hosts = "# comment\n"
                              "127.0.0.1\tlocalhost\n"
                              "::1 localhost ip6-localhost # loopback\n"
                              "10.0.0.5 db.example DB # the database\n"
                              "#10.0.0.6 db.example\n"
                              "not-an-address db.example\n"
                              "10.0.0.7 other.example\n";
    CHECK(shown(hosts_lookup(hosts, "localhost", 1)) ==
          std::vector<std::string>{"127.0.0.1", "::1"});
    CHECK(shown(hosts_lookup(hosts, "db", 1)) == std::vector<std::string>{"10.0.0.5"});
    CHECK(shown(hosts_lookup(hosts, "DB.Example.", 1)) == std::vector<std::string>{"10.0.0.5"});
    CHECK(hosts_lookup(hosts, "example", 1).empty());
    CHECK(hosts_lookup("", "db.example", 1).empty());
  }

  TEST_CASE("resolv.conf: servers in order (three at most), search, options") {
    ResolvConf c = parse_resolv_conf("# generated\n"
                                     "nameserver 10.0.0.53\n"
                                     "nameserver 2001:db8::53 ; second\n"
                                     "nameserver bogus\n"
                                     "nameserver 10.0.0.54\n"
                                     "nameserver 10.0.0.55\n"
                                     "domain corp.example\n"
                                     "search a.example b.example.\n"
                                     "options ndots:2 timeout:1 attempts:3 rotate\n");
    CHECK(shown(c.servers) == std::vector<std::string>{"10.0.0.53", "2001:db8::53", "10.0.0.54"});
    CHECK(shown(c.servers[0]) == "10.0.0.53 port 53");
    CHECK(c.search == std::vector<std::string>{"a.example", "b.example."}); // the last one wins
    CHECK(c.ndots == 2);
    CHECK(c.timeout_s == 1);
    CHECK(c.attempts == 3);
  }

  TEST_CASE("resolv.conf: glibc's defaults, and options clamped") {
    ResolvConf c = parse_resolv_conf("");
    CHECK(shown(c.servers) == std::vector<std::string>{"127.0.0.1"});
    CHECK(c.search.empty());
    CHECK(c.ndots == 1);
    CHECK(c.timeout_s == 5);
    CHECK(c.attempts == 2);
    c = parse_resolv_conf(
        "search a.example\ndomain corp.example\noptions timeout:0 attempts:99 ndots:40\n");
    CHECK(c.search == std::vector<std::string>{"corp.example"});
    CHECK(c.timeout_s == 1);
    CHECK(c.attempts == 5);
    CHECK(c.ndots == 15);
  }

  TEST_CASE("the names asked: ndots decides whether the search list comes first") {
    ResolvConf c = parse_resolv_conf("search a.example b.example.\n");
    CHECK(candidate_names("db", c) ==
          std::vector<std::string>{"db.a.example", "db.b.example", "db"});
    CHECK(candidate_names("db.corp", c) ==
          std::vector<std::string>{"db.corp", "db.corp.a.example", "db.corp.b.example"});
    CHECK(candidate_names("db.corp.", c) == std::vector<std::string>{"db.corp"});
    c.ndots = 2;
    CHECK(candidate_names("db.corp", c).back() == "db.corp");
  }

  TEST_CASE("resolve(): an address, localhost, no DNS needed") {
    std::vector<sockaddr_storage> out;
    int64_t deadline = simba::sys::boottime_ms() + 1000;
    CHECK(resolve("192.0.2.1", 80, deadline, out).empty());
    CHECK(shown(out) == std::vector<std::string>{"192.0.2.1"});
    CHECK(resolve("localhost", 80, deadline, out).empty());
    CHECK_FALSE(out.empty());
    for (const sockaddr_storage& a : out) {
      std::string t = address_text(a);
      CHECK((t.rfind("127.", 0) == 0 || t == "::1"));
    }
    CHECK(resolve("db..example", 80, deadline, out).find("could not resolve host db..example: ") ==
          0);
  }
}
