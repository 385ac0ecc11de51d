#pragma once
// A Holder (backend.hpp) as one string, the form every backend stores it
// in: "<via>\t<pid>\t<host>\t<command>". The command goes last, so that a
// tab in it cannot shift the other fields; a tab in the others is written
// as '_'. Stored beside the fencing token it was written with: a lease
// taken since by an older simba (which writes no holder) shows none rather
// than the one before.
#include "backend/backend.hpp"

#include <optional>
#include <string>

namespace simba::backend {

std::string encode_holder(const Holder& h);

// nullopt for a string not made by encode_holder.
std::optional<Holder> decode_holder(const std::string& s);

} // namespace simba::backend
