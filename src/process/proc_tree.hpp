#pragma once
// simba's process tree as Child sees it: the descendants of a process (a
// consistent picture, not one racy walk), signalling them, and a zombie's
// wait status. The walk itself is nolibc/proc_walk, which the watchdog's
// kill at the deadline uses too.
#include <sys/types.h>

#include <vector>

namespace simba::process::proc_tree {

struct ProcInfo {
  pid_t pid = 0;
  pid_t ppid = 0;
  pid_t pgrp = 0;
  char state = '?'; // 'Z' zombie, 'X' dead
};

// Reads /proc/PID/stat. False when the process is gone (or unreadable).
bool read_stat(pid_t pid, ProcInfo& out);

// The wait status (as waitpid gives it) of `pid` while it is a zombie not
// yet reaped by its parent: field 52 of /proc/PID/stat (exit_code, Linux
// 3.5). False when it is no zombie, gone, or its fields are not ours to read.
bool zombie_wait_status(pid_t pid, int& wait_status);

// True when `pid` exists and is neither a zombie nor dead.
bool is_alive(pid_t pid);

// Every descendant of `root` (transitively), except `spare` itself (the
// watchdog: what runs below it, CMD and its orphans, is listed). Zombies
// are included (their state says so). `spare` starts no threads: its
// children are all its main thread's.
std::vector<ProcInfo> descendants(pid_t root, pid_t spare = -1);

// Sends `signo` to every descendant of `root` except `spare` itself, and
// to the process group of each descendant that leads one. ESRCH is ignored.
// Returns how many of them were alive (not zombies) when signalled.
// Members of `signalled_group` (and of groups led by descendants, which are
// signalled as groups) are not signalled again one by one.
int signal_descendants(pid_t root, int signo, pid_t spare = -1, pid_t signalled_group = 0);

// True while any descendant of `root` other than `spare` itself is alive.
bool any_descendant_alive(pid_t root, pid_t spare = -1);

} // namespace simba::process::proc_tree
