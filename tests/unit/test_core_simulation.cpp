// Deterministic simulation of many contenders on one mutex, with crashes,
// pauses (SIGSTOP), backend errors, slow and lost replies and clock drift.
// Asserts at every virtual instant: at most one CMD runs, and a running CMD's
// lease is valid and carries its fencing token (no CMD outlives its lease).
// With slots(N) (--slots N): at most N CMDs run, each under its own slot's
// lease; slots are addressed as cli/backend_calls.cpp does.
#include "core/contender.hpp"
#include "core/names.hpp"
#include "core/slots.hpp"
#include "fake_backend.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <csignal>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <queue>
#include <random>

using namespace simba;
using namespace simba::core;

namespace {

struct Stats {
  int starts = 0, crashes = 0, pauses = 0, errors = 0, lost_replies = 0, watchdog_kills = 0,
      lost_leases = 0, completions = 0, hand_overs = 0, clock_steps = 0, most_running = 0;
};

class Simulation {
public:
  // `leaders`: also simulate `simba lead` and `simba schedule` processes.
  // `hand_over`: releases hand the mutex over to a waiter (Redis).
  Simulation(uint64_t seed, int contenders, bool leaders = false, bool hand_over = false)
      : m_rng(seed), m_contenders(contenders), m_leaders(leaders), m_hand_over(hand_over) {}

  // The backend's clock as its replies show it steps (an NTP step, `date
  // -s`) while it times leases on a steady clock (SQLite: CLOCK_BOOTTIME):
  // every reply's `now` and lease times carry the step of that moment.
  void with_clock_steps() { m_clock_steps = true; }

  Stats run(int64_t until) {
    for (int i = 0; i < m_contenders; ++i) spawn_process(0);
    schedule(500, [this] { fault(); });
    if (m_clock_steps) schedule(700, [this] { step_clock(); });
    if (m_lossy) schedule(700, [this] { lose(); });
    // Bounded: a contender that chains calls without end (each answered in
    // virtual time that barely moves) is a violation, not a hang.
    for (uint64_t n = 0; !m_events.empty() && m_events.top().t <= until; ++n) {
      if (n >= k_max_events) {
        m_violation = "more than " + std::to_string(k_max_events) +
                      " events before t=" + std::to_string(until) + ": a loop?";
        break;
      }
      Event e = m_events.top();
      m_events.pop();
      m_t = e.t;
      m_backend.now = k_backend_base + m_t;
      e.fn();
      check();
      if (!m_violation.empty()) break;
    }
    return m_stats;
  }

  const std::string& violation() const { return m_violation; }

  // Contenders given one of two labels (--contender-id web0 / web1), each
  // process with its own owner id, as simba makes them (issue 12 §1).
  Simulation& share_labels() {
    m_shared_labels = true;
    return *this;
  }
  // `simba release --force` now and then: of any lease, of the current
  // lease's token, or of a stale token (which revokes nothing).
  Simulation& force_releases() {
    m_force_releases = true;
    return *this;
  }
  int revocations() const { return m_revocations; }

  // --slots n: every contender asks for n slots; no hand-overs (a slot's
  // release wakes, it does not hand over: docs/decisions.md).
  Simulation& slots(int n) {
    m_slots = n;
    m_hand_over = false;
    return *this;
  }

  // Data loss (issue 12 §2): now and then the backend loses its newest
  // writes (back to a snapshot: a restart from an RDB, a failover to a
  // lagging replica; the server run changes) or all its keys (FLUSHALL; or
  // a restart without persistence). `quarantine`: the Redis backend's rule
  // (lua/common.lua: quarantine_end). The check is then against the leases
  // the backend granted, not the ones it still remembers.
  void lose_data(bool quarantine) {
    m_lossy = true;
    m_quarantine = quarantine;
    m_backend.clock_seeded_tokens = true;
    m_snapshot.clock_seeded_tokens = true;
  }
  int losses() const { return m_losses; }

private:
  static constexpr int64_t k_backend_base = 1'700'000'000'000;
  static constexpr int64_t k_ttl = 1000, k_transition = 500, k_kill_after = 200;
  static constexpr uint64_t k_max_events = 1'000'000; // a run has a few thousand

  struct Event {
    int64_t t;
    uint64_t seq;
    std::function<void()> fn;
    bool operator<(const Event& o) const { return t != o.t ? t > o.t : seq > o.seq; }
  };

