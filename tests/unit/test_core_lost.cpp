// The lost event (action::RecordLost): the owner that lost its lease asks
// for it once CMD and all it left are gone, before the release or the next
// contention, with the reason, CMD's status and how long the lease was
// held; an ordinary run, a hand-over, a stop by signal and --min-hold never
// ask for it.
#include "core/contender.hpp"
#include "core_support.hpp"
#include "fake_backend.hpp"

#include <doctest/doctest.h>

#include <csignal>

using namespace simba;
using namespace simba::core;
using namespace simba::test;
using Mode = ContenderConfig::Mode;

namespace {

// Executes the actions as the driver does, in order, and keeps every one
// of them: calls answered by the fake backend (or failed, while `failing`),
// CMD started, the kill signal ending it with 128+N (unless `ignore_term`),
// the lost event noted.
struct LostWorld {
  test::FakeBackend backend;
  int64_t local = 1000;
  Contender c;
  bool child = false;
  bool failing = false;
  bool ignore_term = false;
  bool leftovers = false; // what CMD left lives on after it exits
  std::optional<int> exit_code;
  std::optional<int64_t> killed_at; // local time of the SIGKILL that ended CMD
  Actions log; // every action, in the order it was executed

  explicit LostWorld(ContenderConfig cfg)
      : c(cfg, ContendPeriod("me", [](int64_t, int64_t) { return 0; })) {}

  void advance(int64_t ms) {
    backend.now += ms;
    local += ms;
  }
  CallResult answer(const action::Call& call) {
    if (!failing) return backend.apply("m", "me", call);
    CallResult r;
    r.status = CallResult::Status::failed;
    r.error = "no answer";
    return r;
  }
  void run(Actions acts) {
    for (int round = 0; !acts.empty(); ++round) {
      REQUIRE_MESSAGE(round < 1000, "actions still chained after 1000 rounds");
      Actions next;
      for (const Action& a : acts) {
        log.push_back(a);
        Actions more;
        if (const auto* call = std::get_if<action::Call>(&a)) {
          more = c.on_reply(local, answer(*call));
        } else if (std::holds_alternative<action::StartChild>(a)) {
          child = true;
        } else if (const auto* sig = std::get_if<action::SignalAll>(&a); sig && child) {
          if (sig->signo == SIGKILL || !ignore_term) {
            child = false;
            if (sig->signo == SIGKILL) killed_at = local;
            more = c.on_child_exit(local, 128 + sig->signo, leftovers);
          }
        } else if (const auto* exit = std::get_if<action::Exit>(&a)) {
          exit_code = exit->code;
        }
        next.insert(next.end(), more.begin(), more.end());
      }
      acts = std::move(next);
    }
  }
  void start() { run(c.start(local)); }
  void until(int64_t t) {
    for (int timers = 0; auto at = c.wake_at();) {
      if (*at > t || exit_code) break;
      REQUIRE(++timers < 100000);
      advance(std::max(*at, local) - local);
      run(c.on_timer(local));
    }
    if (local < t) advance(t - local);
  }
  void child_exits(int code) {
    REQUIRE(child);
    child = false;
    run(c.on_child_exit(local, code, leftovers));
  }

  std::vector<action::RecordLost> lost() const {
    std::vector<action::RecordLost> out;
    for (const Action& a : log)
      if (const auto* l = std::get_if<action::RecordLost>(&a)) out.push_back(*l);
    return out;
  }
  // Where in the log the first action of kind T is (log.size(): none).
  template <class T> size_t first() const {
    for (size_t i = 0; i < log.size(); ++i)
      if (std::holds_alternative<T>(log[i])) return i;
    return log.size();
  }
  size_t first_call(Op op, size_t from = 0) const {
    for (size_t i = from; i < log.size(); ++i)
      if (const auto* c = std::get_if<action::Call>(&log[i]); c && c->op == op) return i;
    return log.size();
  }
};

} // namespace

