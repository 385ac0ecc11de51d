#include "core/duration.hpp"
#include "core/error.hpp"
#include "core/names.hpp"

#include <doctest/doctest.h>

#include <map>

using namespace simba;
using namespace simba::core;

TEST_SUITE("core::duration") {
  TEST_CASE("units and combinations") {
    CHECK(parse_duration("500ms", "x") == 500);
    CHECK(parse_duration("10s", "x") == 10000);
    CHECK(parse_duration("2m", "x") == 120000);
    CHECK(parse_duration("1h", "x") == 3600000);
    CHECK(parse_duration("1m30s", "x") == 90000);
    CHECK(parse_duration("1s500ms", "x") == 1500);
    CHECK(parse_duration("0", "x") == 0);
  }
  TEST_CASE("a bare number is seconds") { CHECK(parse_duration("7", "x") == 7000); }
  TEST_CASE("decimal fractions that come to whole milliseconds") {
    CHECK(parse_duration("1.5s", "x") == 1500);
    CHECK(parse_duration("0.25s", "x") == 250);
    CHECK(parse_duration("1.5", "x") == 1500);
    CHECK(parse_duration("0.5m", "x") == 30000);
    CHECK(parse_duration("1.25h", "x") == 4500000);
    CHECK(parse_duration("1m0.5s", "x") == 60500);
    CHECK(parse_duration("2.0ms", "x") == 2);
    CHECK(parse_duration("0.001s", "x") == 1);
  }
  TEST_CASE("bad input is a usage error naming the option") {
    for (const char* bad : {"", "10x", "-1s", "s", "10 s", "1m30", "ms", "99999999999999h", "1.",
                            ".5s", "1.5ms", "0.0001s", "1.0000001h", "1.2.3s"}) {
      CAPTURE(bad);
      try {
        parse_duration(bad, "--ttl");
        FAIL("accepted");
      } catch (const UsageError& e) {
        CHECK(std::string(e.what()).find("--ttl") != std::string::npos);
        CHECK(e.code() == 64);
      }
    }
  }
  TEST_CASE("format") {
    CHECK(format_duration(250) == "250ms");
    CHECK(format_duration(1500) == "1.5s");
    CHECK(format_duration(90000) == "1m30s");
    CHECK(format_duration(3600000) == "1h");
  }
}

TEST_SUITE("core::names") {
  TEST_CASE("valid mutex names") {
    CHECK_NOTHROW(validate_mutex_name("deploy-prod"));
    CHECK_NOTHROW(validate_mutex_name("ci/deploy/prod"));
    CHECK_NOTHROW(validate_mutex_name("a.b_c:d@e-f"));
    CHECK_NOTHROW(validate_mutex_name(std::string(128, 'x')));
  }
  TEST_CASE("invalid mutex names") {
    for (std::string bad : {std::string(), std::string(129, 'x'), std::string("a b"),
                            std::string("a\nb"), std::string("a*b"), std::string("é")}) {
      CAPTURE(bad);
      CHECK_THROWS_AS(validate_mutex_name(bad), UsageError);
    }
  }
  TEST_CASE("stored text is escaped for terminals, and the escapes read back") {
    CHECK(escape_control("ci/deploy-prod") == "ci/deploy-prod");
    CHECK(escape_control(std::string("a\x1b[2J\nb\x7f\\\xc3\xa9", 11)) ==
          "a\\x1b[2J\\x0ab\\x7f\\\\\\xc3\\xa9");
    for (std::string s :
         {std::string("plain"), std::string("a\x1b]0;x\x07\n\\z"), std::string(1, '\0')}) {
      CAPTURE(s);
      CHECK(unescape_control(escape_control(s)) == s);
    }
    CHECK(unescape_control("a\\x41\\x4a") == "aAJ");
    for (const char* bad : {"a\\", "a\\q", "a\\x4", "a\\xzz"}) {
      CAPTURE(bad);
      CHECK_THROWS_AS(unescape_control(bad), UsageError);
    }
  }
  TEST_CASE("owner ids are the label plus an instance id, and fit in 128 bytes") {
    CHECK(default_contender_label(4711, "build-3") == "4711@build-3");
    std::string id = make_owner_id(default_contender_label(4711, "build-3"), 0x9f2c01aa);
    CHECK(id == "4711@build-3#000000009f2c01aa");
    CHECK(label_of(id) == "4711@build-3");
    std::string long_label = default_contender_label(4711, std::string(300, 'h'));
    CHECK(long_label.size() == k_max_label);
    CHECK_NOTHROW(validate_contender_label(long_label));
    CHECK(make_owner_id(long_label, ~uint64_t(0)).size() == 128);
    // one label, two processes: two owners
    CHECK(make_owner_id("web1", 1) != make_owner_id("web1", 2));
    CHECK(label_of(make_owner_id("web1#0123456789abcdef", 7)) == "web1#0123456789abcdef");
    CHECK(label_of("4711@build-3#9f2c01aa") == "4711@build-3#9f2c01aa"); // an older simba's id
  }
  TEST_CASE("invalid labels") {
    CHECK_THROWS_AS(validate_contender_label("a b"), UsageError);
    CHECK_THROWS_AS(validate_contender_label(""), UsageError);
    CHECK_THROWS_AS(validate_contender_label(std::string(112, 'x')), UsageError);
    CHECK_NOTHROW(validate_contender_label(std::string(111, 'x')));
  }
  TEST_CASE("a CI job is the default label: GitHub Actions, GitLab CI, made to fit") {
    std::map<std::string, std::string> vars;
    auto env = [&](const char* name) { return vars.count(name) ? vars[name] : std::string(); };
    CHECK(ci_job_label(env) == "");
    vars = {{"GITHUB_ACTIONS", "true"},
            {"GITHUB_REPOSITORY", "acme/web"},
            {"GITHUB_RUN_ID", "9876"},
            {"GITHUB_JOB", "deploy"}};
    CHECK(ci_job_label(env) == "acme/web#9876/deploy");
    vars.erase("GITHUB_JOB"); // not all three: not a job it can name
    CHECK(ci_job_label(env) == "");
    vars = {{"GITLAB_CI", "true"}, {"CI_JOB_URL", "https://gitlab.example/g/p/-/jobs/42"}};
    CHECK(ci_job_label(env) == "https://gitlab.example/g/p/-/jobs/42");
    vars["GITLAB_CI"] = "false";
    CHECK(ci_job_label(env) == "");
    // an odd value: spaces and control bytes become '_', a long one keeps its end
    CHECK(fit_label("my job\t\xc3\xa9") == "my_job___");
    std::string long_url = "https://gitlab.example/" + std::string(200, 'g') + "/-/jobs/42";
    std::string fitted = fit_label(long_url);
    CHECK(fitted.size() == k_max_label);
    CHECK(fitted.substr(0, 3) == "...");
    CHECK(fitted.substr(fitted.size() - 8) == "/jobs/42");
    CHECK_NOTHROW(validate_contender_label(fitted));
    CHECK(fit_label(std::string(111, 'x')) == std::string(111, 'x'));
  }
}
