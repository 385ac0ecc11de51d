// Redis Cluster's addressing (backend/redis/cluster_slots.hpp): the hash
// slot of a key as Redis computes it, every key and channel of one mutex in
// one slot (lua/common.lua's layout), the slot map CLUSTER SLOTS answers and
// the redirections a node answers with.
#include "backend/redis/client.hpp"
#include "backend/redis/cluster_slots.hpp"

#include <doctest/doctest.h>

#include <hiredis/hiredis.h>

#include <memory>
#include <string>

using namespace simba::backend;
using namespace simba::backend::redis;

namespace {

// A reply parsed by hiredis from the bytes a server sends.
ReplyPtr parse_reply(const std::string& resp) {
  std::unique_ptr<redisReader, void (*)(redisReader*)> reader(redisReaderCreate(), redisReaderFree);
  REQUIRE(redisReaderFeed(reader.get(), resp.data(), resp.size()) == REDIS_OK);
  void* out = nullptr;
  REQUIRE(redisReaderGetReply(reader.get(), &out) == REDIS_OK);
  REQUIRE(out != nullptr);
  return ReplyPtr(static_cast<redisReply*>(out));
}

std::string bulk(const std::string& s) {
  return "$" + std::to_string(s.size()) + "\r\n" + s + "\r\n";
}

// One element of CLUSTER SLOTS: first, last, [host, port, id].
std::string range(int first, int last, const std::string& host, int port) {
  return "*3\r\n:" + std::to_string(first) + "\r\n:" + std::to_string(last) + "\r\n*3\r\n" +
         bulk(host) + ":" + std::to_string(port) + "\r\n" + bulk("id");
}

} // namespace

TEST_SUITE("backend::redis::cluster") {
  TEST_CASE("key_slot is Redis' CRC16 of the hash tag") {
    // The values Redis' own CLUSTER KEYSLOT gives (and the spec's test
    // vector: CRC16("123456789") = 0x31C3).
    CHECK(key_slot("123456789") == 0x31C3 % 16384);
    CHECK(key_slot("a") == 15495);
    CHECK(key_slot("b") == 3300);
    CHECK(key_slot("{user1000}.following") == key_slot("{user1000}.followers"));
    CHECK(key_slot("{user1000}.following") == key_slot("user1000"));
    CHECK(key_slot("foo{}{bar}") != key_slot("bar")); // an empty tag: the whole key
    CHECK(key_slot("foo{{bar}}zap") == key_slot("{bar"));
    CHECK(key_slot("foo{bar}{zap}") == key_slot("bar"));
  }

  TEST_CASE("tag_for_slot gives a tag of that slot") {
    for (int slot : {0, 1, 2059, 5460, 5461, 10922, 16383})
      CHECK(key_slot("simba:server{" + tag_for_slot(slot) + "}") == slot);
  }

  TEST_CASE("every key and channel of one mutex hashes to its slot") {
    RedisUri uri;
    uri.prefix = "p:";
    Client client(uri);
    // A mutex name holds no brace (core/names.cpp), so the hash tag is the
    // whole name; the prefix none either (uri_redis.cpp).
    for (std::string m : {std::string("m"), std::string("deploy/prod"), std::string("a.b_c:d@e-f"),
                          std::string(128, 'z')}) {
      std::string hash = client.hash_key(m);
      int slot = key_slot(hash);
      for (const char* tail : {":fence", ":waiters", ":who", ":history", ":once", "#0", "#7",
                               ":db0:released", ":db0:wake:123@host"})
        CHECK_MESSAGE(key_slot(hash + tail) == slot, m << tail);
    }
  }

  TEST_CASE("the slot map from CLUSTER SLOTS, with moves and range ends") {
    ReplyPtr r = parse_reply("*3\r\n" + range(0, 5460, "127.0.0.1", 7000) +
                       range(5461, 10922, "127.0.0.1", 7001) + range(10923, 16383, "", 7002));
    SlotMap map;
    REQUIRE(map.read(r.get(), ClusterNode{"10.0.0.9", 7002}));
    REQUIRE(map.owner(0) != nullptr);
    CHECK(map.owner(0)->name() == "127.0.0.1:7000");
    CHECK(map.owner(5461)->port == 7001);
    CHECK(map.owner(16383)->name() == "10.0.0.9:7002"); // "" is the node asked
    CHECK(map.masters().size() == 3);
    CHECK(map.range_ends_of("127.0.0.1:7001") == std::vector<int>{5461, 10922});
    map.move(2059, ClusterNode{"127.0.0.1", 7001});
    CHECK(map.owner(2059)->port == 7001);
    CHECK(map.range_ends_of("127.0.0.1:7001") == std::vector<int>{2059, 5461, 10922});
    CHECK(map.range_ends_of("127.0.0.1:7000") == std::vector<int>{0, 2058, 2060, 5460});
    // Not a slot map: the map stays as it was.
    CHECK_FALSE(map.read(parse_reply("-ERR This instance has cluster support disabled\r\n").get(),
                         ClusterNode{"h", 1}));
    CHECK(map.owner(0)->port == 7000);
  }

  TEST_CASE("MOVED, ASK and TRYAGAIN are read; other errors are no redirection") {
    Redirect m = read_redirect("MOVED 3999 127.0.0.1:6381");
    CHECK(m.kind == Redirect::Kind::moved);
    CHECK(m.slot == 3999);
    CHECK(m.node.name() == "127.0.0.1:6381");
    Redirect a = read_redirect("ASK 12 [::1]:7000");
    CHECK(a.kind == Redirect::Kind::ask);
    CHECK(a.node.host == "::1");
    CHECK(a.node.port == 7000);
    CHECK(read_redirect("MOVED 42 :7001").node.host.empty()); // the same host
    CHECK(read_redirect("TRYAGAIN Multiple keys request during rehashing of slot").kind ==
          Redirect::Kind::try_again);
    CHECK(read_redirect("NOSCRIPT No matching script").kind == Redirect::Kind::none);
    CHECK(read_redirect("MOVED x").kind == Redirect::Kind::none);
    CHECK(read_redirect("MOVED 99999 h:1").kind == Redirect::Kind::none);
  }
}
