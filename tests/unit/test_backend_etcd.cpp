// The etcd backend's parts that need no cluster: its URIs (uri_etcd.cpp),
// the key layout and values (etcd/keys.hpp), and the HTTP/1.1 client
// (etcd/http.hpp) against a canned server on loopback: Content-Length and
// chunked answers cut at every byte, a kept-alive connection, a stream
// read line by line. tests/backend (conformance/etcd) and the e2e tests
// see the rest against a real cluster.
#include "backend/etcd/http.hpp"
#include "backend/etcd/keys.hpp"
#include "backend/uri.hpp"
#include "core/error.hpp"
#include "sys/clock.hpp"

#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <vector>

using namespace simba::backend;

namespace {

EtcdUri etcd_of(const std::string& uri) {
  BackendUri u = parse_backend_uri(uri);
  REQUIRE(std::holds_alternative<EtcdUri>(u));
  return std::get<EtcdUri>(u);
}

std::string refusal(const std::string& uri) {
  try {
    parse_backend_uri(uri);
  } catch (const simba::UsageError& e) {
    return e.what();
  }
  return "";
}

} // namespace

TEST_CASE("etcd URI: members, ports, prefix, timeout, TLS files") {
  EtcdUri u = etcd_of("etcd://a:1,b,[::1]:3/team/x?timeout=5s");
  REQUIRE(u.endpoints.size() == 3);
  CHECK(u.endpoints[0].host == "a");
  CHECK(u.endpoints[0].port == 1);
  CHECK(u.endpoints[1].port == 2379);
  CHECK(u.endpoints[2].host == "::1");
  CHECK(u.endpoints[2].port == 3);
  CHECK(u.prefix == "team/x/");
  CHECK(u.timeout_ms == 5000);
  CHECK_FALSE(u.tls);
  CHECK(etcd_of("etcd://h").prefix == "simba/");
  EtcdUri t = etcd_of("etcds://h?cacert=/ca.pem&cert=/c.pem&key=/k.pem");
  CHECK(t.tls);
  CHECK(t.tls_ca == "/ca.pem");
  CHECK(etcd_describe(u) == "etcd://a:1,b:2379,[::1]:3/team/x/");
}

TEST_CASE("etcd URI: refusals, and the password only from SIMBA_ETCD_PASSWORD") {
  CHECK(refusal("etcd://h?cacert=/ca.pem").find("needs TLS: etcds://") != std::string::npos);
  CHECK(refusal("etcds://h?cert=/c.pem").find("both cert= and key=") != std::string::npos);
  CHECK(refusal("etcd://h?db=1").find("unknown parameter 'db'") != std::string::npos);
  CHECK(refusal("etcd://h:0").find("1 to 65535") != std::string::npos);
  CHECK(refusal("etcd://").find("no member") != std::string::npos);
  // A prefix in every key, several times a request: a long one made every
  // call "request is too large", retried without end.
  CHECK(refusal("etcd://h/" + std::string(1024, 'p')).find("at most 1023") != std::string::npos);
  CHECK(etcd_of("etcd://h/" + std::string(1023, 'p')).prefix.size() == 1024);
  std::string pw = refusal("etcd://u:secret-pw@h");
  CHECK(pw.find("SIMBA_ETCD_PASSWORD") != std::string::npos);
  CHECK(pw.find("secret-pw") == std::string::npos);
  unsetenv("SIMBA_ETCD_PASSWORD");
  CHECK(refusal("etcd://h?user=u").find("needs its password in SIMBA_ETCD_PASSWORD") !=
        std::string::npos);
  setenv("SIMBA_ETCD_PASSWORD", "env-secret", 1);
  EtcdUri u = etcd_of("etcd://h?user=u");
  CHECK(u.user == "u");
  CHECK(u.password == "env-secret");
  CHECK(etcd_describe(u).find("env-secret") == std::string::npos);
  unsetenv("SIMBA_ETCD_PASSWORD");
}

