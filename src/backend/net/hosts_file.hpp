#pragma once
// /etc/hosts: "ADDRESS NAME [ALIAS...]" per line, '#' starts a comment.
#include <string>
#include <sys/socket.h>
#include <vector>

namespace simba::backend::net {

// The addresses `text` (the file's contents) gives `name`, compared
// case-insensitively, in the file's order, each with `port`.
std::vector<sockaddr_storage> hosts_lookup(const std::string& text, const std::string& name,
                                           int port);

} // namespace simba::backend::net
