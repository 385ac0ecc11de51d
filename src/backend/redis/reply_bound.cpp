// A bound on what one Redis reply may cost (reply_bound.hpp).
#include "backend/redis/reply_bound.hpp"

namespace simba::backend::redis {
namespace {

// What malloc keeps for one hiredis object besides its payload (the
// redisReply and two allocation headers): an estimate that errs high.
constexpr size_t k_object_bytes = sizeof(redisReply) + 32;

// The reader's own object functions (reply_objects.hpp: every reader starts
// with the same table).
const redisReplyObjectFunctions* g_hiredis = nullptr;

bool charge(const redisReadTask* task, size_t bytes) {
  auto* budget = static_cast<ReplyBudget*>(task->privdata);
  if (!budget) return true;
  if (budget->exceeded || bytes > k_max_reply_bytes - budget->used) {
    budget->exceeded = true;
    return false; // hiredis: out of memory, the reader is in error
  }
  budget->used += bytes;
  return true;
}

void* create_string(const redisReadTask* task, char* text, size_t len) {
  return charge(task, k_object_bytes + len + 1) ? g_hiredis->createString(task, text, len)
                                                : nullptr;
}

void* create_array(const redisReadTask* task, int elements) {
  // Charged before hiredis allocates the slots (the whole cost of `*N`).
  size_t slots = elements > 0 ? size_t(elements) : 0;
  size_t bytes = slots > k_max_reply_bytes / sizeof(redisReply*)
                     ? k_max_reply_bytes + 1
                     : k_object_bytes + slots * sizeof(redisReply*);
  return charge(task, bytes) ? g_hiredis->createArray(task, elements) : nullptr;
}

void* create_integer(const redisReadTask* task, long long value) {
  return charge(task, k_object_bytes) ? g_hiredis->createInteger(task, value) : nullptr;
}

void* create_nil(const redisReadTask* task) {
  return charge(task, k_object_bytes) ? g_hiredis->createNil(task) : nullptr;
}

void free_object(void* reply) { g_hiredis->freeObject(reply); }

redisReplyObjectFunctions g_bounded = {create_string, create_array, create_integer, create_nil,
                                       free_object};

} // namespace

void bound_replies(redisReader* reader, ReplyBudget* budget) {
  if (reader->fn != &g_bounded) {
    if (!g_hiredis) g_hiredis = reader->fn;
    reader->fn = &g_bounded;
  }
  reader->privdata = budget;
}

bool may_feed(const redisReader* reader, ReplyBudget& budget, size_t more) {
  size_t unparsed = reader->len - reader->pos;
  if (budget.exceeded || budget.used + unparsed + more > k_max_reply_bytes) {
    budget.exceeded = true;
    return false;
  }
  return true;
}

} // namespace simba::backend::redis
