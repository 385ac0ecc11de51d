#!/usr/bin/env python3
"""Run a command in the foreground of a terminal of its own (a pty), as an
interactive shell would run it, and exit with its status:

    python3 tests/unit/on_terminal.py [--require REGEX] CMD ARGS...

ctest (and CI) has no terminal, so the unit cases that need one (simba on a
terminal hands it to CMD, Ctrl-Z stops both) would never run there.
script(1) gives a terminal, but stops itself for good when its child
stops, and runs the command as the session leader, whose process group is
orphaned, so that the kernel discards a SIGTSTP sent to it. Here, as in a
shell with job control: a session leader owns the pty, the command runs in
a process group of its own, the terminal's foreground group, and a stop of
the command is not its end (waitpid without WUNTRACED). Its output goes to
our stdout. --require REGEX: also fail unless the output matches (that the
cases ran, not just that nothing failed). Killed after 120 s.
"""
import os
import re
import select
import signal
import sys
import termios
import fcntl
import time


def session_leader(slave, argv):
    """In the child: a new session on the pty; CMD in the foreground group."""
    os.setsid()
    fcntl.ioctl(slave, termios.TIOCSCTTY, 0)
    cmd = os.fork()
    if cmd == 0:
        os.setpgid(0, 0)
        # tcsetpgrp from a background group raises SIGTTOU unless ignored.
        signal.signal(signal.SIGTTOU, signal.SIG_IGN)
        os.tcsetpgrp(slave, os.getpgrp())
        signal.signal(signal.SIGTTOU, signal.SIG_DFL)
        for fd in (0, 1, 2):
            os.dup2(slave, fd)
        if slave > 2:
            os.close(slave)
        try:
            os.execvp(argv[0], argv)
        except OSError as e:
            print(f"on_terminal: cannot run {argv[0]}: {e}", file=sys.stderr)
            os._exit(127)
    try:
        os.setpgid(cmd, cmd)  # also here: whichever runs first
    except OSError:
        pass
    _, status = os.waitpid(cmd, 0)  # stops are not reported: only the end
    os._exit(os.waitstatus_to_exitcode(status) & 0xFF)


def main():
    args = sys.argv[1:]
    require = None
    if args[:1] == ["--require"]:
        require, args = re.compile(args[1]), args[2:]
    if not args:
        print(__doc__, file=sys.stderr)
        return 64
    master, slave = os.openpty()
    pid = os.fork()
    if pid == 0:
        os.close(master)
        session_leader(slave, args)
    os.close(slave)
    output = b""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 1)
        if not ready:
            continue
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: every end of the slave is closed
            break
        if not chunk:
            break
        output += chunk
        sys.stdout.buffer.write(chunk)
        sys.stdout.flush()
    else:
        print("on_terminal: FAIL: still running after 120 s", file=sys.stderr)
        os.killpg(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    rc = os.waitstatus_to_exitcode(status)
    # A terminal gets colours (doctest's): match the text without them.
    text = re.sub(r"\x1b\[[0-9;]*m", "", output.decode(errors="replace"))
    if rc == 0 and require and not require.search(text):
        print(f"on_terminal: FAIL: the output does not match {require.pattern!r}",
              file=sys.stderr)
        return 1
    return rc if rc >= 0 else 128 - rc


if __name__ == "__main__":
    sys.exit(main())
