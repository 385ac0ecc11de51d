#pragma once
// Base64 (RFC 4648 §4, with padding), as SCRAM writes its salt, proof and
// signature (RFC 5802 §7).
#include <optional>
#include <string>
#include <string_view>

namespace simba::backend::pg {

std::string base64_encode(std::string_view bytes);
// nullopt unless `text` is whole groups of 4 from the alphabet, padded
// with '=' only at the end (no white space: SCRAM allows none).
std::optional<std::string> base64_decode(std::string_view text);

} // namespace simba::backend::pg
