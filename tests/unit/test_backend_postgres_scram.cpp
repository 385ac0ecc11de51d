// SHA-256, HMAC-SHA-256, PBKDF2 and the SCRAM-SHA-256 exchange against the
// published vectors (FIPS 180-4's examples, RFC 4231, RFC 7914 §11,
// RFC 7677 §3), and the client's refusals of a hostile or broken server.
#include "backend/postgres/base64.hpp"
#include "backend/postgres/scram.hpp"
#include "backend/postgres/sha256.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace simba::backend::pg;

namespace {

std::string hex(const uint8_t* p, size_t n) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < n; ++i) out += digits[p[i] >> 4], out += digits[p[i] & 15];
  return out;
}
std::string hex(const Digest& d) { return hex(d.data(), d.size()); }
std::string hmac(const std::string& key, const std::string& data) {
  return hex(HmacSha256(key).mac(data));
}

// RFC 7677 §3's exchange.
const std::string k_client_nonce = "rOprNGfwEbeRWgbNEkqO";
const std::string k_server_first = "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                                   "s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";
const std::string k_client_final = "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                                   "p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=";
const std::string k_server_final = "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=";

// Runs the test case twice (doctest subcases): on the CPU's SHA
// instructions, when it has them, and on the portable code. Says which.
std::string on_each_path() {
  std::string path = "unset";
  SUBCASE("the CPU's SHA instructions") {
    path = use_sha_instructions(true) ? "SHA instructions" : "portable (no SHA instructions)";
  }
  SUBCASE("the portable code") {
    use_sha_instructions(false);
    path = "portable";
  }
  return path;
}
struct RestoreSha {
  ~RestoreSha() { use_sha_instructions(true); }
};

scram::Client rfc_client() { return scram::Client("pencil", k_client_nonce, "user"); }

} // namespace

