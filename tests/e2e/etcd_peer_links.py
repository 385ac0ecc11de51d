#!/usr/bin/env python3
"""The peer traffic of a 3-member etcd cluster through fault proxies, so
that a test can cut one member off from its peers (a partition) while its
clients still reach it (tests/e2e/test_etcd_partition_*.sh).

    etcd_peer_links.py DIR ETCD_DIR PEER_PORT0 PEER_PORT1 PEER_PORT2

Starts a Link (scripts/chaos_lib/proxy.py) in front of each member's peer
port and writes their ports to DIR/ports ("P0 P1 P2"): the members
advertise these as their peer URLs. A member's own connections to the
others are told apart by the process that holds their client end (its
socket's inode in /proc/net/tcp, found among the fds of the etcd whose
data directory is ETCD_DIR/mI: member I). DIR/cut, polled every 20 ms, names
the member to cut off ("1"; empty or absent: none): every connection to
it and every one it made to the others is held both ways, as a partition
holds packets; a connection made meanwhile is held too. Exits when its
parent does."""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "scripts"))
from chaos_lib.proxy import Network  # noqa: E402


def inode_of(port):
    """The inode of the loopback socket whose local port is `port`."""
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                next(f)
                for line in f:
                    fields = line.split()
                    if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[9] != "0":
                        return fields[9]
        except OSError:
            continue
    return None


def members(etcd_dir):
    """{pid: I} of the etcd processes whose data directory is ETCD_DIR/mI."""
    found = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                args = f.read().decode(errors="replace").split("\0")
        except OSError:
            continue
        for flag, value in zip(args, args[1:]):
            if flag == "--data-dir" and os.path.dirname(value) == etcd_dir:
                name = os.path.basename(value)
                if name[:1] == "m" and name[1:].isdigit():
                    found[pid] = int(name[1:])
    return found


def member_holding(inode, etcd_dir):
    """The index of the member whose process holds socket `inode`."""
    want = f"socket:[{inode}]"
    for pid, i in members(etcd_dir).items():
        fds = f"/proc/{pid}/fd"
        try:
            names = os.listdir(fds)
        except OSError:
            continue
        for name in names:
            try:
                if os.readlink(f"{fds}/{name}") == want:
                    return i
            except OSError:
                continue
    return None


def main():
    out, etcd_dir = sys.argv[1], os.path.abspath(sys.argv[2])
    targets = [int(p) for p in sys.argv[3:6]]
    parent = os.getppid()

    def source_of(port):
        inode = inode_of(port)
        i = member_holding(inode, etcd_dir) if inode else None
        if i is None:
            print(f"peer connection from port {port}: no member's", file=sys.stderr, flush=True)
        return None if i is None else f"m{i}"

    net = Network()
    links = [net.link("peers", f"m{i}", targets[i], source_of=source_of) for i in range(3)]
    with open(os.path.join(out, "ports.tmp"), "w") as f:
        f.write(" ".join(str(link.port) for link in links) + "\n")
    os.rename(os.path.join(out, "ports.tmp"), os.path.join(out, "ports"))
    cut = None
    while os.getppid() == parent:
        try:
            with open(os.path.join(out, "cut")) as f:
                want = f.read().strip() or None
        except OSError:
            want = None
        if want != cut:
            cut = want
            for i, link in enumerate(links):
                isolated = cut == str(i)
                link.hold_up = link.hold_down = isolated
                link.cut_from = {f"m{cut}"} if cut is not None and not isolated else set()
            print(f"{time.time():.3f} cut: {cut or 'none'}", file=sys.stderr, flush=True)
        time.sleep(0.02)
    net.close()


if __name__ == "__main__":
    main()
