"""Reads what the CMDs recorded (tests/chaos/chaos_cmd.cpp) and judges it.

Lines: `<what> <token> <contender> <monotonic ns> <pid>`, what = start,
overlap (the kernel flock was still held by another CMD: exact; with --slots
N, all N flocks were: more than N CMDs at once), end, fenced (the fencing
resource refused the token: a larger one had written before). With --slots
the contender is `<contender>:s<slot>` and the fencing resource is the
slot's.
"""


def read_log(path):
    starts, overlaps, fenced = [], [], []
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) != 5 or not parts[1].isdigit():
                continue
            what, token, contender, ns, _ = parts
            if what == "start":
                starts.append((int(ns), int(token), contender))
            elif what == "overlap":
                overlaps.append(line.strip())
            elif what == "fenced":
                fenced.append(line.strip())
    starts.sort()
    return starts, overlaps, fenced


def hand_overs(starts, fault_times):
    """(hand-overs, faulted ones): a start under a new token, faulted when a
    fault was injected since the previous start."""
    faults = sorted(fault_times)
    total = faulted = 0
    i = 0
    for (t0, tok0, _), (t1, tok1, _) in zip(starts, starts[1:]):
        while i < len(faults) and faults[i] <= t0:
            i += 1
        if tok1 != tok0:
            total += 1
            faulted += i < len(faults) and faults[i] <= t1
    return total, faulted


def slot_of(contender):
    """The slot of a --slots CMD's contender field; None without slots."""
    head, sep, slot = contender.rpartition(":s")
    return slot if sep and head else None


def token_inversions(starts, slots=1):
    """Tokens strictly increasing: per mutex, or with --slots per slot (the
    slots' leases run side by side, so their CMDs may start in another order
    than their tokens were drawn) and then never one token for two
    contenders (tokens are drawn from one counter across the slots)."""
    if slots > 1:
        bad, owner = [], {}
        for slot in sorted({slot_of(c) for _, _, c in starts}, key=str):
            bad += token_inversions([s for s in starts if slot_of(s[2]) == slot])
        for _, tok, c in starts:
            base = c.rpartition(":s")[0]
            if owner.setdefault(tok, base) != base:
                bad.append(f"token {tok} of both {owner[tok]} and {base}")
        return bad
    bad = []
    for (_, tok0, c0), (_, tok1, c1) in zip(starts, starts[1:]):
        # A new lease has a larger token; lead restarts CMD in the same lease.
        if tok1 < tok0 or (tok1 == tok0 and c1 != c0):
            bad.append(f"{c0} token {tok0} then {c1} token {tok1}")
    return bad


def failovers(starts, kills, fault_times, bound_ms):
    """ms from each clean kill -9 of a holder's simba to the next start.
    kills: (monotonic ns, whether another fault was active then). Another
    fault near the kill delays the next start legitimately (a Redis that
    lost data quarantines the mutex for the longest lease + 1 s once it
    notices, a partition hides the release): only kills with no fault
    active (a backend counts a quarantine after a data loss as active) and
    none injected or healed within the bound around it count."""
    out = []
    window = bound_ms * 1_000_000
    for k, active in kills:
        later = [t for t, _, _ in starts if t > k]
        clean = not active and \
            not any(f != k and k - window <= f <= k + window for f in fault_times)
        if later and clean:
            out.append((later[0] - k) / 1e6)
    return out


def most_at_once(path):
    """The most CMDs that ran at once, counting those that recorded their
    end (a CMD killed -9 records none): with --slots N, N shows that the
    slots were used side by side."""
    events = {}
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) == 5 and parts[0] in ("start", "end") and parts[3].isdigit():
                events.setdefault(parts[4], {})[parts[0]] = int(parts[3])
    edges = []
    for e in events.values():
        if "start" in e and "end" in e:
            edges += [(e["start"], 1), (e["end"], -1)]
    edges.sort(key=lambda x: (x[0], x[1]))
    most = held = 0
    for _, d in edges:
        held += d
        most = max(most, held)
    return most


def server_failovers(path, server_faults, fault_times, bound_ms):
    """ms from each clean server failover (Sentinel) to the next new
    lease's first CMD, counted from the fault or, when the lease running at
    the fault survived it, from that lease's last CMD end before the new one
    (its holder's release; the new master's quarantine may add to it).
    server_faults: (monotonic ns, clean). Clean: no other fault active then,
    and none injected or healed from a bound before it to the new start."""
    starts, ends = [], {}
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) != 5 or not parts[1].isdigit() or not parts[3].isdigit():
                continue
            what, token, ns = parts[0], int(parts[1]), int(parts[3])
            if what == "start":
                starts.append((ns, token))
            elif what == "end":
                ends.setdefault(token, []).append(ns)
    starts.sort()
    out = []
    window = bound_ms * 1_000_000
    for t, clean in server_faults:
        before = [tok for ns, tok in starts if ns <= t]
        running = before[-1] if before else None
        new = next((ns for ns, tok in starts if ns > t and tok != running), None)
        if new is None or not clean:
            continue
        if any(f != t and t - window <= f <= new for f in fault_times):  # another fault
            continue
        since = max([t] + [e for e in ends.get(running, []) if e < new])
        out.append((new - since) / 1e6)
    return out