  struct Proc {
    int index = 0;
    std::string id;
    std::unique_ptr<Contender> c;
    double rate = 1.0;
    int64_t offset = 0;
    bool alive = true;
    bool paused = false;
    std::deque<std::function<void()>> deferred;
    uint64_t call_gen = 0;
    uint64_t timer_gen = 0;
    // CMD
    bool child_alive = false;
    uint64_t child_gen = 0;
    uint64_t child_token = 0;
    bool ignores_term = false;
    int64_t watchdog = 0; // local deadline; 0 = disarmed
    // Local time at which it subscribed to its wake-ups (when it first
    // waited): a hand-over's lease is counted from it. -1: not yet.
    int64_t subscribed_at = -1;
    // --slots: the slot its last answered acquisition holds (-1: none
    // known), as cli/backend_calls.cpp keeps it; CMD's slot.
    int slot = -1;
    int child_slot = 0;
  };

  int64_t uniform(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(m_rng);
  }
  bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(m_rng) < p; }

  void schedule(int64_t at, std::function<void()> fn) {
    m_events.push({at, m_seq++, std::move(fn)});
  }

  int64_t local(const Proc& p) const {
    return p.offset + int64_t(std::floor(double(m_t) * p.rate));
  }
  // first virtual instant at which p's local clock reads >= l
  int64_t virtual_at(const Proc& p, int64_t l) const {
    int64_t t = int64_t(std::ceil(double(l - p.offset) / p.rate));
    while (p.offset + int64_t(std::floor(double(t) * p.rate)) < l) ++t;
    return std::max(t, m_t);
  }

  void spawn_process(int64_t delay) {
    schedule(m_t + delay, [this] {
      auto p = std::make_shared<Proc>();
      p->index = int(m_procs.size());
      p->id = "c" + std::to_string(p->index);
      std::string label = p->id;
      if (m_shared_labels) {
        label = "web" + std::to_string(uniform(0, 1));
        p->id = make_owner_id(label, m_rng());
      }
      p->rate = 1.0 + double(uniform(-50, 50)) / 10000.0; // drift within 0.5%
      p->offset = uniform(0, 1'000'000);
      ContenderConfig cfg;
      cfg.mutex = "m";
      cfg.contender_id = p->id;
      cfg.label = label;
      cfg.ttl_ms = k_ttl;
      cfg.transition_ms = k_transition;
      cfg.kill_after_ms = k_kill_after;
      cfg.call_timeout_ms = 300;
      cfg.retry_ms = 100;
      cfg.slots = m_slots;
      if (m_leaders) {
        int kind = int(uniform(0, 2));
        cfg.mode = kind == 0   ? ContenderConfig::Mode::run
                   : kind == 1 ? ContenderConfig::Mode::lead
                               : ContenderConfig::Mode::schedule;
        cfg.restart = ContenderConfig::Restart(uniform(0, 2));
        cfg.restart_delay_ms = uniform(0, 300);
        cfg.every_ms = uniform(100, 1500);
        cfg.fixed_rate = chance(0.5);
        cfg.initial_delay_ms = uniform(0, 500);
        if (chance(0.3)) cfg.max_runs = int(uniform(1, 5));
      }
      auto rng = std::make_shared<std::mt19937_64>(m_rng());
      p->c = std::make_unique<Contender>(cfg, ContendPeriod(p->id, [rng](int64_t lo, int64_t hi) {
                                           return std::uniform_int_distribution<int64_t>(
                                               lo, hi - 1)(*rng);
                                         }));
      m_procs.push_back(p);
      deliver(*p, [this, p] { return p->c->start(local(*p)); });
    });
  }

  // Runs an event of the supervisor: deferred while it is paused, dropped if dead.
  void deliver(Proc& p, std::function<Actions()> fn) {
    if (!p.alive) return;
    if (p.paused) {
      p.deferred.push_back([this, &p, fn] { execute(p, fn()); });
      return;
    }
    execute(p, fn());
  }

