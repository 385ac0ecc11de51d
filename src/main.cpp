// simba: shell-level locking and leadership. The table of contents:
//   cli/      the command line (run, lead, schedule, status, release) and
//             the poll loop
//   core/     the contend rules, sans I/O
//   backend/  where leases live (SQLite, Redis)
//   process/  CMD, its process group, signals, the watchdog
//   sys/      what backend/ and process/ share (the clock)
#include "cli/app.hpp"

int main(int argc, char** argv) { return simba::cli::main(argc, argv); }
