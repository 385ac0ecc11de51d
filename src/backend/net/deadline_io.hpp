#pragma once
// net/: what a network backend needs that is no server's protocol: a
// connected socket's I/O bounded by one deadline per call (this file), TLS
// on top of it (tls.hpp), and OpenSSL, set up only for TLS (openssl_setup.hpp).
//
// A call is bounded as a whole by polling against its deadline before each
// send()/recv() (SO_RCVTIMEO would bound each read() only); a write to a
// closed connection raises no SIGPIPE (MSG_NOSIGNAL); and the caller learns
// how many bytes left, so it knows whether a failed request may have been
// applied. Deadlines are sys::boottime_ms() milliseconds.
#include <cstddef>
#include <cstdint>
#include <string>
#include <sys/time.h>

namespace simba::backend::net {

// The error text of an I/O that ran out of time (compared, not shown).
extern const std::string k_timed_out;

// `ms` (at least 1) as a timeval, for libraries that take one.
timeval to_timeval(int64_t ms);

// Sets close-on-exec: a child must not inherit the connection.
void set_cloexec(int fd);

// Waits until `fd` is ready for `events` (POLLIN, POLLOUT); false at the
// deadline or on a poll error.
bool wait_for(int fd, short events, int64_t deadline);

// An idle connection is readable only when the peer closed it or sent
// something nobody asked for: either way it cannot be used.
bool readable_now(int fd);

// Sends `out` from byte `sent` on, counting in `sent` what left; "" when all
// left, k_timed_out at the deadline, or why not.
std::string send_all(int fd, const std::string& out, int64_t deadline, size_t& sent);

// One non-blocking recv() into `buf`: "" with `got` > 0 bytes, "" with `got`
// 0 when nothing is there yet, or why the connection is unusable (closed by
// the peer, an error).
std::string receive_some(int fd, char* buf, size_t size, size_t& got);

} // namespace simba::backend::net
