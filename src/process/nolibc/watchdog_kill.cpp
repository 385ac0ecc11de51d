#include "process/nolibc/watchdog_kill.hpp"

#include <signal.h>

#include "process/nolibc/proc_walk.hpp"
#include "process/nolibc/syscalls.hpp"

namespace simba::process::watchdog_kill {
namespace {

// Passes over the tree: a process that forks while being killed may leave a
// child behind for one pass.
constexpr int k_kill_passes = 4;

// A kill pass's state, on the watchdog's stack.
struct Pass {
  static constexpr int k_max = 4096;
  long queue[k_max]; // who was seen: breadth first from the root
  int count = 0;
  int alive = 0;
  long self = 0;
  const Mandate* mandate = nullptr;
  proc_walk::Walker walker;

  bool known(long pid) const {
    for (int i = 0; i < count; ++i)
      if (queue[i] == pid) return true;
    return false;
  }
  void add(long pid) {
    if (count < k_max) queue[count++] = pid;
  }
  // One child found: killed (it and the group it leads), unless it is us,
  // whose children (CMD and what CMD left) are walked all the same.
  void visit(long kid) {
    if (known(kid) || !mandate->holds()) return;
    if (kid != self) {
      proc_walk::ProcStat st;
      if (!proc_walk::read_stat(kid, st)) return; // gone meanwhile
      if (st.pgrp == kid && kid > 1) raw::kill(-kid, SIGKILL);
      raw::kill(kid, SIGKILL);
      if (st.state != 'Z' && st.state != 'X') ++alive;
    }
    add(kid);
  }
};

// One pass over the tree below `root`. Returns how many were alive.
int kill_pass(Pass& p, long root) {
  p.count = 0;
  p.alive = 0;
  p.add(root);
  auto visit = [&p](long kid) { p.visit(kid); };
  for (int i = 0; i < p.count; ++i) proc_walk::each_child(p.walker, p.queue[i], false, visit);
  return p.alive;
}

} // namespace

void kill_everything(long root, long pgid, bool by_scan, const Mandate& mandate) {
  if (pgid > 1) raw::kill(-pgid, SIGKILL);
  Pass p;
  p.self = raw::getpid();
  p.mandate = &mandate;
  if (by_scan) p.walker.children_files = 0;
  for (int pass = 0; pass < k_kill_passes && mandate.holds(); ++pass)
    if (kill_pass(p, root) == 0) break;
}

} // namespace simba::process::watchdog_kill
