#pragma once
// The reply objects hiredis' parser (read.c) builds, made and freed here
// rather than by hiredis.c: that file also holds hiredis' connecting code,
// whose getaddrinfo() would link glibc's name service (NSS) into the static
// binary (net/resolve.hpp says why that is avoided). Same layout and
// allocator as hiredis' own, so either may free the other's.
#include <hiredis/read.h>

namespace simba::backend::redis {

// The object functions for redisReaderCreateWithFunctions().
redisReplyObjectFunctions* reply_functions();

// A new parser using them; nullptr when out of memory.
redisReader* new_reader();

// Frees a reply and everything in it (as freeReplyObject).
void free_reply(void* reply);

} // namespace simba::backend::redis
