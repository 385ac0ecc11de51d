#include "process/proc_tree.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>

#include "process/proc_tree.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <set>

#include "process/nolibc/proc_walk.hpp"

namespace simba::process::proc_tree {
namespace {

// Bound on walks until two agree (each disagreement needs a parent to die
// exactly during a walk).
constexpr int k_max_walks = 8;

// The walker's buffers, and what it learnt of the kernel, kept between walks.
proc_walk::Walker g_walker;

ProcInfo to_info(const proc_walk::ProcStat& st) {
  return ProcInfo{pid_t(st.pid), pid_t(st.ppid), pid_t(st.pgrp), st.state};
}

// One walk, breadth first: every descendant of `root` but `spare`.
std::vector<ProcInfo> walk(pid_t root, pid_t spare) {
  std::vector<ProcInfo> out;
  std::vector<pid_t> queue{root};
  auto visit = [&](long kid) {
    if (kid == root || std::find(queue.begin(), queue.end(), pid_t(kid)) != queue.end()) return;
    queue.push_back(pid_t(kid));
    if (kid == spare) return; // not listed, but its children are
    proc_walk::ProcStat st;
    if (proc_walk::read_stat(kid, st)) out.push_back(to_info(st)); // else exited meanwhile
  };
  // We and the watchdog start no threads: their children are their main
  // thread's (see each_child). Both are walked on every CMD exit.
  pid_t self = getpid();
  for (size_t i = 0; i < queue.size(); ++i) {
    pid_t pid = queue[i];
    proc_walk::each_child(g_walker, pid, pid == self || pid == spare, visit);
  }
  return out;
}

std::vector<pid_t> living_pids(const std::vector<ProcInfo>& procs) {
  std::vector<pid_t> pids;
  for (const ProcInfo& p : procs)
    if (p.state != 'Z' && p.state != 'X') pids.push_back(p.pid);
  std::sort(pids.begin(), pids.end());
  return pids;
}

} // namespace

bool read_stat(pid_t pid, ProcInfo& out) {
  proc_walk::ProcStat st;
  if (!proc_walk::read_stat(pid, st)) return false;
  out = to_info(st);
  return true;
}

bool zombie_wait_status(pid_t pid, int& wait_status) {
  char text[1024];
  proc_walk::Path path = proc_walk::Path().add("/proc/").add(long(pid)).add("/stat");
  long len = proc_walk::read_file(path.buf, text, sizeof text);
  if (len <= 0) return false;
  const char* p = nullptr;
  for (long i = 0; i < len; ++i)
    if (text[i] == ')') p = text + i + 1;
  if (!p) return false;
  // Fields 3 to 52 follow comm: the state first, exit_code last.
  char state = 0;
  long value = 0;
  for (int field = 3; field <= 52; ++field) {
    while (*p == ' ') ++p;
    if (!*p) return false;
    if (field == 3) state = *p;
    if (field == 52) value = std::strtol(p, nullptr, 10);
    while (*p && *p != ' ' && *p != '\n') ++p;
  }
  if (state != 'Z') return false;
  wait_status = int(value);
  return true;
}

bool is_alive(pid_t pid) {
  ProcInfo info;
  return read_stat(pid, info) && info.state != 'Z' && info.state != 'X';
}

std::vector<ProcInfo> descendants(pid_t root, pid_t spare) {
  // One walk is not atomic: a process whose parent exits mid-walk moves to
  // its subreaper (the watchdog, or us) after we read that one's children and before we read its
  // old parent's, and is missed. A process moves once per parent death, so
  // two walks in a row that agree on the living set are a true picture.
  std::vector<ProcInfo> prev = walk(root, spare);
  // Nothing below root at all: nothing can move up to it later either (a
  // process moves only when an ancestor of it below root dies). The common
  // case on every CMD exit, so one walk only.
  if (prev.empty()) return prev;
  for (int attempt = 0; attempt < k_max_walks; ++attempt) {
    std::vector<ProcInfo> next = walk(root, spare);
    if (living_pids(next) == living_pids(prev)) return next;
    prev = std::move(next);
  }
  return prev;
}

int signal_descendants(pid_t root, int signo, pid_t spare, pid_t signalled_group) {
  // Each process gets the signal once: a second SIGTERM or SIGINT means
  // "quit now" to many programs and would cut their clean shutdown short.
  std::set<pid_t> groups;
  if (signalled_group > 1) groups.insert(signalled_group);
  std::vector<ProcInfo> all = descendants(root, spare);
  for (const ProcInfo& p : all) {
    // A descendant leading a process group: its group is ours as well
    // (even when the leader is an unreaped zombie, members may live on).
    if (p.pgrp == p.pid && p.pid > 1 && groups.insert(p.pid).second) kill(-p.pid, signo);
  }
  int alive = 0;
  for (const ProcInfo& p : all) {
    if (p.state == 'Z' || p.state == 'X') continue;
    ++alive;
    if (!groups.count(p.pgrp)) kill(p.pid, signo);
  }
  return alive;
}

bool any_descendant_alive(pid_t root, pid_t spare) {
  for (const ProcInfo& p : descendants(root, spare))
    if (p.state != 'Z' && p.state != 'X') return true;
  return false;
}

} // namespace simba::process::proc_tree
