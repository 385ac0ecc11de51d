#!/usr/bin/env bash
# simba --version: "simba VERSION (backends: ...)", the version of the CMake
# project, and the backends it lists are the ones the binary accepts.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"

assert_exit 0 "$SIMBA" --version
line=$(<"$T/out")
[[ $line =~ ^simba\ ([0-9]+\.[0-9]+\.[0-9]+)\ \(backends:\ ([a-z, ]+)\)$ ]] ||
  fail "unexpected --version output: [$line]"
version=${BASH_REMATCH[1]} backends=${BASH_REMATCH[2]}
project=$(sed -n 's/^project(simba VERSION \([0-9.]*\).*/\1/p' "$_e2e_root/CMakeLists.txt")
assert_eq "$project" "$version" "version in --version vs CMakeLists.txt"
[[ ! -s $T/err ]] || fail "--version printed on stderr: $(cat -- "$T/err")"

[[ $backends == sqlite* ]] || fail "sqlite is not listed: [$backends]"
assert_exit 0 "$SIMBA" run --backend "sqlite:$T/v.db" --mutex m -- true
assert_exit 0 "$SIMBA" status --backend "sqlite:$T/v.db"
# A backend that is compiled in fails to connect (69); one that is not is a
# usage error (64).
if [[ $backends == *redis* ]]; then
  assert_exit 69 "$SIMBA" status --backend "redis://127.0.0.1:1?timeout=2s"
else
  assert_exit 64 "$SIMBA" status --backend "redis://127.0.0.1:1?timeout=2s"
fi
# PostgreSQL is always compiled in: a server that is not there is 69.
[[ $backends == *postgres* ]] || fail "postgres is not listed: [$backends]"
assert_exit 69 "$SIMBA" status --backend "postgres://127.0.0.1:1/db?timeout=2s"
# etcd too (simba's own client): nobody listening is 69.
[[ $backends == *etcd* ]] || fail "etcd is not listed: [$backends]"
assert_exit 69 "$SIMBA" status --backend "etcd://127.0.0.1:1?timeout=2s"
