// One DNS server asked for A and AAAA (dns_client.hpp).
#include "backend/net/dns_client.hpp"

#include "backend/net/address.hpp"
#include "backend/net/deadline_io.hpp"
#include "backend/net/dial.hpp"
#include "backend/net/dns_message.hpp"
#include "sys/fd.hpp"

#include <cerrno>
#include <cstring>
#include <poll.h>
#include <sys/random.h>

namespace simba::backend::net {
namespace {

constexpr size_t k_max_message = 65535;

struct Question {
  explicit Question(uint16_t t) : type(t) {}
  uint16_t type;
  uint16_t id = 0;
  std::string query;
  bool answered = false;
  DnsReply reply;
};

// Exactly `n` bytes from `fd` by `until`, appended to `out`.
std::string read_exactly(int fd, size_t n, std::string& out, int64_t until) {
  char buf[4096];
  while (n > 0) {
    if (!wait_for(fd, POLLIN, until)) return k_timed_out;
    size_t got = 0;
    std::string why = receive_some(fd, buf, std::min(n, sizeof buf), got);
    if (!why.empty()) return why;
    out.append(buf, got);
    n -= got;
  }
  return "";
}

// The question over TCP (RFC 1035 §4.2.2: each message after its length in
// two bytes); "" with q.answered, or why not.
std::string ask_tcp(const sockaddr_storage& server, const std::string& name, Question& q,
                    int64_t until) {
  int raw = -1;
  std::string why =
      dial(reinterpret_cast<const sockaddr*>(&server), address_length(server), until, raw);
  sys::Fd fd(raw);
  if (!why.empty()) return "over TCP: " + why;
  std::string out;
  out.push_back(static_cast<char>(q.query.size() >> 8));
  out.push_back(static_cast<char>(q.query.size() & 0xff));
  out += q.query;
  size_t sent = 0;
  std::string len, msg;
  why = send_all(fd.get(), out, until, sent);
  if (why.empty()) why = read_exactly(fd.get(), 2, len, until);
  if (why.empty())
    why = read_exactly(fd.get(), size_t(uint8_t(len[0])) << 8 | uint8_t(len[1]), msg, until);
  if (!why.empty()) return "over TCP: " + why;
  q.reply = decode_reply(msg, q.id, name, q.type);
  if (!q.reply.ours || q.reply.truncated) return "over TCP: an answer to another question";
  q.answered = true;
  return "";
}

std::string rcode_text(int rcode) {
  switch (rcode) {
  case k_rcode_server_failure: return "SERVFAIL";
  case 5: return "REFUSED";
  default: return "error " + std::to_string(rcode);
  }
}

// What the two answers (or their absence) come to.
DnsAnswer combine(const Question (&qs)[2], const std::string& failure) {
  DnsAnswer a;
  bool all = true, no_name = false, broken = false;
  for (const Question& q : qs) {
    all = all && q.answered;
    if (!q.answered) continue;
    if (q.reply.rcode == k_rcode_no_error)
      a.addresses.insert(a.addresses.end(), q.reply.addresses.begin(), q.reply.addresses.end());
    else if (q.reply.rcode == k_rcode_no_such_name)
      no_name = true;
    else if (!broken)
      broken = true, a.why = rcode_text(q.reply.rcode);
  }
  if (!a.addresses.empty())
    a.kind = DnsAnswer::Kind::addresses;
  else if (no_name)
    a.kind = DnsAnswer::Kind::no_such_name;
  else if (broken)
    a.kind = DnsAnswer::Kind::failed;
  else if (!failure.empty())
    a.kind = DnsAnswer::Kind::failed, a.why = failure;
  else
    a.kind = all ? DnsAnswer::Kind::no_data : DnsAnswer::Kind::no_answer;
  return a;
}

} // namespace

DnsAnswer ask_server(const sockaddr_storage& server, const std::string& name, int64_t until) {
  Question qs[2] = {Question(k_dns_a), Question(k_dns_aaaa)};
  uint16_t ids[2] = {0, 0};
  if (getrandom(ids, sizeof ids, 0) != sizeof ids)
    return {DnsAnswer::Kind::failed, {}, "no random id"};
  for (int i = 0; i < 2; ++i) {
    qs[i].id = ids[i];
    if (std::string why = encode_query(ids[i], name, qs[i].type, qs[i].query); !why.empty())
      return {DnsAnswer::Kind::failed, {}, why};
  }
  // A connected UDP socket: the kernel gives it a random source port and
  // drops datagrams from anyone but the server.
  sys::Fd fd(::socket(server.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  std::string failure;
  if (!fd ||
      ::connect(fd.get(), reinterpret_cast<const sockaddr*>(&server), address_length(server)) != 0)
    return {DnsAnswer::Kind::failed, {}, std::strerror(errno)};
  for (const Question& q : qs)
    if (::send(fd.get(), q.query.data(), q.query.size(), MSG_NOSIGNAL) < 0)
      return {DnsAnswer::Kind::failed, {}, std::strerror(errno)};
  std::string msg(k_max_message, '\0');
  while (!(qs[0].answered && qs[1].answered) && failure.empty() &&
         wait_for(fd.get(), POLLIN, until)) {
    ssize_t n = ::recv(fd.get(), msg.data(), msg.size(), MSG_DONTWAIT);
    if (n < 0) {
      if (errno != EAGAIN && errno != EINTR) failure = std::strerror(errno); // e.g. refused
      continue;
    }
    std::string reply = msg.substr(0, static_cast<size_t>(n));
    for (Question& q : qs) {
      if (q.answered) continue;
      q.reply = decode_reply(reply, q.id, name, q.type);
      if (!q.reply.ours) continue;
      q.answered = !q.reply.truncated;
      if (q.reply.truncated) failure = ask_tcp(server, name, q, until);
      break;
    }
  }
  return combine(qs, failure);
}

} // namespace simba::backend::net