  void execute(Proc& p, const Actions& actions) {
    if (p.subscribed_at < 0 && p.c->phase() == Contender::Phase::contending && p.alive)
      p.subscribed_at = local(p);
    for (const Action& a : actions) {
      if (!p.alive) return;
      if (const auto* call = std::get_if<action::Call>(&a)) {
        send(p, *call);
      } else if (const auto* disown = std::get_if<action::Disown>(&a)) {
        // as the driver does: at once, the reply dropped
        CallResult r = release(p, disown->token);
        if (r.changed) notify_all();
      } else if (const auto* end = std::get_if<action::EndRevoked>(&a)) {
        end_revoked(p, end->token);
      } else if (const auto* lost = std::get_if<action::RecordLost>(&a); lost && lost->end_revoked) {
        end_revoked(p, lost->token);
      } else if (const auto* start = std::get_if<action::StartChild>(&a)) {
        start_child(p, *start);
      } else if (const auto* move = std::get_if<action::SetDeadline>(&a)) {
        arm_watchdog(p, move->deadline);
      } else if (const auto* sig = std::get_if<action::SignalAll>(&a)) {
        if (sig->signo == SIGKILL) {
          kill_child(p, 137);
        } else if (p.child_alive && !p.ignores_term) {
          uint64_t gen = p.child_gen;
          schedule(m_t + uniform(0, 150), [this, &p, gen] {
            if (p.child_gen == gen) kill_child(p, 143);
          });
        }
      } else if (const auto* exit = std::get_if<action::Exit>(&a)) {
        CHECK_MESSAGE(!p.child_alive, "simba exited with CMD running");
        p.alive = false;
        p.watchdog = 0;
        if (exit->code == 76) ++m_stats.lost_leases;
        spawn_process(uniform(0, 300));
      }
    }
    arm_timer(p);
  }

  void arm_timer(Proc& p) {
    auto at = p.c->wake_at();
    if (!at || !p.alive) return;
    uint64_t gen = ++p.timer_gen;
    schedule(virtual_at(p, *at), [this, &p, gen] {
      if (p.timer_gen != gen) return;
      deliver(p, [this, &p] {
        auto at = p.c->wake_at();
        if (at && local(p) >= *at) return p.c->on_timer(local(p));
        return Actions{};
      });
    });
  }

  void send(Proc& p, const action::Call& a) {
    uint64_t gen = ++p.call_gen;
    int64_t d1 = chance(0.1) ? uniform(50, 800) : uniform(0, 20);
    int64_t d2 = chance(0.1) ? uniform(50, 800) : uniform(0, 20);
    auto result = std::make_shared<CallResult>();
    action::Call call = a;
    std::string id = p.id;
    int slot = p.slot; // what the client knows when it sends
    schedule(m_t + d1, [this, result, call, id, slot] {
      if (chance(0.05)) {
        ++m_stats.errors;
        result->status = CallResult::Status::failed;
        result->error = "injected backend error";
        return;
      }
      bool was_valid = m_backend.lease("m").valid_at(m_backend.now);
      *result = shown(m_lossy ? apply_lossy(id, call) : apply(id, slot, call));
      if (call.op == Op::release && result->changed) {
        if (!m_hand_over || !hand_over(id)) notify_all();
      }
      if (result->changed) schedule(m_backend.lease("m").transition_at - k_backend_base, [] {});
      (void)was_valid;
    });
    // The driver gives up at the call's timeout: the reply is then unknown.
    int64_t timeout = a.timeout_ms;
    if (d1 + d2 > timeout) {
      ++m_stats.lost_replies;
      schedule(m_t + timeout, [this, &p, gen] {
        if (p.call_gen != gen) return;
        deliver(p, [this, &p] {
          CallResult r;
          r.status = CallResult::Status::indeterminate;
          r.error = "timeout";
          return p.c->on_reply(local(p), r);
        });
      });
    } else {
      schedule(m_t + d1 + d2, [this, &p, gen, result, call] {
        if (p.call_gen != gen) return;
        if (m_slots > 1 && call.op == Op::acquire && result->status == CallResult::Status::ok)
          p.slot = result->observed.lease.owned_by(p.id, result->observed.now)
                       ? result->observed.lease.slot
                       : -1;
        deliver(p, [this, &p, result] { return p.c->on_reply(local(p), *result); });
      });
    }
  }

  // A call as cli/backend_calls.cpp makes it: with slots, an acquire picks
  // one, the others address the slot the client knows.
  CallResult apply(const std::string& id, int slot, const action::Call& call) {
    if (m_slots == 1) return m_backend.apply("m", id, call);
    CallResult r;
    if (call.op == Op::acquire)
      return m_backend.acquire_slot("m", id, m_slots, call.ttl_ms, call.transition_ms);
    if (call.op == Op::release) {
      r = release_slot(id, slot, call.token);
    } else {
      r = m_backend.apply(slot_row("m", std::max(slot, 0)), id, call);
    }
    r.observed.lease.slot = std::max(slot, 0);
    return r;
  }

