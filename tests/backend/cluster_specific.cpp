// Checks that only concern a Redis Cluster (docs/backends/redis.md "Redis Cluster"): the
// wrong-node replies. One Backend keeps its slot map while the mutex's slot
// moves under it (moved here by hand, as `redis-cli --cluster reshard`
// does: SETSLOT IMPORTING / MIGRATING, MIGRATE, SETSLOT NODE), so its next
// call reaches the old master: during the migration that master answers
// ASK, after it MOVED, and the call must still reach the lease. They run
// when the suite runs against a cluster (SIMBA_TEST_BACKEND=redis+cluster:
// conformance/redis-cluster) and are skipped otherwise.
#include "support.hpp"

#include <doctest/doctest.h>

#include <hiredis/hiredis.h>

#include <memory>
#include <string>
#include <vector>

using simba::backend::Reply;
using simba::test::backend_uri;
using simba::test::k_timeout;
using simba::test::open_test_backend;
using simba::test::require_ok;
using simba::test::unique_mutex;

namespace {

#define SKIP_UNLESS_CLUSTER()                                                                      \
  if (backend_uri().find("+cluster:") == std::string::npos) {                                      \
    FAIL("a cluster-only case ran against " << backend_uri()                                       \
                                            << " (tests/backend/cluster* are filtered out)");      \
  }

struct ReplyFree {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
using ReplyPtr = std::unique_ptr<redisReply, ReplyFree>;
struct ContextFree {
  void operator()(redisContext* c) const { redisFree(c); }
};

// One cluster node, spoken to directly (no redirection followed).
class Node {
public:
  explicit Node(int port) : m_port(port), m_ctx(redisConnect("127.0.0.1", port)) {
    REQUIRE(m_ctx);
    REQUIRE(m_ctx->err == 0);
  }
  int port() const { return m_port; }
  ReplyPtr command(const std::vector<std::string>& args) {
    std::vector<const char*> argv;
    std::vector<size_t> lens;
    for (const std::string& a : args) {
      argv.push_back(a.data());
      lens.push_back(a.size());
    }
    ReplyPtr r(static_cast<redisReply*>(
        redisCommandArgv(m_ctx.get(), int(args.size()), argv.data(), lens.data())));
    REQUIRE(r);
    return r;
  }
  std::string text(const std::vector<std::string>& args) {
    ReplyPtr r = command(args);
    return r->str ? std::string(r->str, r->len) : std::to_string(r->integer);
  }

private:
  int m_port;
  std::unique_ptr<redisContext, ContextFree> m_ctx;
};

// The ports of the URI's nodes: redis+cluster://127.0.0.1:P1,127.0.0.1:P2,...
std::vector<int> node_ports() {
  std::string u = backend_uri();
  u = u.substr(u.find("://") + 3);
  u = u.substr(0, u.find_first_of("/?"));
  std::vector<int> ports;
  size_t pos = 0;
  while (pos <= u.size()) {
    size_t comma = std::min(u.find(',', pos), u.size());
    std::string node = u.substr(pos, comma - pos);
    ports.push_back(std::stoi(node.substr(node.rfind(':') + 1)));
    pos = comma + 1;
  }
  return ports;
}

// The mutex's slot and the masters involved in moving it.
struct Move {
  std::vector<std::unique_ptr<Node>> nodes;
  Node* source = nullptr;
  Node* target = nullptr;
  std::string slot;