TEST_SUITE("backend::pg::sha256") {
  TEST_CASE("SHA-256 gives FIPS 180-4's example digests") {
    RestoreSha restore;
    const std::string path = on_each_path();
    CAPTURE(path);
    CHECK(hex(Sha256::of("abc")) ==
          "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    CHECK(hex(Sha256::of("")) ==
          "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    CHECK(hex(Sha256::of("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")) ==
          "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    Sha256 million; // fed in uneven pieces: the buffering across blocks
    std::string piece(997, 'a');
    for (size_t left = 1000000; left > 0; left -= std::min(left, piece.size()))
      million.update(piece.data(), std::min(left, piece.size()));
    CHECK(hex(million.finish()) ==
          "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  }

  TEST_CASE("HMAC-SHA-256 gives RFC 4231's test vectors") {
    RestoreSha restore;
    const std::string path = on_each_path();
    CAPTURE(path);
    CHECK(hmac(std::string(20, '\x0b'), "Hi There") ==
          "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
    CHECK(hmac("Jefe", "what do ya want for nothing?") ==
          "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    CHECK(hmac(std::string(20, '\xaa'), std::string(50, '\xdd')) ==
          "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe");
    std::string key4;
    for (char c = 1; c <= 25; ++c) key4 += c;
    CHECK(hmac(key4, std::string(50, '\xcd')) ==
          "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b");
    CHECK(
        hmac(std::string(131, '\xaa'), "Test Using Larger Than Block-Size Key - Hash Key First") ==
        "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
    // Keys of one block and one byte more (values from Python's hmac
    // module): only a key longer than the block is hashed first.
    CHECK(hmac(std::string(64, 'k'), "abc") ==
          "ae0c0e4a2340cf50185eb46aaa8723f4769153661612e212fb0d1fa3170c6202");
    CHECK(hmac(std::string(65, 'k'), "abc") ==
          "ed378e5dfa30dc98814ba09b2e610d9b6af66054922ceef9480da094a3f11b2d");
    CHECK(hmac(std::string(131, '\xaa'),
               "This is a test using a larger than block-size key and a larger than block-size "
               "data. The key needs to be hashed before being used by the HMAC algorithm.") ==
          "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2");
  }

  TEST_CASE("chain() (PBKDF2's fast path) is the XOR of HMACs of HMACs") {
    RestoreSha restore;
    const std::string path = on_each_path();
    CAPTURE(path);
    HmacSha256 mac("key");
    Digest u1 = Sha256::of("abc"), u2 = mac.mac(as_bytes(u1)), u3 = mac.mac(as_bytes(u2));
    Digest x = u1;
    for (size_t i = 0; i < x.size(); ++i) x[i] ^= u2[i] ^ u3[i];
    CHECK(hex(mac.chain(u1, 1)) == hex(u1));
    CHECK(hex(mac.chain(u1, 3)) == hex(x));
  }
}

TEST_SUITE("backend::pg::scram") {
  // dkLen 64 there is two PBKDF2 blocks; Hi() is the first, 32 bytes.
  TEST_CASE("PBKDF2-HMAC-SHA-256 gives RFC 7914's vectors (c=1, c=80000)") {
    RestoreSha restore;
    const std::string path = on_each_path();
    CAPTURE(path);
    CHECK(hex(scram::salted_password("passwd", "salt", 1)) ==
          "55ac046e56e3089fec1691c22544b605f94185216dde0465e68b9d57c20dacbc");
    CHECK(hex(scram::salted_password("Password", "NaCl", 80000)) ==
          "4ddcd8f60b98be21830cee5ef22701f9641a4418d04c0414aeff08876b34ab56");
  }

  TEST_CASE("base64 round trips and refuses what is not base64") {
    for (const std::string& s :
         std::vector<std::string>{"", "a", "ab", "abc", "abcd", std::string("\0\xff\x10", 3)})
      CHECK(base64_decode(base64_encode(s)) == s);
    CHECK(base64_encode("n,,") == "biws");
    for (const char* bad : {"a", "abc", "ab=c", "a===", "ab c", "====", "YQ==YQ==", "Y!=="})
      CHECK_FALSE(base64_decode(bad).has_value());
  }

  TEST_CASE("the exchange of RFC 7677's example: client-final and the server's signature") {
    RestoreSha restore;
    const std::string path = on_each_path();
    CAPTURE(path);
    auto client = rfc_client();
    CHECK(client.client_first() == "n,,n=user,r=rOprNGfwEbeRWgbNEkqO");
    CHECK(scram::Client("pw", "abc").client_first() == "n,,n=,r=abc");
    std::string out, why;
    scram::Keys keys;
    REQUIRE(client.client_final(k_server_first, out, why, &keys));
    CHECK(out == k_client_final);
    CHECK(client.iterations() == 4096);
    CHECK(client.salt() == *base64_decode("W22ZaJ0SNY7soEsUEjb6gQ=="));
    CHECK(client.verify_server_final(k_server_final, why));
    // The keys written out are the ones derive_keys() gives.
    auto derived = scram::derive_keys("pencil", client.salt(), 4096);
    CHECK(keys.client_key == derived.client_key);
    CHECK(keys.server_key == derived.server_key);
  }

  TEST_CASE("cached keys are used instead of the password") {
    scram::Keys keys =
        scram::derive_keys("pencil", *base64_decode("W22ZaJ0SNY7soEsUEjb6gQ=="), 4096);
    scram::Client client("not the password", k_client_nonce, "user");
    std::string out, why;
    REQUIRE(client.client_final(k_server_first, out, why, &keys, true));
    CHECK(out == k_client_final);
    CHECK(client.verify_server_final(k_server_final, why));
    // and without `cached`, derived from the (wrong) password
    scram::Client again("not the password", k_client_nonce, "user");
    REQUIRE(again.client_final(k_server_first, out, why, &keys, false));
    CHECK(out != k_client_final);
    CHECK_FALSE(again.verify_server_final(k_server_final, why));
  }

  TEST_CASE("a wrong server signature is refused") {
    auto client = rfc_client();
    std::string out, why;
    REQUIRE(client.client_final(k_server_first, out, why));
    std::string flipped = k_server_final;
    flipped[5] = flipped[5] == 'A' ? 'B' : 'A';
    CHECK_FALSE(client.verify_server_final(flipped, why));
    CHECK(why.find("signature is wrong") != std::string::npos);
    CHECK_FALSE(client.verify_server_final("e=invalid-proof", why));
    CHECK(why.find("invalid-proof") != std::string::npos);
    // a signature before any client-final
    CHECK_FALSE(rfc_client().verify_server_final(k_server_final, why));
  }

  TEST_CASE("a server nonce that does not extend ours is refused") {
    std::string out, why;
    for (const std::string& nonce :
         std::vector<std::string>{"XOprNGfwEbeRWgbNEkqO%hvY", "rOprNGfwEbeRWgbNEkqO", "rOprNG",
                                  "rOprNGfwEbeRWgbNEkqO\x01"}) {
      auto client = rfc_client();
      CHECK_FALSE(
          client.client_final("r=" + nonce + ",s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096", out, why));
      CHECK(why.find("nonce") != std::string::npos);
    }
  }

  TEST_CASE("an iteration count over the cap, or under 1, is refused before any PBKDF2") {
    std::string out, why;
    const std::string head = "r=rOprNGfwEbeRWgbNEkqOxyz,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=";
    for (const std::string& i :
         std::vector<std::string>{std::to_string(scram::k_max_iterations + 1), "2147483648", "0",
                                  "-1", "99999999999999999999", "", "4096x", "+4096"}) {
      auto client = rfc_client();
      CHECK_FALSE(client.client_final(head + i, out, why));
      CHECK(why.find("iteration") != std::string::npos);
    }
    auto client = rfc_client(); // the cap itself and 1 pass (1 here: the cap costs a second)
    CHECK(client.client_final(head + "1", out, why));
  }

  TEST_CASE("malformed, truncated and garbage messages are refused, never a crash") {
    std::string out, why;
    for (size_t n = 0; n < k_server_first.size(); ++n) {
      auto client = rfc_client();
      std::string cut = k_server_first.substr(0, n);
      bool ok = client.client_final(cut, out, why);
      // The only prefixes that parse end inside the iteration count ("i=4", "i=40", ...).
      CHECK((!ok || cut.find(",i=") != std::string::npos));
      if (!ok) CHECK(!why.empty());
    }
    for (const std::string& bad : std::vector<std::string>{
             "", ",", ",,,", "garbage",
             "r=,s=,i=", "s=W22ZaJ0SNY7soEsUEjb6gQ==,r=rOprNGfwEbeRWgbNEkqOx,i=1",
             "m=ext,r=rOprNGfwEbeRWgbNEkqOx,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=1",
             "r=rOprNGfwEbeRWgbNEkqOx,s=!!!!,i=1", "r=rOprNGfwEbeRWgbNEkqOx,s=,i=1",
             std::string("r=rOprNGfwEbeRWgbNEkqOx\0,s=QQ==,i=1", 34), std::string(100000, ',')}) {
      auto client = rfc_client();
      CHECK_FALSE(client.client_final(bad, out, why));
      CHECK(why.find("pencil") == std::string::npos);
    }
    auto client = rfc_client();
    REQUIRE(client.client_final(k_server_first, out, why));
    for (size_t n = 0; n < k_server_final.size(); ++n)
      CHECK_FALSE(client.verify_server_final(k_server_final.substr(0, n), why));
    for (const std::string& bad : std::vector<std::string>{"", ",", "v=", "v=!!!!", "x=abc",
                                                           "v=QQ==", std::string(5000, 'v')})
      CHECK_FALSE(client.verify_server_final(bad, why));
    CHECK(client.verify_server_final(k_server_final + ",x=extension", why));
  }
}
