// The SCRAM key cache on real files in a temporary $XDG_CACHE_HOME: what
// it returns, and the files it must ignore (issue 33 §2).
#include "backend/postgres/scram_cache.hpp"

#include <doctest/doctest.h>

#include <cstdlib>
#include <fcntl.h>
#include <filesystem>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

using namespace simba::backend::pg;
using scram_cache::CacheKey;

namespace {

// $XDG_CACHE_HOME pointed at a fresh directory for one test.
struct TempCache {
  std::string root, dir, file, old;
  bool had_old = false;
  TempCache() {
    char tmpl[] = "/tmp/simba-scram-cache-XXXXXX";
    REQUIRE(mkdtemp(tmpl));
    root = tmpl;
    dir = root + "/simba";
    file = dir + "/scram-keys";
    if (const char* x = std::getenv("XDG_CACHE_HOME")) had_old = true, old = x;
    setenv("XDG_CACHE_HOME", root.c_str(), 1);
  }
  ~TempCache() {
    if (had_old)
      setenv("XDG_CACHE_HOME", old.c_str(), 1);
    else
      unsetenv("XDG_CACHE_HOME");
    std::filesystem::remove_all(root);
  }
};

CacheKey key() { return CacheKey{"db.internal", 5432, "simba", std::string("s\0alt", 5), 4096}; }

scram::Keys keys(uint8_t seed) {
  scram::Keys k;
  for (size_t i = 0; i < 32; ++i)
    k.client_key[i] = uint8_t(seed + i), k.server_key[i] = uint8_t(seed * 3 + i);
  return k;
}

bool same(const std::optional<scram::Keys>& a, const scram::Keys& b) {
  return a && a->client_key == b.client_key && a->server_key == b.server_key;
}

std::string contents(const std::string& path) {
  std::string text;
  if (std::FILE* f = std::fopen(path.c_str(), "r")) {
    for (int c; (c = std::fgetc(f)) != EOF;) text += char(c);
    std::fclose(f);
  }
  return text;
}

mode_t mode_of(const std::string& path) {
  struct stat st;
  REQUIRE(lstat(path.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

} // namespace

TEST_SUITE("backend::pg::scram_cache") {
  TEST_CASE("a stored key comes back; the file is 0600 in a directory 0700") {
    TempCache t;
    CHECK_FALSE(scram_cache::load(key()).has_value());
    scram_cache::store(key(), keys(1));
    CHECK(same(scram_cache::load(key()), keys(1)));
    CHECK(mode_of(t.dir) == 0700);
    CHECK(mode_of(t.file) == 0600);
    CHECK(scram_cache::directory() == t.dir);
    // another server's line is kept beside it; the same server's is replaced
    CacheKey other = key();
    other.host = "db2.internal";
    scram_cache::store(other, keys(2));
    scram_cache::store(key(), keys(3));
    CHECK(same(scram_cache::load(key()), keys(3)));
    CHECK(same(scram_cache::load(other), keys(2)));
    // no temporary file left behind, no name in clear
    CHECK(std::distance(std::filesystem::directory_iterator(t.dir), {}) == 1);
    std::string text = contents(t.file);
    CHECK(text.find("db.internal") == std::string::npos);
    CHECK(text.find("simba ") == std::string::npos);
  }

  TEST_CASE("another salt, iteration count, server, port or user is a miss") {
    TempCache t;
    scram_cache::store(key(), keys(1));
    CacheKey k = key();
    k.salt = std::string("s\0alT", 5);
    CHECK_FALSE(scram_cache::load(k).has_value());
    k = key(), k.iterations = 4097;
    CHECK_FALSE(scram_cache::load(k).has_value());
    k = key(), k.host = "db.internal.";
    CHECK_FALSE(scram_cache::load(k).has_value());
    k = key(), k.port = 5433;
    CHECK_FALSE(scram_cache::load(k).has_value());
    k = key(), k.user = "simba2";
    CHECK_FALSE(scram_cache::load(k).has_value());
    // a new salt for the same server and user replaces the old line
    k = key(), k.salt = "new salt";
    scram_cache::store(k, keys(4));
    CHECK(same(scram_cache::load(k), keys(4)));
    CHECK_FALSE(scram_cache::load(key()).has_value());
  }

  TEST_CASE("a file others may read or write is ignored, and replaced on the next store") {
    TempCache t;
    scram_cache::store(key(), keys(1));
    for (mode_t mode : {0644, 0640, 0604, 0620, 0602}) {
      REQUIRE(chmod(t.file.c_str(), mode) == 0);
      CHECK_FALSE(scram_cache::load(key()).has_value());
    }
    scram_cache::store(key(), keys(5));
    CHECK(mode_of(t.file) == 0600);
    CHECK(same(scram_cache::load(key()), keys(5)));
  }

  TEST_CASE("a directory others may write is neither read nor written") {
    TempCache t;
    scram_cache::store(key(), keys(1));
    REQUIRE(chmod(t.dir.c_str(), 0777) == 0);
    CHECK_FALSE(scram_cache::load(key()).has_value());
    scram_cache::store(key(), keys(2));
    REQUIRE(chmod(t.dir.c_str(), 0700) == 0);
    CHECK(same(scram_cache::load(key()), keys(1)));
  }

  TEST_CASE("a symbolic link, as the file or as the directory, is not followed") {
    TempCache t;
    scram_cache::store(key(), keys(1));
    std::string real = t.root + "/real-keys", before = contents(t.file);
    REQUIRE(rename(t.file.c_str(), real.c_str()) == 0);
    REQUIRE(symlink(real.c_str(), t.file.c_str()) == 0);
    CHECK_FALSE(scram_cache::load(key()).has_value());
    // a store replaces the link itself, never writes through it
    scram_cache::store(key(), keys(2));
    CHECK(mode_of(t.file) == 0600);
    CHECK(same(scram_cache::load(key()), keys(2)));
    CHECK(contents(real) == before);
    std::string moved = t.root + "/real-dir";
    REQUIRE(rename(t.dir.c_str(), moved.c_str()) == 0);
    REQUIRE(symlink(moved.c_str(), t.dir.c_str()) == 0);
    CHECK_FALSE(scram_cache::load(key()).has_value());
  }

  TEST_CASE("garbage, a cut file, and a huge file are misses, never errors") {
    TempCache t;
    scram_cache::store(key(), keys(1));
    std::string good = contents(t.file);
    auto write = [&](const std::string& text) {
      std::FILE* f = std::fopen(t.file.c_str(), "w");
      REQUIRE(f);
      std::fwrite(text.data(), 1, text.size(), f);
      std::fclose(f);
      chmod(t.file.c_str(), 0600);
    };
    for (size_t n = 0; n < good.size(); ++n) {
      write(good.substr(0, n)); // every cut: the last line lacks its end
      CHECK_FALSE(scram_cache::load(key()).has_value());
    }
    std::string line = good.substr(good.find('\n') + 1);
    write(std::string(200 * 1024, 'x') + "\n" + line);
    CHECK_FALSE(scram_cache::load(key()).has_value());
    std::string bad_keys = line;
    bad_keys[bad_keys.size() - 5] = '!';
    write(bad_keys);
    CHECK_FALSE(scram_cache::load(key()).has_value());
    write("garbage\n\n \n" + line);
    CHECK(same(scram_cache::load(key()), keys(1))); // the good line among bad ones
  }

  TEST_CASE("no cache without an absolute XDG_CACHE_HOME or HOME") {
    TempCache t;
    std::string home = std::getenv("HOME") ? std::getenv("HOME") : "";
    setenv("XDG_CACHE_HOME", "relative", 1);
    setenv("HOME", "also-relative", 1);
    CHECK(scram_cache::directory().empty());
    scram_cache::store(key(), keys(1)); // nothing written, nothing thrown
    CHECK_FALSE(scram_cache::load(key()).has_value());
    setenv("HOME", home.c_str(), 1);
  }

  TEST_CASE("a file or directory of another user is ignored (as root: chown to nobody)" *
            doctest::skip(geteuid() != 0)) {
    TempCache t;
    const uid_t nobody = 65534;
    scram_cache::store(key(), keys(1));
    REQUIRE(chown(t.file.c_str(), nobody, nobody) == 0);
    CHECK_FALSE(scram_cache::load(key()).has_value());
    REQUIRE(chown(t.file.c_str(), 0, 0) == 0);
    CHECK(same(scram_cache::load(key()), keys(1)));
    REQUIRE(chown(t.dir.c_str(), nobody, nobody) == 0);
    CHECK_FALSE(scram_cache::load(key()).has_value());
    scram_cache::store(key(), keys(2)); // not written in another user's directory
    REQUIRE(chown(t.dir.c_str(), 0, 0) == 0);
    CHECK(same(scram_cache::load(key()), keys(1)));
  }
}
