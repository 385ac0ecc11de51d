"""Network faults on the Links of a backend: one host's link, or every one.

The durations are chosen around the timings of the run (ttl 1 s, transition
1 s, call timeout 500 ms): a partition shorter or longer than a lease, a
delay above the call timeout, another above the transition.
"""
import time

NETWORK_FAULTS = [
    "partition_host",        # one host, both ways
    "partition_host_up",     # one host, its requests lost, replies flow
    "partition_host_down",   # one host, requests arrive, its replies lost
    "partition_server",      # every host at once, both ways
    "slow_host",             # one host: delay above the call timeout
    "slow_host_transition",  # one host: delay above the transition
    "slow_server",           # every host: delay above the transition
    "reset_mid_call",        # one host: the next reply lost, connection reset
]


class NetworkFaults:
    def __init__(self, links, rng, later):
        self.links, self.rng, self.later = links, rng, later  # links: host -> Link
        self.busy_until = 0.0

    def kinds(self):
        return NETWORK_FAULTS if self.links else []

    def busy(self):
        return time.monotonic() < self.busy_until

    def inject(self, kind, target_host):
        """Starts fault `kind` on target_host's link (or all) and schedules
        its heal."""
        rng = self.rng
        link = self.links[target_host]
        if kind == "partition_server":
            hit, seconds = list(self.links.values()), rng.uniform(0.5, 4.0)
            for l in hit:
                l.hold_up = l.hold_down = True
        elif kind.startswith("partition_host"):
            hit, seconds = [link], rng.uniform(0.5, 4.0)
            link.hold_up = kind != "partition_host_down"
            link.hold_down = kind != "partition_host_up"
        elif kind == "slow_host":
            hit, seconds = [link], rng.uniform(2.0, 5.0)
            link.delay_s, link.jitter_s = rng.uniform(0.6, 0.9), 0.1
        elif kind == "slow_host_transition":
            hit, seconds = [link], rng.uniform(2.0, 5.0)
            link.delay_s, link.jitter_s = rng.uniform(1.2, 2.0), 0.3
        elif kind == "slow_server":
            hit, seconds = list(self.links.values()), rng.uniform(3.0, 8.0)
            delay = rng.uniform(1.2, 2.0)
            for l in hit:
                l.delay_s, l.jitter_s = delay, 0.3
        elif kind == "reset_mid_call":
            hit, seconds = [link], 2.0  # cleared if no reply came by then
            link.reset_next = True
        else:
            raise ValueError(kind)
        self.busy_until = time.monotonic() + seconds + 0.2
        self.later(seconds, lambda: [l.heal() for l in hit])