  // A release: with slots, token 0 or no slot known tries each one.
  CallResult release_slot(const std::string& id, int slot, uint64_t token) {
    if (slot >= 0 && token != 0) return m_backend.release(slot_row("m", slot), id, token);
    CallResult r;
    for (int k = 0; k < m_slots && !r.changed; ++k)
      r = m_backend.release(slot_row("m", k), id, token);
    return r;
  }

  CallResult release(Proc& p, uint64_t token) {
    if (m_slots == 1) return m_backend.release("m", p.id, token);
    return release_slot(p.id, p.slot, token);
  }

  // A revoked lease's end (action::EndRevoked, RecordLost::end_revoked),
  // as the driver does: at once, the reply dropped. Only once CMD is gone;
  // a slot's row is left to run out (backend.hpp: end_revoked).
  void end_revoked(Proc& p, uint64_t token) {
    CHECK_MESSAGE(!p.child_alive, "a revoked lease ended with CMD running");
    if (m_slots == 1 && m_backend.end_revoked("m", token).changed) notify_all();
  }

  // The Redis backend's release: the first waiter still listening (alive,
  // paused or not) becomes the owner in the release itself, and hears of
  // it (sometimes late, or while paused). Its simba gives back a lease it
  // does not take (action::Disown).
  bool hand_over(const std::string& releaser) {
    std::vector<Proc*> waiting;
    for (auto& q : m_procs)
      if (q->alive && q->id != releaser && q->subscribed_at >= 0 &&
          q->c->phase() == Contender::Phase::contending)
        waiting.push_back(q.get());
    if (waiting.empty()) return false;
    Proc* q = waiting[size_t(uniform(0, int64_t(waiting.size()) - 1))];
    if (m_lossy && quarantine_end(k_ttl + k_transition)) return false;
    auto grant =
        std::make_shared<CallResult>(shown(m_backend.acquire("m", q->id, k_ttl, k_transition)));
    if (!grant->changed) return false;
    note_grant(q->id, *grant);
    ++m_stats.hand_overs;
    int64_t delay = chance(0.1) ? uniform(50, 1500) : uniform(0, 5);
    schedule(m_t + delay, [this, q, grant] {
      deliver(*q, [this, q, grant] { return q->c->on_grant(local(*q), *grant, q->subscribed_at); });
    });
    return true;
  }

  // A reply as the backend shows it: on its clock, stepped by m_step.
  CallResult shown(CallResult r) const {
    r.observed.now += m_step;
    r.observed.lease.acquired_at += m_step;
    r.observed.lease.ttl_at += m_step;
    r.observed.lease.transition_at += m_step;
    return r;
  }

  // Forward or back, from a few milliseconds to an hour.
  void step_clock() {
    int64_t size = chance(0.5) ? uniform(1, 2000) : uniform(2000, 3'600'000);
    m_step += chance(0.5) ? size : -size;
    ++m_stats.clock_steps;
    schedule(m_t + uniform(200, 3000), [this] { step_clock(); });
  }

  void notify_all() {
    for (auto& q : m_procs) {
      if (!q->alive) continue;
      Proc* p = q.get();
      schedule(m_t + uniform(0, 5),
               [this, p] { deliver(*p, [this, p] { return p->c->on_notify(local(*p)); }); });
    }
  }

  void start_child(Proc& p, const action::StartChild& a) {
    CHECK_MESSAGE(!p.child_alive, "a second CMD");
    ++m_stats.starts;
    // A new lease has a larger token; lead and schedule restart CMD within
    // the same lease, with the same token.
    // With slots: per slot (two slots' CMDs may start in either order).
    uint64_t& last = m_slots > 1 ? m_last_token_of_slot[a.lease.slot] : m_last_token;
    std::string& starter = m_slots > 1 ? m_last_starter_of_slot[a.lease.slot] : m_last_starter;
    bool same_lease = a.lease.fencing_token == last && p.id == starter;
    bool increased = a.lease.fencing_token > last || same_lease;
    if (m_lossy && !increased) // a violation that the run without the quarantine expects
      m_violation = "t=" + std::to_string(m_t) + ": fencing token did not increase";
    else
      CHECK_MESSAGE(increased, "fencing token did not increase");
    last = std::max(last, a.lease.fencing_token);
    starter = p.id;
    p.child_alive = true;
    p.child_token = a.lease.fencing_token;
    p.child_slot = a.lease.slot;
    p.ignores_term = chance(0.2);
    uint64_t gen = ++p.child_gen;
    arm_watchdog(p, a.deadline);
    check();
    schedule(m_t + uniform(50, 3000), [this, &p, gen] {
      if (p.child_gen != gen || !p.child_alive) return;
      ++m_stats.completions;
      kill_child(p, chance(0.7) ? 0 : 1);
    });
  }