TEST_SUITE("core::Contender lost event") {
  TEST_CASE("an ordinary run, a run with renewals and a hand-over ask for no lost event") {
    LostWorld w(contender_config());
    w.start();
    REQUIRE(w.child);
    w.until(w.local + 35000); // three guards
    w.child_exits(0);
    REQUIRE(w.exit_code);
    CHECK(*w.exit_code == 0);
    CHECK(w.lost().empty());

    // A waiter handed the mutex by a release: no lost event either.
    LostWorld h(contender_config());
    h.backend.acquire("m", "other", 10000, 2000);
    h.start();
    CHECK(h.c.phase() == Contender::Phase::contending);
    h.backend.release("m", "other");
    h.backend.acquire("m", "me", 10000, 2000);
    CallResult grant = h.backend.guard("m", "me", h.backend.lease("m").fencing_token, 10000, 2000);
    h.run(h.c.on_grant(h.local, grant, h.local));
    REQUIRE(h.child);
    h.child_exits(3);
    CHECK(*h.exit_code == 3);
    CHECK(h.lost().empty());
  }

  TEST_CASE("stopped by a signal, or losing the lease during --min-hold: no lost event") {
    LostWorld w(contender_config());
    w.start();
    w.run(w.c.on_signal(w.local, SIGTERM));
    w.child_exits(143);
    CHECK(*w.exit_code == 143);
    CHECK(w.lost().empty());

    ContenderConfig cfg = contender_config();
    cfg.min_hold_ms = 60000;
    LostWorld m(cfg);
    m.start();
    // CMD is done; the hold of --min-hold goes out and finds the lease
    // revoked: simba ends with CMD's status, nothing was stopped.
    m.child = false;
    Actions hold = m.c.on_child_exit(m.local, 0, false);
    m.backend.force_release("m");
    m.run(hold);
    REQUIRE(m.exit_code);
    CHECK(*m.exit_code == 0);
    CHECK(m.lost().empty());
  }

  TEST_CASE("a forced release during the run: revoked, CMD's status, how long it was held; "
            "then the release, then 76") {
    LostWorld w(contender_config());
    w.start();
    uint64_t token = w.backend.lease("m").fencing_token;
    w.advance(4321);
    w.backend.force_release("m");
    w.run(w.c.on_notify(w.local)); // the guard sees it, CMD gets TERM, dies of it
    REQUIRE(w.exit_code);
    CHECK(*w.exit_code == 76);
    auto lost = w.lost();
    REQUIRE(lost.size() == 1);
    CHECK(lost[0].reason == LossReason::revoked);
    CHECK(std::string(loss_reason_name(lost[0].reason)) == "revoked");
    CHECK(lost[0].token == token);
    REQUIRE(lost[0].exit_code);
    CHECK(*lost[0].exit_code == 128 + SIGTERM);
    CHECK(lost[0].held_ms == 4321);
    CHECK(lost[0].by.empty());
    CHECK(lost[0].timeout_ms > 0);
    CHECK(lost[0].timeout_ms <= 1000);
    // CMD is gone and it was ours alone: the revoked lease may end now.
    CHECK(lost[0].end_revoked);
    // After CMD's stop, before the release that follows the loss.
    size_t at = w.first<action::RecordLost>();
    CHECK(at > w.first<action::SignalAll>());
    CHECK(at < w.first_call(Op::release));
  }

  TEST_CASE("a revoked lease is ended early only by a plain run: not by a step of a lease, "
            "lead, or after a loss of another kind") {
    // A step: the lease's token is the job's, shared by every step.
    ContenderConfig step = contender_config("me", Mode::step);
    LostWorld s(step);
    s.backend.acquire("m", "me", 10000, 2000);
    s.c = Contender(
        [&] {
          ContenderConfig cfg = step;
          cfg.lease_token = s.backend.lease("m").fencing_token;
          return cfg;
        }(),
        ContendPeriod("me", [](int64_t, int64_t) { return 0; }));
    s.backend.hold("m", "me", s.backend.lease("m").fencing_token, 12000);
    s.start();
    REQUIRE(s.child);
    s.backend.force_release("m");
    s.run(s.c.on_notify(s.local));
    REQUIRE(s.lost().size() == 1);
    CHECK(s.lost()[0].reason == LossReason::revoked);
    CHECK_FALSE(s.lost()[0].end_revoked);

    // lead contends again at once: it would take the mutex straight back.
    LostWorld l(contender_config("me", Mode::lead));
    l.start();
    REQUIRE(l.child);
    l.backend.force_release("m");
    l.run(l.c.on_notify(l.local));
    REQUIRE(l.lost().size() == 1);
    CHECK_FALSE(l.lost()[0].end_revoked);

    // A plain run that lost it otherwise: nothing revoked to end.
    LostWorld t(contender_config());
    t.start();
    t.backend.steal("m", "thief#1", 10000, 2000);
    t.run(t.c.on_notify(t.local));
    REQUIRE(t.lost().size() == 1);
    CHECK_FALSE(t.lost()[0].end_revoked);
  }

  TEST_CASE("another owner: taken, by whom; no lease at all or a quarantine: gone") {
    LostWorld t(contender_config());
    t.start();
    t.advance(100);
    t.backend.steal("m", "thief#1", 10000, 2000);
    t.run(t.c.on_notify(t.local));
    auto lost = t.lost();
    REQUIRE(lost.size() == 1);
    CHECK(lost[0].reason == LossReason::taken);
    CHECK(lost[0].by == "thief#1");

    for (bool quarantine : {false, true}) {
      CAPTURE(quarantine);
      LostWorld g(contender_config());
      g.start();
      REQUIRE(g.child);
      g.advance(g.c.wake_at().value() - g.local); // the guard is due
      Actions a = g.c.on_timer(g.local);
      const auto* guard = std::get_if<action::Call>(&a.back());
      REQUIRE(guard);
      CallResult r = g.backend.guard("m", "me", guard->token, 10000, 2000);
      r.observed.lease = Lease{}; // the server has no lease (a restart, a flush)
      if (quarantine) {
        r.observed.lease.transition_at = r.observed.now + 5000;
        r.observed.lease.quarantine = true;
      }
      g.log.insert(g.log.end(), a.begin(), a.end());
      g.run(g.c.on_reply(g.local, r));
      REQUIRE(g.lost().size() == 1);
      CHECK(g.lost()[0].reason == LossReason::gone);
      CHECK(g.lost()[0].by.empty());
    }
  }

  // Issue 31 §5: the log of an owner whose backend is down was 4 lines a
  // second ("guard failed ... retrying" at every retry).
  TEST_CASE("a guard outage: one warning with the time CMD has left, one line when it answers") {
    LostWorld w(contender_config());
    w.start();
    REQUIRE(w.child);
    auto lines = [&](LogLevel level, const std::string& part) {
      int n = 0;
      for (const Action& a : w.log)
        if (const auto* l = std::get_if<action::Log>(&a);
            l && l->level == level && l->message.find(part) != std::string::npos)
          ++n;
      return n;
    };
    // Twice: fail from the guard on until 100 ms before the kill point
    // (retries every 250 ms), then answer.
    for (int outage = 1; outage <= 2; ++outage) {
      CAPTURE(outage);
      w.until(w.c.wake_at().value() - 1); // just before the guard
      int64_t kill_point = w.c.deadline() - 1000; // kill_after 1 s
      REQUIRE(kill_point - w.local > 600);
      w.failing = true;
      w.until(kill_point - 100);
      CHECK(lines(LogLevel::warning, "guard failed") == outage);
      CHECK(lines(LogLevel::warning, "the command is stopped in ") == outage);
      CHECK(lines(LogLevel::verbose, "guard failed again") >= 2 * outage);
      w.failing = false;
      w.until(kill_point - 1); // the last retry before the kill point is answered
      CHECK(lines(LogLevel::info, "guard answered again after ") == outage);
      CHECK(w.child);
    }
    CHECK(w.lost().empty());
  }

  TEST_CASE("no renewal by the kill point: unrenewed, after SIGKILL when CMD ignores TERM") {
    LostWorld w(contender_config());
    w.start();
    int64_t deadline = w.c.deadline();
    w.failing = true;
    w.ignore_term = true;
    w.until(deadline + 10);
    REQUIRE(w.exit_code);
    CHECK(*w.exit_code == 76);
    auto lost = w.lost();
    REQUIRE(lost.size() == 1);
    CHECK(lost[0].reason == LossReason::unrenewed);
    REQUIRE(lost[0].exit_code);
    CHECK(*lost[0].exit_code == 128 + SIGKILL);
    CHECK(lost[0].held_ms == deadline - 1000 - 1000); // the kill point, from the start at 1000
  }

  // M2: the SIGKILL that follows the kill signal is capped at the deadline.
  // A loss noticed late (simba was stopped or starved past its kill point:
  // the timer, or the guard's reply, is handled late) leaves less than
  // kill_after before the deadline, or none: CMD that ignores the kill
  // signal must be dead by the deadline all the same (the watchdog's kill
  // at the deadline is the last line, not the plan).
  TEST_CASE("a loss noticed late: SIGKILL no later than the deadline, at once when past it") {
    for (int64_t late : {500, 0, -300, -700}) { // noticed at deadline + late
      CAPTURE(late);
      LostWorld w(contender_config()); // kill_after 1 s
      w.ignore_term = true;
      w.start();
      REQUIRE(w.child);
      int64_t deadline = w.c.deadline();
      w.failing = true;
      w.advance(deadline + late - w.local); // no timer ran meanwhile
      w.run(w.c.on_timer(w.local));
      CHECK(w.c.phase() != Contender::Phase::owning);
      if (late >= 0) {
        CHECK_FALSE(w.child); // SIGKILL at once, in the same actions
      } else {
        CHECK(w.c.phase() == Contender::Phase::stopping);
        CHECK(w.child); // the kill signal only, so far
        w.until(deadline);
        CHECK_FALSE(w.child);
      }
      REQUIRE(w.killed_at);
      CHECK(*w.killed_at <= std::max(deadline, deadline + late));
    }
    // The guard's reply shows another owner, handled 300 ms before the
    // deadline (sent before the kill point, answered late).
    LostWorld g(contender_config());
    g.ignore_term = true;
    g.start();
    int64_t deadline = g.c.deadline();
    g.advance(g.c.wake_at().value() - g.local); // the guard is due
    Actions a = g.c.on_timer(g.local);
    const auto* guard = std::get_if<action::Call>(&a.back());
    REQUIRE(guard);
    g.backend.steal("m", "thief", 10000, 2000);
    CallResult r = g.backend.guard("m", "me", guard->token, 10000, 2000);
    g.advance(deadline - 300 - g.local);
    g.run(g.c.on_reply(g.local, r));
    CHECK(g.c.phase() == Contender::Phase::stopping);
    CHECK(g.child);
    g.until(deadline);
    CHECK_FALSE(g.child);
    REQUIRE(g.killed_at);
    CHECK(*g.killed_at <= deadline);
  }

  TEST_CASE("CMD's exit noticed after the kill point (simba was stopped): unrenewed, its status") {
    LostWorld w(contender_config());
    w.start();
    w.advance(w.c.deadline() - w.local + 5);
    w.child_exits(137); // the watchdog killed it
    auto lost = w.lost();
    REQUIRE(lost.size() == 1);
    CHECK(lost[0].reason == LossReason::unrenewed);
    CHECK(lost[0].exit_code == 137);
    CHECK(*w.exit_code == 76);
  }

  TEST_CASE("the lost event waits for what CMD left running; CMD that had ended keeps its code") {
    LostWorld w(contender_config());
    w.leftovers = true;
    w.start();
    w.backend.force_release("m");
    w.run(w.c.on_notify(w.local));
    CHECK_FALSE(w.child);
    CHECK(w.lost().empty()); // its leftovers still run
    w.run(w.c.on_all_gone(w.local));
    REQUIRE(w.lost().size() == 1);
    CHECK(w.lost()[0].exit_code == 143);

    // CMD exited 0 on its own; what it left still runs when the lease goes.
    LostWorld d(contender_config());
    d.leftovers = true;
    d.start();
    d.child_exits(0);
    CHECK(d.c.phase() == Contender::Phase::draining);
    d.backend.steal("m", "thief", 10000, 2000);
    d.until(d.local + 11000); // the guard sees the thief
    CHECK(d.c.phase() == Contender::Phase::stopping);
    CHECK(d.lost().empty());
    d.run(d.c.on_all_gone(d.local));
    REQUIRE(d.lost().size() == 1);
    CHECK(d.lost()[0].reason == LossReason::taken);
    CHECK(d.lost()[0].exit_code == 0);
  }

  TEST_CASE("a refused renewal: refused, then the release and 69") {
    LostWorld w(contender_config());
    w.start();
    w.advance(w.c.wake_at().value() - w.local);
    Actions a = w.c.on_timer(w.local);
    REQUIRE(std::holds_alternative<action::Call>(a.back()));
    CallResult refused;
    refused.status = CallResult::Status::refused;
    refused.error = "NOPERM";
    w.run(w.c.on_reply(w.local, refused));
    REQUIRE(w.lost().size() == 1);
    CHECK(w.lost()[0].reason == LossReason::refused);
    CHECK(*w.exit_code == 69);
  }

  TEST_CASE("lead: a loss between runs has no exit code; the event comes before contending "
            "again, once per loss") {
    ContenderConfig cfg = contender_config("me", Mode::lead);
    cfg.restart = ContenderConfig::Restart::always;
    cfg.restart_delay_ms = 5000;
    LostWorld w(cfg);
    w.start();
    w.child_exits(0); // between runs now
    w.backend.steal("m", "other", 1000, 500);
    size_t before = w.log.size();
    w.run(w.c.on_notify(w.local));
    auto lost = w.lost();
    REQUIRE(lost.size() == 1);
    CHECK(lost[0].reason == LossReason::taken);
    CHECK_FALSE(lost[0].exit_code);
    size_t at = w.first<action::RecordLost>();
    CHECK(at >= before);
    CHECK(at < w.first_call(Op::acquire, at));
    CHECK(w.c.phase() == Contender::Phase::contending);
    w.until(w.local + 3000); // re-elected, CMD again: nothing more
    CHECK(w.child);
    CHECK(w.lost().size() == 1);
  }
}
