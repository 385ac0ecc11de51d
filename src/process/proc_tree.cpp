#include "process/proc_tree.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <set>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace simba::process::proc_tree {
namespace {

// Reads a small /proc file whole. False if it cannot be opened.
bool read_file(const char* path, std::string& out, int* open_errno = nullptr) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (open_errno) *open_errno = errno;
    return false;
  }
  out.clear();
  char buf[4096];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, size_t(n));
  }
  close(fd);
  return true;
}

// Parses "pid (comm) S ppid pgrp ...". comm may hold spaces and ')', so the
// fields start after the last ')'.
bool parse_stat(const char* text, size_t len, ProcInfo& out) {
  const char* end = text + len;
  const char* close_paren = nullptr;
  for (const char* p = text; p < end; ++p)
    if (*p == ')') close_paren = p;
  if (!close_paren) return false;
  char state = 0;
  int ppid = 0, pgrp = 0;
  std::string rest(close_paren + 1, end);
  if (std::sscanf(rest.c_str(), " %c %d %d", &state, &ppid, &pgrp) != 3) return false;
  out.pid = pid_t(std::atoi(text));
  out.state = state;
  out.ppid = ppid;
  out.pgrp = pgrp;
  return true;
}

bool parse_pid(const char* name, pid_t& pid) {
  if (*name < '1' || *name > '9') return false;
  long v = 0;
  for (const char* p = name; *p; ++p) {
    if (*p < '0' || *p > '9') return false;
    v = v * 10 + (*p - '0');
    if (v > 0x7fffffff) return false;
  }
  pid = pid_t(v);
  return true;
}

// Every process on the system, from a scan of /proc.
std::vector<ProcInfo> all_processes() {
  std::vector<ProcInfo> procs;
  DIR* dir = opendir("/proc");
  if (!dir) return procs;
  while (dirent* ent = readdir(dir)) {
    pid_t pid = 0;
    if (!parse_pid(ent->d_name, pid)) continue;
    ProcInfo info;
    if (read_stat(pid, info)) procs.push_back(info);
  }
  closedir(dir);
  return procs;
}

// Children of `pid` from /proc/PID/task/*/children (CONFIG_PROC_CHILDREN):
// far cheaper than scanning all of /proc. False when the kernel lacks it.
// Appends the pids listed in a children file's text.
void parse_pids(const std::string& text, std::vector<pid_t>& out) {
  const char* p = text.c_str();
  while (*p) {
    char* next = nullptr;
    long v = std::strtol(p, &next, 10);
    if (next == p) break;
    if (v > 0) out.push_back(pid_t(v));
    p = next;
  }
}

bool children_from_proc(pid_t pid, std::vector<pid_t>& out, bool single_thread = false) {
  char path[64];
  // Our own children and the watchdog's, on every CMD exit: neither starts
  // threads, so they are all its main thread's, one file instead of a walk
  // of task/.
  if (pid == getpid() || single_thread) {
    std::snprintf(path, sizeof path, "/proc/%d/task/%d/children", int(pid), int(pid));
    std::string text;
    if (read_file(path, text)) {
      parse_pids(text, out);
      return true;
    }
  }
  std::snprintf(path, sizeof path, "/proc/%d/task", int(pid));
  DIR* dir = opendir(path);
  if (!dir) return true; // the process is gone: no children
  bool supported = true;
  std::string text;
  while (dirent* ent = readdir(dir)) {
    pid_t tid = 0;
    if (!parse_pid(ent->d_name, tid)) continue;
    std::snprintf(path, sizeof path, "/proc/%d/task/%d/children", int(pid), int(tid));
    int err = 0;
    if (!read_file(path, text, &err)) {
      if (err == ENOENT) {
        // Either the feature is missing or the thread just exited: tell the
        // two apart by the thread directory itself.
        std::snprintf(path, sizeof path, "/proc/%d/task/%d", int(pid), int(tid));
        if (access(path, F_OK) == 0) supported = false;
      }
      if (!supported) break;
      continue;
    }
    parse_pids(text, out);
  }
  closedir(dir);
  return supported;
}

// Bound on walks until two agree (each disagreement needs a parent to die
// exactly during a walk).
constexpr int k_max_walks = 8;

// -1 unknown, 0 no, 1 yes: whether the kernel has /proc/.../children.
int g_children_files = -1;

bool descendants_via_children(pid_t root, pid_t spare, std::vector<ProcInfo>& out) {
  std::vector<pid_t> queue{root};
  for (size_t i = 0; i < queue.size(); ++i) {
    std::vector<pid_t> kids;
    if (!children_from_proc(queue[i], kids, queue[i] == spare)) return false;
    for (pid_t kid : kids) {
      if (kid == root) continue;
      if (std::find(queue.begin(), queue.end(), kid) != queue.end()) continue;
      queue.push_back(kid);
      if (kid == spare) continue; // not listed, but its children are
      ProcInfo info;
      if (!read_stat(kid, info)) continue; // exited meanwhile
      out.push_back(info);
    }
  }
  return true;
}

void descendants_via_scan(pid_t root, pid_t spare, std::vector<ProcInfo>& out) {
  std::vector<ProcInfo> procs = all_processes();
  std::sort(procs.begin(), procs.end(),
            [](const ProcInfo& a, const ProcInfo& b) { return a.ppid < b.ppid; });
  std::vector<pid_t> queue{root};
  for (size_t i = 0; i < queue.size(); ++i) {
    auto range = std::equal_range(procs.begin(), procs.end(), ProcInfo{0, queue[i], 0, 0},
                                  [](const ProcInfo& a, const ProcInfo& b) { return a.ppid < b.ppid; });
    for (auto it = range.first; it != range.second; ++it) {
      if (it->pid == root) continue;
      if (it->pid != spare) out.push_back(*it);
      queue.push_back(it->pid);
    }
  }
}

std::vector<ProcInfo> walk(pid_t root, pid_t spare) {
  std::vector<ProcInfo> out;
  if (g_children_files != 0) {
    if (descendants_via_children(root, spare, out)) {
      g_children_files = 1;
      return out;
    }
    g_children_files = 0;
    out.clear();
  }
  descendants_via_scan(root, spare, out);
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
  char path[32];
  std::snprintf(path, sizeof path, "/proc/%d/stat", int(pid));
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  // The fields we need come right after comm (at most 16 bytes), so the
  // first 512 bytes always hold them.
  char buf[512];
  ssize_t n;
  do {
    n = read(fd, buf, sizeof buf);
  } while (n < 0 && errno == EINTR);
  close(fd);
  if (n <= 0) return false;
  return parse_stat(buf, size_t(n), out);
}

bool zombie_wait_status(pid_t pid, int& wait_status) {
  char path[32];
  std::snprintf(path, sizeof path, "/proc/%d/stat", int(pid));
  std::string text;
  if (!read_file(path, text)) return false;
  auto close_paren = text.rfind(')');
  if (close_paren == std::string::npos) return false;
  // Fields 3 to 52 follow comm: the state first, exit_code last.
  const char* p = text.c_str() + close_paren + 1;
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