  // CMD (and its group) is gone; simba learns it through SIGCHLD.
  void kill_child(Proc& p, int code) {
    if (!p.child_alive) return;
    p.child_alive = false;
    ++p.child_gen;
    p.watchdog = 0;
    deliver(p, [this, &p, code] { return p.c->on_child_exit(local(p), code, false); });
  }

  // The watchdog runs on its own: it acts even while the supervisor is paused.
  void arm_watchdog(Proc& p, int64_t deadline) {
    p.watchdog = deadline;
    schedule(virtual_at(p, deadline), [this, &p, deadline] {
      if (p.watchdog == deadline && p.child_alive && local(p) >= deadline) {
        ++m_stats.watchdog_kills;
        kill_child(p, 137);
      }
    });
  }

  void fault() {
    std::vector<Proc*> alive;
    for (auto& q : m_procs)
      if (q->alive) alive.push_back(q.get());
    if (!alive.empty()) {
      // prefer the owner: faults there are the interesting ones
      Proc* p = alive[size_t(uniform(0, int64_t(alive.size()) - 1))];
      for (Proc* q : alive)
        if (q->child_alive && chance(0.7)) p = q;
      if (chance(0.5)) {
        ++m_stats.crashes;
        p->alive = false; // kill -9: PDEATHSIG and the watchdog take CMD down at once
        if (p->child_alive) {
          p->child_alive = false;
          ++p->child_gen;
        }
        spawn_process(uniform(0, 500));
      } else if (!p->paused) {
        ++m_stats.pauses;
        p->paused = true;
        schedule(m_t + uniform(200, 4000), [this, p] {
          p->paused = false;
          while (p->alive && !p->deferred.empty()) {
            auto fn = std::move(p->deferred.front());
            p->deferred.pop_front();
            fn();
          }
          if (p->alive) {
            deliver(*p, [this, p] {
              auto at = p->c->wake_at();
              if (at && local(*p) >= *at) return p->c->on_timer(local(*p));
              return Actions{};
            });
          }
        });
      }
    }
    if (m_force_releases && chance(0.3)) force_release();
    schedule(m_t + uniform(300, 2500), [this] { fault(); });
  }

  void force_release() {
    std::string row = m_slots > 1 ? slot_row("m", int(uniform(0, m_slots - 1))) : "m";
    uint64_t current = m_backend.lease(row).fencing_token;
    int kind = int(uniform(0, 2));
    uint64_t token = kind == 0 ? 0 : kind == 1 ? current : current - 1;
    if (m_backend.force_release(row, token).changed) {
      ++m_revocations;
      notify_all();
    }
  }

  // ---- data loss (lose_data) ----
  struct Marker {
    int run = 0;
    int64_t until = 0, longest = 0;
  };

  CallResult unchanged(const Lease& l) const {
    CallResult r;
    r.status = CallResult::Status::ok;
    r.observed.now = m_backend.now;
    r.observed.lease = l;
    return r;
  }

  CallResult apply_lossy(const std::string& id, const action::Call& call) {
    const Lease& l = m_backend.lease("m");
    if (call.op == Op::acquire && l.free_at(m_backend.now)) {
      if (auto till = quarantine_end(call.ttl_ms + call.transition_ms)) {
        Lease q;
        q.fencing_token = l.fencing_token;
        q.ttl_at = m_backend.now;
        q.transition_at = *till;
        q.quarantine = true;
        return unchanged(q);
      }
    }
    // Guard, renewal and release compare owner and token (issue 12 §1): a
    // lease of ours that a snapshot brought back is not the one we hold.
    auto latest = m_latest_token.find(id);
    if (call.op != Op::acquire || !l.free_at(m_backend.now)) {
      if (l.owner_id == id && latest != m_latest_token.end() && l.fencing_token != latest->second)
        return unchanged(l);
    }
    CallResult r = m_backend.apply("m", id, call);
    note_grant(id, r);
    return r;
  }

