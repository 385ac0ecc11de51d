// simba doctor's Redis checks (backend/redis/doctor.hpp): each against a
// redis-server of the case's own, set up to be wrong in one way (an
// allkeys-* policy, no persistence, an ACL user without a command, a
// certificate about to expire, sentinels naming two masters, a cluster
// with slots nobody serves, a database without simba's marker), and --init
// (init_new_redis_database). Run when the suite runs against Redis; filtered
// out otherwise (conformance.cpp: tests/backend/redis*).
#include "own_redis.hpp"
#include "support.hpp"

#include "backend/redis/redis.hpp"
#include "core/error.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>

using simba::backend::DiagnoseOptions;
using simba::backend::Diagnosis;
using simba::backend::Finding;
using simba::backend::open_backend;
using namespace simba::test;

namespace {

using Verdict = Finding::Verdict;

Diagnosis redis_diagnosis(const std::string& uri) {
  auto b = open_backend(uri);
  Diagnosis found;
  b->diagnose(found, DiagnoseOptions{});
  return found;
}

// The one finding of `check` (the case's server is one server).
Finding finding(const Diagnosis& found, const std::string& check) {
  std::string all;
  for (const Finding& f : found) all += "\n  " + f.check + ": " + f.detail + " | " + f.fix;
  auto it =
      std::find_if(found.begin(), found.end(), [&](const Finding& f) { return f.check == check; });
  REQUIRE_MESSAGE(it != found.end(), "no finding '" << check << "' among:" << all);
  INFO("findings:" << all);
  CHECK(std::count_if(found.begin(), found.end(),
                      [&](const Finding& f) { return f.check == check; }) == 1);
  return *it;
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The ACL of docs/backends/redis.md "ACL users", for user `name`, less
// `without` (" +lpush", say).
void add_simba_user(OwnRedis& server, const std::string& name, const std::string& without = "") {
  std::string cmds = " +ping +select +info +role +scan +subscribe +evalsha +eval +time +get +set "
                     "+del +incrby +hget +hmget +hset +hdel +zadd +zrange +zrem +zscore +lpush "
                     "+lrange +ltrim +pexpire +publish";
  if (!without.empty()) cmds.erase(cmds.find(without), without.size());
  std::vector<std::string> args = {"ACL",       "SETUSER",       name,   "on", ">pw",
                                   "resetkeys", "resetchannels", "-@all"};
  for (size_t at = 1; at < cmds.size();) {
    size_t end = cmds.find(' ', at);
    if (end == std::string::npos) end = cmds.size();
    args.push_back(cmds.substr(at, end - at));
    at = end + 1;
  }
  args.push_back("~simba:*");
  args.push_back("&simba:*");
  REQUIRE(server.command(args)->type == REDIS_REPLY_STATUS);
}

std::string sh(const std::string& cmd) {
  INFO(cmd);
  REQUIRE(std::system(cmd.c_str()) == 0);
  return cmd;
}

} // namespace

TEST_CASE("redis doctor: allkeys-lru fails maxmemory-policy, no persistence warns") {
  SKIP_UNLESS_REDIS();
  // No password, database 0: the backend opens (its checks wait for the
  // first script), and the doctor shows what the server is.
  OwnRedis server({"--maxmemory-policy", "allkeys-lru", "--maxmemory", "100mb"});
  Diagnosis found = redis_diagnosis(server.guarded_uri("d:"));
  Finding policy = finding(found, "maxmemory-policy");
  CHECK(policy.verdict == Verdict::fail);
  CHECK(has(policy.detail, "allkeys-lru"));
  CHECK(has(policy.fix, "noeviction"));
  Finding persistence = finding(found, "persistence");
  CHECK(persistence.verdict == Verdict::warn);
  CHECK(has(persistence.detail, "no persistence"));
  CHECK(has(persistence.detail, "quarantine"));
  CHECK(has(persistence.fix, "appendonly yes"));
  CHECK(finding(found, "replication").verdict == Verdict::ok);
}

TEST_CASE("redis doctor: noeviction and AOF are ok; a volatile policy at maxmemory warns") {
  SKIP_UNLESS_REDIS();
  OwnRedis good({"--appendonly", "yes", "--maxmemory-policy", "noeviction"});
  Diagnosis found = redis_diagnosis(good.guarded_uri("d:"));
  CHECK(finding(found, "persistence").verdict == Verdict::ok);
  CHECK(finding(found, "maxmemory-policy").verdict == Verdict::ok);
  CHECK(finding(found, "acl").verdict == Verdict::ok);

  OwnRedis volatile_lru({"--maxmemory-policy", "volatile-lru", "--maxmemory", "100mb"});
  Finding policy = finding(redis_diagnosis(volatile_lru.guarded_uri("d:")), "maxmemory-policy");
  CHECK(policy.verdict == Verdict::warn);
  CHECK(has(policy.detail, "volatile-lru"));
}

TEST_CASE("redis doctor: a replica fails replication") {
  SKIP_UNLESS_REDIS();
  OwnRedis master;
  OwnRedis replica({"--replicaof", "127.0.0.1", std::to_string(master.port())});
  // quarantine=off: no acquire here; the replica would refuse the marker's
  // write anyway.
  Finding f = finding(redis_diagnosis(replica.uri("d:")), "replication");
  CHECK(f.verdict == Verdict::fail);
  CHECK(has(f.detail, "replica of 127.0.0.1:" + std::to_string(master.port())));
}

TEST_CASE("redis doctor: an ACL user without a command the scripts call fails acl, naming it") {
  SKIP_UNLESS_REDIS();
  OwnRedis server;
  add_simba_user(server, "simba");
  add_simba_user(server, "nolpush", " +lpush");
  std::string at = "@127.0.0.1:" + std::to_string(server.port()) + "/0?timeout=1s";
  // The documented ACL is enough (no probe asks for more)...
  Finding full = finding(redis_diagnosis("redis://simba:pw" + at), "acl");
  CHECK(full.verdict == Verdict::ok);
  // ... and one without +lpush (which simba's start-up check cannot see:
  // only a script calls it) is named.
  Finding lacking = finding(redis_diagnosis("redis://nolpush:pw" + at), "acl");
  CHECK(lacking.verdict == Verdict::fail);
  CHECK(has(lacking.detail, "lpush"));
  CHECK(has(lacking.fix, "ACL SETUSER nolpush +lpush"));
  // So is one without +subscribe (simba's waiters would never hear a
  // release).
  add_simba_user(server, "nosub", " +subscribe");
  Finding nosub = finding(redis_diagnosis("redis://nosub:pw" + at), "acl");
  CHECK(nosub.verdict == Verdict::fail);
  CHECK(has(nosub.fix, "ACL SETUSER nosub +subscribe"));
  // Nothing of the probe is left behind.
  CHECK(server.command({"DBSIZE"})->integer == 0);
}

TEST_CASE("redis doctor: server-run warns without simba's marker; --init marks a new database "
          "and its first lease waits no quarantine") {
  SKIP_UNLESS_REDIS();
  OwnRedis server;
  std::string uri = server.guarded_uri("d:");
  Finding before = finding(redis_diagnosis(uri), "server-run");
  CHECK(before.verdict == Verdict::warn);
  CHECK(has(before.detail, "no simba marker on this database: new, restarted or flushed"));
  CHECK(has(before.fix, "simba doctor --init"));

  auto b = open_backend(uri);
  std::string why;
  CHECK_MESSAGE(simba::backend::init_new_redis_database(*b, 2000, why), why);
  CHECK(has(why, "marked"));
  CHECK(finding(redis_diagnosis(uri), "server-run").verdict == Verdict::ok);
  // The first lease is granted at once.
  simba::backend::Reply r = b->acquire(unique_mutex("first"), "A", 5000, 1000, k_timeout);
  REQUIRE(r.ok());
  CHECK(r.changed);
  // A second --init: the marker of this run is there already.
  CHECK_FALSE(simba::backend::init_new_redis_database(*b, 2000, why));
  CHECK(has(why, "already carries simba's marker of this server run"));
}

TEST_CASE("redis doctor: --init refuses a database that holds simba's keys") {
  SKIP_UNLESS_REDIS();
  OwnRedis server;
  // A lease taken without the quarantine writes no marker: only keys.
  auto off = open_backend(server.uri("simba:"));
  REQUIRE(off->acquire(unique_mutex("held"), "A", 5000, 1000, k_timeout).changed);
  auto b = open_backend(server.guarded_uri("simba:"));
  std::string why;
  CHECK_FALSE(simba::backend::init_new_redis_database(*b, 2000, why));
  CHECK(has(why, "holds simba's keys"));
  CHECK(server.command({"EXISTS", "simba:server"})->integer == 0);
  // quarantine=off keeps no marker: nothing to write.
  CHECK_FALSE(simba::backend::init_new_redis_database(*off, 2000, why));
  CHECK(has(why, "quarantine=off"));
}

TEST_CASE("redis doctor: a TLS certificate that expires in 10 days warns") {
  SKIP_UNLESS_REDIS();
  OwnRedis probe_dir; // only for a directory of its own
  std::string d = probe_dir.dir();
  sh("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 10 "
     "-subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 -keyout " +
     d + "/k.pem -out " + d + "/c.pem 2>/dev/null");
  int tls_port = free_port();
  OwnRedis server({"--tls-port", std::to_string(tls_port), "--tls-cert-file", d + "/c.pem",
                   "--tls-key-file", d + "/k.pem", "--tls-ca-cert-file", d + "/c.pem",
                   "--tls-auth-clients", "no"});
  Finding f = finding(redis_diagnosis("rediss://127.0.0.1:" + std::to_string(tls_port) + "/0?cacert=" + d +
                               "/c.pem&prefix=d:&timeout=2s"),
                      "tls");
  CHECK(f.verdict == Verdict::warn);
  CHECK(has(f.detail, "expires"));
  CHECK((has(f.detail, "in 9 days") || has(f.detail, "in 10 days")));
  CHECK(has(f.fix, "renew"));
}

TEST_CASE("redis doctor: an expired TLS certificate ends the connection, saying so") {
  SKIP_UNLESS_REDIS();
  OwnRedis probe_dir; // only for a directory of its own
  std::string d = probe_dir.dir();
  // `openssl ca` signs with any dates: a certificate that ran out in 2020.
  std::ofstream(d + "/ca.cnf") << "[ca]\ndefault_ca = d\n[d]\ndatabase = " << d
                               << "/index.txt\nnew_certs_dir = " << d << "\nserial = " << d
                               << "/serial\ndefault_md = sha256\npolicy = p\n"
                                  "copy_extensions = copy\n[p]\ncommonName = supplied\n";
  std::ofstream(d + "/index.txt");
  std::ofstream(d + "/serial") << "01\n";
  std::string ec = " -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes ";
  sh("cd " + d + " && openssl req -x509" + ec + "-days 3650 -subj /CN=ca -keyout ca.key " +
     "-out ca.crt 2>/dev/null && openssl req" + ec + "-subj /CN=127.0.0.1 " +
     "-addext subjectAltName=IP:127.0.0.1 -keyout k.pem -out r.csr 2>/dev/null && " +
     "openssl ca -batch -config ca.cnf -startdate 20200101000000Z -enddate 20200102000000Z " +
     "-in r.csr -out c.pem -keyfile ca.key -cert ca.crt >/dev/null 2>&1");
  int tls_port = free_port();
  OwnRedis server({"--tls-port", std::to_string(tls_port), "--tls-cert-file", d + "/c.pem",
                   "--tls-key-file", d + "/k.pem", "--tls-ca-cert-file", d + "/ca.crt",
                   "--tls-auth-clients", "no"});
  std::string uri = "rediss://127.0.0.1:" + std::to_string(tls_port) + "/0?cacert=" + d +
                    "/ca.crt&prefix=d:&timeout=2s";
  try {
    redis_diagnosis(uri);
    FAIL("an expired certificate was accepted");
  } catch (const simba::UnavailableError& e) {
    CHECK(has(e.what(), "certificate has expired"));
  }
}

TEST_CASE("redis doctor: sentinels that name two masters fail sentinel, naming both") {
  SKIP_UNLESS_REDIS();
  OwnRedis a, b;
  OwnRedis s1({}, a.port()), s2({}, a.port()), s3({}, b.port());
  std::string uri = "redis+sentinel://127.0.0.1:" + std::to_string(s1.port()) +
                    ",127.0.0.1:" + std::to_string(s2.port()) +
                    ",127.0.0.1:" + std::to_string(s3.port()) +
                    "/mymaster?prefix=d:&timeout=1s&quarantine=off";
  Finding f = finding(redis_diagnosis(uri), "sentinel");
  CHECK(f.verdict == Verdict::fail);
  CHECK(has(f.detail, "127.0.0.1:" + std::to_string(a.port())));
  CHECK(has(f.detail, "127.0.0.1:" + std::to_string(b.port())));
  // All three agreeing: ok.
  OwnRedis s4({}, a.port());
  std::string agreeing = "redis+sentinel://127.0.0.1:" + std::to_string(s1.port()) +
                         ",127.0.0.1:" + std::to_string(s2.port()) +
                         ",127.0.0.1:" + std::to_string(s4.port()) +
                         "/mymaster?prefix=d:&timeout=1s&quarantine=off";
  Finding g = finding(redis_diagnosis(agreeing), "sentinel");
  CHECK(g.verdict != Verdict::fail);
  // --init through Sentinel writes the run its scripts compare (the
  // run_id and the replication id): the first lease waits no quarantine.
  std::string guarded = agreeing.substr(0, agreeing.find("&quarantine=off"));
  auto backend = open_backend(guarded);
  std::string why;
  CHECK_MESSAGE(simba::backend::init_new_redis_database(*backend, 2000, why), why);
  CHECK(finding(redis_diagnosis(guarded), "server-run").verdict == Verdict::ok);
  CHECK(backend->acquire(unique_mutex("first"), "A", 5000, 1000, k_timeout).changed);
}

TEST_CASE("redis doctor: a cluster with slots nobody serves fails cluster") {
  SKIP_UNLESS_REDIS();
  OwnRedis node({"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"});
  REQUIRE(node.command({"CLUSTER", "ADDSLOTSRANGE", "0", "16000"})->type == REDIS_REPLY_STATUS);
  std::string uri = "redis+cluster://127.0.0.1:" + std::to_string(node.port()) +
                    "?prefix=d:&timeout=1s&quarantine=off";
  Finding f = finding(redis_diagnosis(uri), "cluster");
  CHECK(f.verdict == Verdict::fail);
  CHECK(has(f.detail, "16001 of 16384"));
  REQUIRE(node.command({"CLUSTER", "ADDSLOTSRANGE", "16001", "16383"})->type == REDIS_REPLY_STATUS);
  for (int i = 0; i < 50 && node.command({"CLUSTER", "INFO"})->str &&
                  !has(node.command({"CLUSTER", "INFO"})->str, "cluster_state:ok");
       ++i)
    sleep_ms(100);
  CHECK(finding(redis_diagnosis(uri), "cluster").verdict == Verdict::ok);
  // The master's own marker (simba:server{TAG}), written by --init.
  std::string guarded = uri.substr(0, uri.find("&quarantine=off"));
  Diagnosis found = redis_diagnosis(guarded);
  CHECK(finding(found, "acl").verdict == Verdict::ok);
  CHECK(finding(found, "server-run").verdict == Verdict::warn);
  auto backend = open_backend(guarded);
  std::string why;
  CHECK_MESSAGE(simba::backend::init_new_redis_database(*backend, 2000, why), why);
  CHECK(finding(redis_diagnosis(guarded), "server-run").verdict == Verdict::ok);
  CHECK(backend->acquire(unique_mutex("first"), "A", 5000, 1000, k_timeout).changed);
}