  explicit Move(const std::string& mutex) {
    for (int p : node_ports()) nodes.push_back(std::make_unique<Node>(p));
    // "{NAME}" has the slot of every key of mutex NAME.
    slot = std::to_string(nodes[0]->command({"CLUSTER", "KEYSLOT", "{" + mutex + "}"})->integer);
    for (auto& n : nodes) {
      ReplyPtr r = n->command({"EXISTS", "{" + mutex + "}"});
      if (r->type == REDIS_REPLY_INTEGER) source = n.get(); // not MOVED: it serves the slot
    }
    REQUIRE(source);
    for (auto& n : nodes)
      if (n.get() != source) target = n.get();
    REQUIRE(target);
  }
  // IMPORTING on the target, MIGRATING on the source, the keys over.
  void migrate_keys() {
    CHECK(target->text({"CLUSTER", "SETSLOT", slot, "IMPORTING",
                        source->text({"CLUSTER", "MYID"})}) == "OK");
    CHECK(source->text({"CLUSTER", "SETSLOT", slot, "MIGRATING",
                        target->text({"CLUSTER", "MYID"})}) == "OK");
    ReplyPtr keys = source->command({"CLUSTER", "GETKEYSINSLOT", slot, "1000"});
    REQUIRE(keys->type == REDIS_REPLY_ARRAY);
    REQUIRE(keys->elements > 0);
    std::vector<std::string> migrate{
        "MIGRATE", "127.0.0.1", std::to_string(target->port()), "", "0", "5000", "KEYS"};
    for (size_t i = 0; i < keys->elements; ++i)
      migrate.emplace_back(keys->element[i]->str, keys->element[i]->len);
    CHECK(source->text(migrate) == "OK");
  }
  // The slot is the target's: the target first (as redis-cli does), then
  // every other master.
  void finish() {
    std::string id = target->text({"CLUSTER", "MYID"});
    CHECK(target->text({"CLUSTER", "SETSLOT", slot, "NODE", id}) == "OK");
    for (auto& n : nodes)
      if (n.get() != target) CHECK(n->text({"CLUSTER", "SETSLOT", slot, "NODE", id}) == "OK");
  }
  long long errorstat(Node& n, const std::string& name) {
    std::string info = n.text({"INFO", "errorstats"});
    size_t at = info.find("errorstat_" + name + ":count=");
    return at == std::string::npos ? 0 : std::stoll(info.substr(info.find('=', at) + 1));
  }
};

} // namespace

TEST_CASE("cluster: a renewal after the mutex's slot moved follows MOVED and keeps the lease") {
  SKIP_UNLESS_CLUSTER();
  std::string m = unique_mutex("moved");
  auto b = open_test_backend();
  Reply a = require_ok(b->acquire(m, "A", 5000, 2000, k_timeout));
  REQUIRE(a.changed);
  Move move(m);
  long long moved_before = move.errorstat(*move.source, "MOVED");
  move.migrate_keys();
  move.finish();
  // b's map still names the source, which now answers MOVED.
  Reply g = require_ok(b->guard(m, "A", a.observed.lease.fencing_token, 5000, 2000, k_timeout));
  CHECK(g.changed);
  CHECK(g.observed.lease.owner_id == "A");
  CHECK(g.observed.lease.fencing_token == a.observed.lease.fencing_token);
  CHECK(move.errorstat(*move.source, "MOVED") > moved_before);
  // Another contender sees the lease where it went; the release ends it
  // there, and the next lease's token is above the first's.
  auto other = open_test_backend();
  Reply busy = require_ok(other->acquire(m, "B", 5000, 2000, k_timeout));
  CHECK_FALSE(busy.changed);
  CHECK(busy.observed.lease.owner_id == "A");
  CHECK(require_ok(b->release(m, "A", a.observed.lease.fencing_token, k_timeout)).changed);
  Reply next = require_ok(other->acquire(m, "B", 5000, 2000, k_timeout));
  CHECK(next.changed);
  CHECK(next.observed.lease.fencing_token > a.observed.lease.fencing_token);
  require_ok(other->release(m, "B", 0, k_timeout));
}

TEST_CASE("cluster: during a migration a renewal follows ASK (ASKING on the target), once") {
  SKIP_UNLESS_CLUSTER();
  std::string m = unique_mutex("ask");
  auto b = open_test_backend();
  Reply a = require_ok(b->acquire(m, "A", 5000, 2000, k_timeout));
  Move move(m);
  long long ask_before = move.errorstat(*move.source, "ASK");
  move.migrate_keys();
  // The keys are on the target, the slot still the source's: ASK.
  Reply g = b->guard(m, "A", a.observed.lease.fencing_token, 5000, 2000, k_timeout);
  bool renewed = g.ok() && g.changed;
  move.finish(); // before any REQUIRE: the cluster stays whole
  CHECK_MESSAGE(renewed, "renewal during the migration: " << g.error);
  CHECK(g.observed.lease.fencing_token == a.observed.lease.fencing_token);
  CHECK(move.errorstat(*move.source, "ASK") > ask_before);
  CHECK(require_ok(b->release(m, "A", 0, k_timeout)).changed);
}
