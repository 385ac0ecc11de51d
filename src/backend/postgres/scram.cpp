// SCRAM-SHA-256's client side (scram.hpp), after RFC 5802 §3 (the
// algorithm), §5 and §7 (the messages) and RFC 7677.
#include "backend/postgres/scram.hpp"

#include "backend/postgres/base64.hpp"

#include <vector>

namespace simba::backend::pg::scram {
namespace {

// The GS2 header "n,," (no channel binding, no authzid), in base64 as
// client-final's c= attribute carries it.
constexpr const char* k_gs2_header = "n,,";
constexpr const char* k_channel_binding = "c=biws";

std::vector<std::string> split_attributes(const std::string& message) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    size_t comma = message.find(',', start);
    parts.push_back(message.substr(start, comma - start));
    if (comma == std::string::npos) return parts;
    start = comma + 1;
  }
}

// "x=value": the value, when the attribute is `name`.
bool attribute(const std::string& part, char name, std::string& value) {
  if (part.size() < 2 || part[0] != name || part[1] != '=') return false;
  value = part.substr(2);
  return true;
}

// RFC 5802 §7: printable = %x21-2B / %x2D-7E (no comma).
bool printable(const std::string& s) {
  for (char c : s)
    if (c < 0x21 || c > 0x7e || c == ',') return false;
  return true;
}

// Decimal digits only, within [1, k_max_iterations].
bool parse_iterations(const std::string& text, int& out) {
  if (text.empty() || text.size() > 9) return false;
  long value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    value = value * 10 + (c - '0');
  }
  if (value < 1 || value > k_max_iterations) return false;
  out = static_cast<int>(value);
  return true;
}

// RFC 5802 §5.1: a user name's ',' and '=' are written =2C and =3D.
std::string saslname(const std::string& user) {
  std::string out;
  for (char c : user) out += c == ',' ? "=2C" : c == '=' ? "=3D" : std::string(1, c);
  return out;
}

Digest xor_of(const Digest& a, const Digest& b) {
  Digest out;
  for (size_t i = 0; i < out.size(); ++i) out[i] = a[i] ^ b[i];
  return out;
}

// Whether two signatures are equal, in a time that does not say where they differ.
bool same(const Digest& a, const Digest& b) {
  uint8_t diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= a[i] ^ b[i];
  return diff == 0;
}

// One line of the server's own text for a message: printable, bounded.
std::string quoted(const std::string& text) {
  std::string out;
  for (char c : text.substr(0, 80)) out += (c >= 0x20 && c <= 0x7e) ? c : '?';
  return "\"" + out + (text.size() > 80 ? "...\"" : "\"");
}

} // namespace

Digest salted_password(const std::string& password, const std::string& salt, int iterations) {
  const HmacSha256 prf(password);
  // U1 = HMAC(P, salt || INT(1)); Ui = HMAC(P, U(i-1)); the XOR of them all.
  return prf.chain(prf.mac(salt + std::string("\0\0\0\1", 4)), iterations);
}

Keys derive_keys(const std::string& password, const std::string& salt, int iterations) {
  const HmacSha256 salted(as_bytes(salted_password(password, salt, iterations)));
  return Keys{salted.mac("Client Key"), salted.mac("Server Key")};
}

Client::Client(std::string password, std::string nonce, std::string user)
    : m_password(std::move(password)), m_nonce(std::move(nonce)),
      m_first_bare("n=" + saslname(user) + ",r=" + m_nonce) {}

std::string Client::client_first() const { return k_gs2_header + m_first_bare; }

bool Client::client_final(const std::string& server_first, std::string& out, std::string& why,
                          Keys* keys, bool cached) {
  m_final_sent = false;
  auto parts = split_attributes(server_first);
  std::string nonce, salt64, iterations;
  if (!parts.empty() && parts[0].rfind("m=", 0) == 0) {
    why = "the server's SCRAM message asks for an extension simba does not know";
    return false;
  }
  if (parts.size() < 3 || !attribute(parts[0], 'r', nonce) || !attribute(parts[1], 's', salt64) ||
      !attribute(parts[2], 'i', iterations)) {
    why = "malformed SCRAM server-first message (not r=...,s=...,i=...)";
    return false;
  }
  if (!printable(nonce) || nonce.size() <= m_nonce.size() ||
      nonce.compare(0, m_nonce.size(), m_nonce) != 0) {
    why = "the server's SCRAM nonce does not extend the one simba sent";
    return false;
  }
  auto salt = base64_decode(salt64);
  if (!salt || salt->empty()) {
    why = "the server's SCRAM salt is not base64";
    return false;
  }
  if (!parse_iterations(iterations, m_iterations)) {
    why = "the server's SCRAM iteration count " + quoted(iterations) + " is not in 1.." +
          std::to_string(k_max_iterations);
    return false;
  }
  m_salt = std::move(*salt);
  Keys derived = keys && cached ? *keys : derive_keys(m_password, m_salt, m_iterations);
  if (keys && !cached) *keys = derived;

  std::string final_without_proof = std::string(k_channel_binding) + ",r=" + nonce;
  std::string auth_message = m_first_bare + "," + server_first + "," + final_without_proof;
  Digest client_key = derived.client_key;
  Digest stored_key = Sha256::of(as_bytes(client_key));
  Digest client_signature = HmacSha256(as_bytes(stored_key)).mac(auth_message);
  Digest proof = xor_of(client_key, client_signature);
  m_server_signature = HmacSha256(as_bytes(derived.server_key)).mac(auth_message);
  out = final_without_proof + ",p=" + base64_encode(as_bytes(proof));
  m_final_sent = true;
  return true;
}

bool Client::verify_server_final(const std::string& server_final, std::string& why) const {
  auto parts = split_attributes(server_final);
  std::string value;
  if (attribute(parts[0], 'e', value)) {
    why = "the server refused the SCRAM authentication: " + quoted(value);
    return false;
  }
  if (!m_final_sent) {
    why = "SCRAM server-final message before the client's final one";
    return false;
  }
  auto signature = attribute(parts[0], 'v', value) ? base64_decode(value) : std::nullopt;
  if (!signature || signature->size() != m_server_signature.size()) {
    why = "malformed SCRAM server-final message (not v=<signature>)";
    return false;
  }
  Digest got;
  std::copy(signature->begin(), signature->end(), got.begin());
  if (!same(got, m_server_signature)) {
    why = "the server's SCRAM signature is wrong: it does not know the password (or is not the "
          "server it claims to be)";
    return false;
  }
  return true;
}

} // namespace simba::backend::pg::scram
