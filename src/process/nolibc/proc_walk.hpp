#pragma once
// Reading the process tree from /proc with no libc and no allocation: the
// one walker of simba, used by the watchdog's kill at the deadline (in the
// clone, where libc is not safe: see syscalls.hpp) and by proc_tree.cpp
// (Child stopping what CMD left behind).
#include <cstddef>

namespace simba::process::proc_walk {

struct ProcStat {
  long pid = 0;
  long ppid = 0;
  long pgrp = 0;
  char state = '?'; // 'Z' zombie, 'X' dead
};

// A path built from text and numbers, e.g. "/proc/12/task/12/children".
struct Path {
  char buf[96];
  size_t len = 0;
  Path& add(const char* s);
  Path& add(long v);
};

// A decimal number without sign or leading zero (so "0" only if zero_ok),
// as /proc names pids and /proc/self/fd descriptors.
bool parse_number(const char* s, long& out, bool zero_ok = false);

// Reads a file whole into buf (up to cap - 1 bytes, NUL-terminated). Returns
// the length, or -1 when it cannot be opened (`open_error` then holds -errno).
long read_file(const char* path, char* buf, size_t cap, long* open_error = nullptr);

// Reads /proc/PID/stat. False when the process is gone (or unreadable).
bool read_stat(long pid, ProcStat& out);

using Visit = void (*)(void* context, long number);

// What a directory's numbered entries name: pids (/proc, /proc/PID/task)
// or descriptors (/proc/self/fd: 0 is one; the directory's own is left out).
enum class Names { pids, fds };

// Calls visit(context, n) for each entry of directory `dir` named by a
// number n (see parse_number). Nothing when it cannot be opened.
void each_numbered_entry(const char* dir, char* dents, size_t cap, Names names, Visit visit,
                         void* context);

// The buffers of a walk (too big for a small stack twice over) and what it
// learnt of the kernel.
struct Walker {
  char text[16384];        // a children file
  char dents[4096];        // a scan of /proc
  int children_files = -1; // -1 unknown, 0 missing, 1 present (CONFIG_PROC_CHILDREN)
};

// Calls visit(context, child) for each child of `pid`: from
// /proc/PID/task/*/children, else (a kernel without them) from a scan of
// every process's parent. `single_thread`: `pid` starts no threads, so its
// children are all its main thread's: one file to read, not a walk of task/.
// A process that is gone has no children.
void each_child(Walker& w, long pid, bool single_thread, Visit visit, void* context);

// each_child with a callable f(long child).
template <typename F> void each_child(Walker& w, long pid, bool single_thread, F& f) {
  each_child(
      w, pid, single_thread, [](void* c, long kid) { (*static_cast<F*>(c))(kid); }, &f);
}

} // namespace simba::process::proc_walk