TEST_CASE("etcd keys: one mutex's keys and no other's; values and base64 round trip") {
  using namespace simba::backend::etcd;
  std::string k = queue_key("simba/", "ci/deploy", "w@h#0123");
  CHECK(k == "simba/ci/deploy|w@h#0123");
  CHECK(mutex_of_key("simba/", k) == "ci/deploy");
  CHECK(mutex_of_key("simba/", "other/x|y").empty());
  // "ci/deploy"'s range must not hold "ci/deploy/prod"'s keys: '|' ends a name.
  nlohmann::json r = range_all("simba/", "ci/deploy");
  std::string from = unbase64(r["key"]), end = unbase64(r["range_end"]);
  std::string sub = queue_key("simba/", "ci/deploy/prod", "x");
  CHECK_FALSE((sub >= from && sub < end));
  CHECK((k >= from && k < end));
  for (std::string s : std::vector<std::string>{"", "a", "ab", "abc", "abcd", std::string("\0\xff\x10", 3)})
    CHECK(unbase64(base64(s)) == s);
  CHECK(base64("ab") == "YWI=");
  Entry e{"o#1", "run\t1\th\tsh", 5, 6, 7000, true, true, 8, 9, 10};
  Entry d = decode_entry(encode_entry(e));
  CHECK(d.owner == "o#1");
  CHECK(d.holder == e.holder);
  CHECK(d.since == 5);
  CHECK(d.gives_up == 6);
  CHECK(d.length_ms == 7000);
  CHECK(d.revoked);
  CHECK(d.holding);
  CHECK(d.acquired == 8);
  CHECK(d.ttl_at == 9);
  CHECK(d.until == 10);
  CHECK(decode_entry("not json").owner.empty());
}