  // The marker's rule: missing, or of another server run, starts a
  // quarantine of the longest lease known + 1 s from now.
  std::optional<int64_t> quarantine_end(int64_t lease_ms) {
    if (!m_quarantine) return std::nullopt;
    int64_t now = m_backend.now;
    Marker m = m_marker.value_or(Marker{});
    int64_t longest = std::max(m.longest, lease_ms);
    if (!m_marker || m.run != m_run) m.until = std::max(m.until, now + longest + 1000);
    m.run = m_run;
    m.longest = longest;
    m_marker = m;
    if (now < m.until) return m.until;
    return std::nullopt;
  }

  // The truth of "none past its lease" once the backend may forget: the
  // latest end the backend ever gave each lease (owner, token).
  void note_grant(const std::string& id, const CallResult& r) {
    if (r.status != CallResult::Status::ok || !r.changed || r.observed.lease.owner_id != id) return;
    int64_t& end = m_granted[{id, r.observed.lease.fencing_token}];
    end = std::max(end, r.observed.lease.transition_at);
    m_latest_token[id] = r.observed.lease.fencing_token;
  }

  void lose() {
    int64_t now = m_backend.now;
    int kind = int(uniform(0, 3));
    if (kind == 0) { // snapshot, then a restart on it or a failover: another run
      m_backend = m_snapshot;
      m_marker = m_snapshot_marker;
      ++m_run;
    } else { // FLUSHALL (same run), or a restart without persistence
      m_backend = test::FakeBackend{};
      m_backend.clock_seeded_tokens = true;
      m_marker.reset();
      if (kind == 2) ++m_run;
    }
    m_backend.now = now;
    ++m_losses;
    // The next snapshot, then the next loss.
    schedule(m_t + uniform(100, 2000), [this] {
      m_snapshot = m_backend;
      m_snapshot_marker = m_marker;
    });
    schedule(m_t + uniform(2500, 8000), [this] { lose(); });
  }

  void check_lossy() {
    int running = 0;
    for (auto& q : m_procs) {
      if (!q->child_alive) continue;
      ++running;
      auto granted = m_granted.find({q->id, q->child_token});
      if (granted == m_granted.end() || m_backend.now >= granted->second)
        m_violation = "t=" + std::to_string(m_t) + ": CMD of " + q->id + " (token " +
                      std::to_string(q->child_token) + ") runs past its lease";
    }
    if (running > 1) m_violation = "t=" + std::to_string(m_t) + ": two CMDs run at once";
  }

  void check() {
    if (m_lossy) return check_lossy();
    int running = 0;
    for (auto& q : m_procs) {
      if (!q->child_alive) continue;
      ++running;
      const Lease& l = m_backend.lease(m_slots > 1 ? slot_row("m", q->child_slot) : "m");
      // A revoked lease (a forced release) keeps its token and its end:
      // its CMD may run on until it is stopped, at the latest by then.
      bool ours = l.owned_by(q->id, m_backend.now) || l.revoked_at(m_backend.now);
      if (!ours || l.fencing_token != q->child_token) {
        m_violation = "t=" + std::to_string(m_t) + ": CMD of " + q->id + " (token " +
                      std::to_string(q->child_token) + ") runs but the lease is " +
                      (l.valid_at(m_backend.now) ? "held by " + l.owner_id : "gone");
      }
    }
    m_stats.most_running = std::max(m_stats.most_running, running);
    if (running > m_slots)
      m_violation = "t=" + std::to_string(m_t) + ": " + std::to_string(running) +
                    " CMDs run at once, with " + std::to_string(m_slots) + " slots";
  }

  std::mt19937_64 m_rng;
  bool m_clock_steps = false;
  int64_t m_step = 0; // the shown clock minus the backend's steady one
  int m_contenders;
  bool m_leaders;
  bool m_hand_over;
  test::FakeBackend m_backend;
  std::priority_queue<Event> m_events;
  uint64_t m_seq = 0;
  int64_t m_t = 0;
  std::vector<std::shared_ptr<Proc>> m_procs;
  uint64_t m_last_token = 0;
  std::string m_last_starter;
  int m_slots = 1;
  std::map<int, uint64_t> m_last_token_of_slot;
  std::map<int, std::string> m_last_starter_of_slot;
  Stats m_stats;
  std::string m_violation;
  bool m_shared_labels = false;
  bool m_force_releases = false;
  int m_revocations = 0;
  bool m_lossy = false, m_quarantine = false;
  int m_run = 1, m_losses = 0;
  std::optional<Marker> m_marker = Marker{1, 0, 0}, m_snapshot_marker = Marker{1, 0, 0};
  test::FakeBackend m_snapshot;
  std::map<std::pair<std::string, uint64_t>, int64_t> m_granted;
  std::map<std::string, uint64_t> m_latest_token;
};

} // namespace

