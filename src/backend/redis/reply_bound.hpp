#pragma once
// A bound on what one Redis reply may cost (issue 36 §6). hiredis 0.14 has
// none: `*2147483647` makes it allocate the array's 16 GB of slots at once
// (and walk all of them when the reply is freed), and `$2147483647`
// buffers whatever follows. A ReplyBudget installed on a reader charges
// every object hiredis makes for a reply, and the caller charges the bytes
// not parsed yet before feeding more; past k_max_reply_bytes the reply is
// refused as a protocol error (the connection is closed, the call fails).
#include <hiredis/hiredis.h>

#include <cstddef>

namespace simba::backend::redis {

// Far above any reply simba reads (status of 100,000 mutexes, a history of
// 1,000,000 events), far below what hurts a host.
constexpr size_t k_max_reply_bytes = size_t(256) << 20;

struct ReplyBudget {
  size_t used = 0;       // the objects of the reply being parsed
  bool exceeded = false; // the reply was refused
};

// Makes `reader` charge its objects to `budget` (set again whenever the
// budget may have moved: cheap).
void bound_replies(redisReader* reader, ReplyBudget* budget);

// Whether `more` bytes may be fed to `reader` (its unparsed bytes and the
// reply's objects stay under the bound); sets budget.exceeded if not.
bool may_feed(const redisReader* reader, ReplyBudget& budget, size_t more);

} // namespace simba::backend::redis
