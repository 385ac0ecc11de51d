#include "process/nolibc/proc_walk.hpp"

#include <cerrno>
#include <cstdint>

#include "process/nolibc/syscalls.hpp"

namespace simba::process::proc_walk {
namespace {

struct Dirent64 {
  uint64_t ino;
  int64_t off;
  unsigned short reclen;
  unsigned char type;
  char name[1];
};

// Calls visit for each number in a children file's text ("12 345 ").
void each_listed_pid(char* text, long len, size_t cap, Visit visit, void* context) {
  // A full buffer may end inside a number: drop it (a later walk finds it).
  if (size_t(len) + 1 >= cap)
    while (len > 0 && text[len - 1] != ' ') text[--len] = 0;
  long v = 0;
  bool digits = false;
  for (long i = 0; i <= len; ++i) {
    char c = text[i];
    if (c >= '0' && c <= '9') {
      v = v * 10 + (c - '0');
      digits = true;
    } else {
      if (digits && v > 0) visit(context, v);
      v = 0;
      digits = false;
    }
  }
}

// The children of one thread of `pid`, from its children file. False when
// the kernel lacks these files (the thread's directory exists, its file
// does not); a thread that just exited lists nothing.
bool children_of_thread(Walker& w, long pid, long tid, Visit visit, void* context) {
  long err = 0;
  Path file = Path().add("/proc/").add(pid).add("/task/").add(tid).add("/children");
  long len = read_file(file.buf, w.text, sizeof w.text, &err);
  if (len < 0) {
    if (err != -ENOENT) return true;
    Path thread = Path().add("/proc/").add(pid).add("/task/").add(tid);
    long fd = raw::open_read(thread.buf, O_DIRECTORY);
    if (fd < 0) return true;
    raw::close(fd);
    return false;
  }
  w.children_files = 1;
  each_listed_pid(w.text, len, sizeof w.text, visit, context);
  return true;
}

// The children files of every thread of `pid`. False when the kernel lacks them.
bool children_from_files(Walker& w, long pid, Visit visit, void* context) {
  struct Threads {
    Walker& w;
    long pid;
    Visit visit;
    void* context;
    bool supported;
  } threads{w, pid, visit, context, true};
  char dents[1024]; // the tasks of one process; the big buffer is the scan's
  Path dir = Path().add("/proc/").add(pid).add("/task");
  each_numbered_entry(
      dir.buf, dents, sizeof dents, Names::pids,
      [](void* c, long tid) {
        auto& t = *static_cast<Threads*>(c);
        if (t.supported) t.supported = children_of_thread(t.w, t.pid, tid, t.visit, t.context);
      },
      &threads);
  return threads.supported;
}

// The children of `pid` by a scan of every process's parent.
void children_from_scan(Walker& w, long pid, Visit visit, void* context) {
  struct Scan {
    long parent;
    Visit visit;
    void* context;
  } scan{pid, visit, context};
  each_numbered_entry(
      "/proc", w.dents, sizeof w.dents, Names::pids,
      [](void* c, long other) {
        auto& s = *static_cast<Scan*>(c);
        ProcStat st;
        if (read_stat(other, st) && st.ppid == s.parent) s.visit(s.context, other);
      },
      &scan);
}

} // namespace

Path& Path::add(const char* s) {
  while (*s && len + 1 < sizeof buf) buf[len++] = *s++;
  buf[len] = 0;
  return *this;
}

Path& Path::add(long v) {
  char digits[24];
  int n = 0;
  do {
    digits[n++] = char('0' + v % 10);
    v /= 10;
  } while (v > 0 && n < 23);
  while (n > 0 && len + 1 < sizeof buf) buf[len++] = digits[--n];
  buf[len] = 0;
  return *this;
}

bool parse_number(const char* s, long& out, bool zero_ok) {
  if (zero_ok && s[0] == '0' && s[1] == 0) {
    out = 0;
    return true;
  }
  if (*s < '1' || *s > '9') return false;
  long v = 0;
  for (; *s; ++s) {
    if (*s < '0' || *s > '9' || v > 0x7fffffff / 10) return false;
    v = v * 10 + (*s - '0');
  }
  out = v;
  return true;
}

long read_file(const char* path, char* buf, size_t cap, long* open_error) {
  long fd = raw::open_read(path, 0);
  if (fd < 0) {
    if (open_error) *open_error = fd;
    return -1;
  }
  size_t len = 0;
  while (len + 1 < cap) {
    long n = raw::read(fd, buf + len, cap - 1 - len);
    if (n == -EINTR) continue;
    if (n <= 0) break;
    len += size_t(n);
  }
  raw::close(fd);
  buf[len] = 0;
  return long(len);
}

// "pid (comm) S ppid pgrp ...": comm may hold anything, so the fields start
// after the last ')'. They come right after comm (at most 16 bytes), so one
// read of 512 bytes always holds them.
bool read_stat(long pid, ProcStat& out) {
  char text[512];
  long fd = raw::open_read(Path().add("/proc/").add(pid).add("/stat").buf, 0);
  if (fd < 0) return false;
  long len;
  do {
    len = raw::read(fd, text, sizeof text - 1);
  } while (len == -EINTR);
  raw::close(fd);
  if (len <= 0) return false;
  text[len] = 0;
  const char* p = nullptr;
  for (long i = 0; i < len; ++i)
    if (text[i] == ')') p = text + i;
  if (!p) return false;
  ++p;
  while (*p == ' ') ++p;
  if (!*p) return false;
  out.state = *p++;
  long fields[2] = {0, 0};
  for (long& f : fields) {
    while (*p == ' ') ++p;
    bool negative = *p == '-';
    if (negative) ++p;
    if (*p < '0' || *p > '9') return false;
    while (*p >= '0' && *p <= '9') f = f * 10 + (*p++ - '0');
    if (negative) f = -f;
  }
  out.pid = pid;
  out.ppid = fields[0];
  out.pgrp = fields[1];
  return true;
}

void each_numbered_entry(const char* dir, char* dents, size_t cap, Names names, Visit visit,
                         void* context) {
  long fd = raw::open_read(dir, O_DIRECTORY);
  if (fd < 0) return;
  for (;;) {
    long n = raw::getdents64(fd, dents, cap);
    if (n == -EINTR) continue;
    if (n <= 0) break;
    for (long off = 0; off < n;) {
      auto* d = reinterpret_cast<Dirent64*>(dents + off);
      off += d->reclen;
      long number = 0;
      if (!parse_number(d->name, number, names == Names::fds)) continue;
      if (names == Names::fds && number == fd) continue; // our own, not theirs
      visit(context, number);
    }
  }
  raw::close(fd);
}

void each_child(Walker& w, long pid, bool single_thread, Visit visit, void* context) {
  if (w.children_files != 0) {
    if (single_thread) {
      Path file = Path().add("/proc/").add(pid).add("/task/").add(pid).add("/children");
      long len = read_file(file.buf, w.text, sizeof w.text);
      if (len >= 0) {
        w.children_files = 1;
        each_listed_pid(w.text, len, sizeof w.text, visit, context);
        return;
      }
    }
    if (children_from_files(w, pid, visit, context)) return;
    w.children_files = 0;
  }
  children_from_scan(w, pid, visit, context);
}

} // namespace simba::process::proc_walk