namespace {

// A server on loopback for one client: `serve` gets the accepted
// connection, in a thread of its own; the connection is closed after it.
class OneClientServer {
public:
  explicit OneClientServer(std::function<void(int fd)> serve) : m_serve(std::move(serve)) {
    m_listen = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(bind(m_listen, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    socklen_t len = sizeof a;
    getsockname(m_listen, reinterpret_cast<sockaddr*>(&a), &len);
    m_port = ntohs(a.sin_port);
    listen(m_listen, 1);
    m_thread = std::thread([this] {
      int fd = accept(m_listen, nullptr, nullptr);
      m_serve(fd);
      close(fd);
    });
  }
  ~OneClientServer() {
    m_thread.join();
    close(m_listen);
  }
  int port() const { return m_port; }

private:
  std::function<void(int fd)> m_serve;
  int m_listen = -1;
  int m_port = 0;
  std::thread m_thread;
};

// Answers each request on the connection with the next canned answer,
// written a few bytes at a time.
std::function<void(int)> canned(std::vector<std::string> answers) {
  return [answers = std::move(answers)](int fd) {
    for (const std::string& answer : answers) {
      std::string in;
      char buf[4096];
      while (in.find("\r\n\r\n") == std::string::npos) { // the request (its body is short)
        ssize_t n = read(fd, buf, sizeof buf);
        if (n <= 0) break;
        in.append(buf, size_t(n));
      }
      for (size_t at = 0; at < answer.size(); at += 3) {
        (void)!write(fd, answer.data() + at, std::min<size_t>(3, answer.size() - at));
        usleep(200);
      }
    }
  };
}

// Reads an open stream's lines until it ends or the deadline: why it ended.
std::string stream_to_end(simba::backend::etcd::HttpConnection& c, int64_t deadline,
                          std::vector<std::string>& lines) {
  std::string why;
  while (why.empty() && simba::sys::boottime_ms() < deadline) {
    pollfd p{c.fd(), POLLIN, 0};
    poll(&p, 1, 100);
    why = c.read_stream(lines);
  }
  return why;
}

} // namespace

TEST_CASE("etcd HTTP: Content-Length and chunked answers on one kept-alive connection") {
  using namespace simba::backend::etcd;
  OneClientServer server(canned({
      "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{\"a\":\"12\"}\n",
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\n{\"b\"\r\n5\r\n:true\r\n1\r\n}\r\n0\r\n\r\n",
      "HTTP/1.1 403 Forbidden\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}",
  }));
  HttpConnection c(HttpTarget{"127.0.0.1", server.port(), false, {}});
  int64_t deadline = simba::sys::boottime_ms() + 5000;
  HttpAnswer a = c.post("/v3/kv/range", "{}", "", deadline);
  CHECK(a.status == 200);
  CHECK(a.body == "{\"a\":\"12\"}\n");
  int fd = c.fd();
  HttpAnswer b = c.post("/v3/kv/txn", "{}", "tok", deadline);
  CHECK(b.status == 200);
  CHECK(b.body == "{\"b\":true}");
  CHECK(c.fd() == fd); // the same connection
  HttpAnswer f = c.post("/v3/kv/put", "{}", "", deadline);
  CHECK(f.status == 403);
  CHECK(f.body == "{}");
  CHECK_FALSE(c.connected()); // the server said it closes
}

TEST_CASE("etcd HTTP: a stream read as its lines come; its end is said") {
  using namespace simba::backend::etcd;
  OneClientServer server(canned({"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                                 "9\r\n{\"x\":1}\n{\r\n7\r\n\"y\":2}\n\r\n0\r\n\r\n"}));
  HttpConnection c(HttpTarget{"127.0.0.1", server.port(), false, {}});
  int64_t deadline = simba::sys::boottime_ms() + 5000;
  REQUIRE(c.open_stream("/v3/watch", "{}", "", deadline).empty());
  std::vector<std::string> lines;
  std::string why = stream_to_end(c, deadline, lines);
  CHECK(lines == std::vector<std::string>{"{\"x\":1}", "{\"y\":2}"});
  CHECK(why == "the stream ended");
}

TEST_CASE("etcd HTTP: nobody listening is an error before anything was sent") {
  using namespace simba::backend::etcd;
  int s = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(s, reinterpret_cast<sockaddr*>(&a), &len);
  close(s); // a port nobody listens on
  HttpConnection c(HttpTarget{"127.0.0.1", ntohs(a.sin_port), false, {}});
  HttpAnswer r = c.post("/v3/kv/range", "{}", "", simba::sys::boottime_ms() + 2000);
  CHECK(r.status == 0);
  CHECK_FALSE(r.sent);
  CHECK_FALSE(r.error.empty());
}

namespace {

// Answers one request with a chunked 200 and then 1 MiB chunks (no
// newline in them) until it sent `mib` of them or the client left; then
// waits for the client to close.
std::function<void(int)> endless_chunks(int mib) {
  return [mib](int fd) {
    char buf[4096];
    (void)!read(fd, buf, sizeof buf); // the request
    const std::string head = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
    const std::string chunk = "100000\r\n" + std::string(1 << 20, 'a') + "\r\n";
    bool gone = send(fd, head.data(), head.size(), MSG_NOSIGNAL) < 0;
    for (int i = 0; i < mib && !gone; ++i)
      for (size_t at = 0; at < chunk.size() && !gone;) {
        ssize_t n = send(fd, chunk.data() + at, chunk.size() - at, MSG_NOSIGNAL);
        gone = n <= 0;
        at += n > 0 ? size_t(n) : 0;
      }
    while (!gone && read(fd, buf, sizeof buf) > 0) {
    }
  };
}

} // namespace

TEST_CASE("etcd HTTP: chunks without end are refused past 64 MiB, an answer's or a stream's") {
  using namespace simba::backend::etcd;
  {
    OneClientServer server(endless_chunks(200));
    HttpConnection c(HttpTarget{"127.0.0.1", server.port(), false, {}});
    HttpAnswer a = c.post("/v3/kv/range", "{}", "", simba::sys::boottime_ms() + 3000);
    CHECK(a.status == 0);
    CHECK(a.error == "an answer over 64 MiB");
  }
  OneClientServer server(endless_chunks(200));
  HttpConnection c(HttpTarget{"127.0.0.1", server.port(), false, {}});
  int64_t deadline = simba::sys::boottime_ms() + 3000;
  REQUIRE(c.open_stream("/v3/watch", "{}", "", deadline).empty());
  std::vector<std::string> lines;
  std::string why = stream_to_end(c, deadline, lines);
  CHECK(lines.empty());
  CHECK(why == "an answer over 64 MiB");
  c.close();
}
