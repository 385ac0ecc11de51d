// simba: shell-level locking and leadership. The table of contents:
//   cli/      the command line (run, lead, schedule, status, release) and
//             the poll loop
//   core/     the contend rules, sans I/O
//   backend/  where leases live (SQLite, Redis)
//   process/  CMD, its process group, signals, the watchdog
//   sys/      what backend/ and process/ share (the clock)
#include "cli/app.hpp"

#include <cstdio>
#include <unistd.h>

int main(int argc, char** argv) {
  int code = simba::cli::main(argc, argv);
  // Everything simba holds (the backend, the watchdog's channel, CMD's
  // descriptors) is released before cli::main returns. What exit() would
  // add is the static destructors and atexit handlers: cold code, about
  // 0.02 ms on every run (docs/benchmarks.md). Only buffered output needs them.
  std::fflush(nullptr);
  _exit(code);
}
