#!/usr/bin/env python3
"""systemd's side of sd_notify for the tests: binds an AF_UNIX datagram
socket at PATH ('@name': the abstract namespace) and appends each datagram
it receives to LOG as one line, "<epoch ms> <fields joined by '|'>",
flushed at once. Runs until killed.

    notify_listener.py PATH LOG
"""
import socket
import sys
import time

path, log = sys.argv[1], sys.argv[2]
sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
sock.bind("\0" + path[1:] if path.startswith("@") else path)
with open(log, "a", buffering=1) as out:
    out.write("%d BOUND\n" % int(time.time() * 1000))
    while True:
        data = sock.recv(4096)
        fields = data.decode("utf-8", "replace").strip("\n").split("\n")
        out.write("%d %s\n" % (int(time.time() * 1000), "|".join(fields)))