TEST_SUITE("core::simulation") {
  TEST_CASE("run, lead and schedule contenders mixed, with the same faults: one CMD at a time, "
            "none past its lease") {
    Stats total;
    for (uint64_t seed = 100; seed < 130; ++seed) {
      CAPTURE(seed);
      Simulation sim(seed, 6, true);
      Stats s = sim.run(120'000);
      REQUIRE_MESSAGE(sim.violation().empty(), sim.violation());
      CHECK(s.starts > 20);
      total.starts += s.starts;
      total.lost_leases += s.lost_leases;
      total.watchdog_kills += s.watchdog_kills;
    }
    MESSAGE("starts " << total.starts << ", watchdog kills " << total.watchdog_kills);
    CHECK(total.watchdog_kills > 5);
  }

  TEST_CASE("5+ contenders with crashes, pauses, errors and slow replies: one CMD at a time, none "
            "past its lease") {
    Stats total;
    for (uint64_t seed = 1; seed <= 40; ++seed) {
      CAPTURE(seed);
      Simulation sim(seed, 6);
      Stats s = sim.run(120'000); // two virtual minutes
      REQUIRE_MESSAGE(sim.violation().empty(), sim.violation());
      CHECK(s.starts > 20);
      total.starts += s.starts;
      total.crashes += s.crashes;
      total.pauses += s.pauses;
      total.errors += s.errors;
      total.lost_replies += s.lost_replies;
      total.watchdog_kills += s.watchdog_kills;
      total.lost_leases += s.lost_leases;
      total.completions += s.completions;
    }
    MESSAGE("starts " << total.starts << ", completions " << total.completions << ", crashes "
                      << total.crashes << ", pauses " << total.pauses << ", backend errors "
                      << total.errors << ", lost replies " << total.lost_replies
                      << ", watchdog kills " << total.watchdog_kills << ", leases lost "
                      << total.lost_leases);
    // The faults really happened, or the test proves nothing.
    CHECK(total.crashes > 50);
    CHECK(total.pauses > 50);
    CHECK(total.watchdog_kills > 5);
    CHECK(total.lost_leases > 5);
    CHECK(total.lost_replies > 100);
  }

  TEST_CASE("releases that hand the mutex over to a waiter (Redis), with the same faults: one CMD "
            "at a time, none past its lease") {
    Stats total;
    for (uint64_t seed = 200; seed < 230; ++seed) {
      CAPTURE(seed);
      Simulation sim(seed, 6, seed % 2 == 0, true);
      Stats s = sim.run(120'000);
      REQUIRE_MESSAGE(sim.violation().empty(), sim.violation());
      CHECK(s.starts > 20);
      total.starts += s.starts;
      total.hand_overs += s.hand_overs;
      total.watchdog_kills += s.watchdog_kills;
      total.pauses += s.pauses;
    }
    MESSAGE("starts " << total.starts << ", hand-overs " << total.hand_overs << ", pauses "
                      << total.pauses << ", watchdog kills " << total.watchdog_kills);
    CHECK(total.hand_overs > 200);
    CHECK(total.watchdog_kills > 5);
  }

  TEST_CASE("contenders that share a label (two processes, one --contender-id), with the same "
            "faults: one CMD at a time, none past its lease") {
    Stats total;
    for (uint64_t seed = 300; seed < 330; ++seed) {
      CAPTURE(seed);
      Simulation sim(seed, 6, true, seed % 2 == 1);
      sim.share_labels();
      Stats s = sim.run(120'000);
      REQUIRE_MESSAGE(sim.violation().empty(), sim.violation());
      CHECK(s.starts > 20);
      total.starts += s.starts;
      total.hand_overs += s.hand_overs;
      total.lost_leases += s.lost_leases;
    }
    MESSAGE("starts " << total.starts << ", hand-overs " << total.hand_overs << ", leases lost "
                      << total.lost_leases);
    CHECK(total.hand_overs > 100);
  }

  TEST_CASE("forced releases (any lease, by token, by a stale token), with the same faults: one "
            "CMD at a time, none past its lease") {
    Stats total;
    int revocations = 0;
    for (uint64_t seed = 400; seed < 430; ++seed) {
      CAPTURE(seed);
      Simulation sim(seed, 6, seed % 2 == 0, seed % 3 == 0);
      sim.share_labels().force_releases();
      Stats s = sim.run(120'000);
      REQUIRE_MESSAGE(sim.violation().empty(), sim.violation());
      CHECK(s.starts > 20);
      total.starts += s.starts;
      total.lost_leases += s.lost_leases;
      revocations += sim.revocations();
    }
    MESSAGE("starts " << total.starts << ", revocations " << revocations << ", leases lost "
                      << total.lost_leases);
    CHECK(revocations > 100);
    CHECK(total.lost_leases > 20);
  }

  TEST_CASE("the backend's shown clock steps (leases on a steady clock), with the same faults: one "
            "CMD at a time, none past its lease") {
    Stats total;
    for (uint64_t seed = 300; seed < 330; ++seed) {
      CAPTURE(seed);
      Simulation sim(seed, 6, seed % 2 == 0, seed % 3 == 0);
      sim.with_clock_steps();
      Stats s = sim.run(120'000);
      REQUIRE_MESSAGE(sim.violation().empty(), sim.violation());
      CHECK(s.starts > 20);
      total.starts += s.starts;
      total.clock_steps += s.clock_steps;
      total.watchdog_kills += s.watchdog_kills;
      total.lost_leases += s.lost_leases;
    }
    MESSAGE("starts " << total.starts << ", clock steps " << total.clock_steps
                      << ", watchdog kills " << total.watchdog_kills << ", leases lost "
                      << total.lost_leases);
    CHECK(total.clock_steps > 500);
    CHECK(total.watchdog_kills > 5);
  }

  TEST_CASE("a backend that loses its newest writes or all its keys, with the quarantine: one CMD "
            "at a time, none past its lease") {
    int losses = 0, starts = 0;
    for (uint64_t seed = 300; seed < 330; ++seed) {
      CAPTURE(seed);
      Simulation sim(seed, 6, seed % 3 == 0, seed % 2 == 0);
      sim.lose_data(true);
      Stats s = sim.run(120'000);
      REQUIRE_MESSAGE(sim.violation().empty(), sim.violation());
      CHECK(s.starts > 10);
      losses += sim.losses();
      starts += s.starts;
    }
    MESSAGE("starts " << starts << ", losses " << losses);
    CHECK(losses > 300);
  }

  TEST_CASE("a backend that loses its newest writes or all its keys, without the quarantine: the "
            "simulation sees the overlap") {
    int broken = 0;
    for (uint64_t seed = 300; seed < 330; ++seed) {
      Simulation sim(seed, 6, seed % 3 == 0, seed % 2 == 0);
      sim.lose_data(false);
      sim.run(120'000);
      if (!sim.violation().empty()) ++broken;
    }
    MESSAGE(broken << " of 30 runs broke the promise without the quarantine");
    CHECK(broken > 15);
  }

  TEST_CASE("--slots 3: run, lead and schedule contenders with crashes, pauses, errors, slow "
            "and lost replies and forced releases: at most 3 CMDs at a time, none past its "
            "lease") {
    Stats total;
    int most = 0;
    for (uint64_t seed = 500; seed < 530; ++seed) {
      CAPTURE(seed);
      Simulation sim(seed, 8, seed % 2 == 0);
      sim.slots(3);
      if (seed % 3 == 0) sim.force_releases();
      Stats s = sim.run(120'000);
      REQUIRE_MESSAGE(sim.violation().empty(), sim.violation());
      CHECK(s.starts > 20);
      most = std::max(most, s.most_running);
      total.starts += s.starts;
      total.crashes += s.crashes;
      total.pauses += s.pauses;
      total.lost_replies += s.lost_replies;
      total.watchdog_kills += s.watchdog_kills;
      total.lost_leases += s.lost_leases;
    }
    MESSAGE("starts " << total.starts << ", crashes " << total.crashes << ", pauses "
                      << total.pauses << ", lost replies " << total.lost_replies
                      << ", watchdog kills " << total.watchdog_kills << ", leases lost "
                      << total.lost_leases);
    CHECK(most == 3); // the slots were used, all of them at once
    CHECK(total.crashes > 50);
    CHECK(total.watchdog_kills > 5);
    CHECK(total.lost_replies > 100);
  }
}
