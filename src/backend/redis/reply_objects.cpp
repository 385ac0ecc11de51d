// hiredis reply objects, made and freed without hiredis.c (reply_objects.hpp).
#include "backend/redis/reply_objects.hpp"

#include <hiredis/hiredis.h>

#include <cstdlib>
#include <cstring>

namespace simba::backend::redis {
namespace {

// A reply of `type`, linked into its parent array (read.c fills arrays
// element by element, in order).
redisReply* make(const redisReadTask* task, int type) {
  auto* r = static_cast<redisReply*>(std::calloc(1, sizeof(redisReply)));
  if (!r) return nullptr;
  r->type = type;
  if (task->parent) {
    auto* parent = static_cast<redisReply*>(task->parent->obj);
    parent->element[task->idx] = r;
  }
  return r;
}

void* create_string(const redisReadTask* task, char* text, size_t len) {
  char* copy = static_cast<char*>(std::malloc(len + 1));
  if (!copy) return nullptr;
  redisReply* r = make(task, task->type);
  if (!r) {
    std::free(copy);
    return nullptr;
  }
  std::memcpy(copy, text, len);
  copy[len] = '\0';
  r->str = copy;
  r->len = len;
  return r;
}

void* create_array(const redisReadTask* task, int elements) {
  redisReply** slots = nullptr;
  if (elements > 0) {
    slots = static_cast<redisReply**>(std::calloc(size_t(elements), sizeof(redisReply*)));
    if (!slots) return nullptr;
  }
  redisReply* r = make(task, REDIS_REPLY_ARRAY);
  if (!r) {
    std::free(slots);
    return nullptr;
  }
  r->elements = elements > 0 ? size_t(elements) : 0;
  r->element = slots;
  return r;
}

void* create_integer(const redisReadTask* task, long long value) {
  redisReply* r = make(task, REDIS_REPLY_INTEGER);
  if (r) r->integer = value;
  return r;
}

void* create_nil(const redisReadTask* task) { return make(task, REDIS_REPLY_NIL); }

redisReplyObjectFunctions g_functions = {create_string, create_array, create_integer, create_nil,
                                         free_reply};

} // namespace

redisReplyObjectFunctions* reply_functions() { return &g_functions; }

redisReader* new_reader() { return redisReaderCreateWithFunctions(&g_functions); }

void free_reply(void* reply) {
  auto* r = static_cast<redisReply*>(reply);
  if (!r) return;
  if (r->element) {
    for (size_t i = 0; i < r->elements; ++i) free_reply(r->element[i]);
    std::free(r->element);
  }
  std::free(r->str);
  std::free(r);
}

} // namespace simba::backend::redis
