#!/usr/bin/env bash
# completions/simba.bash in a real bash: subcommands, every option of each
# subcommand's --help, the values of --backend, --kill-signal, --restart,
# --strategy and --log-format, mutex names from `simba status --json` (on the
# --backend already typed), nothing (and no new database) when the backend
# does not answer, URIs split at ':' by readline, and CMD after `--`.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"

file=$_e2e_root/completions/simba.bash
[[ -f $file ]] || fail "no $file"

# `simba` as the completion finds it: on PATH.
mkdir -p -- "$T/bin"
ln -s -- "$SIMBA" "$T/bin/simba"
export PATH="$T/bin:$PATH"

# complete WORD... : COMPREPLY, one per line, for the command line WORD...
# (the last word is the one being completed), in a fresh bash that sourced
# the file, as bash calls a -F function: COMP_WORDS, COMP_CWORD, COMP_LINE,
# COMP_POINT set.
complete() {
  bash --norc --noprofile -c '
    source "$1" || exit 1
    shift
    COMP_WORDS=("$@")
    COMP_CWORD=$(($# - 1))
    COMP_LINE="$*"
    COMP_POINT=${#COMP_LINE}
    _simba simba "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
    printf "%s\n" "${COMPREPLY[@]}"
  ' bash "$file" "$@" 2>"$T/complete.err" | sed '/^$/d' | sort
  [[ ! -s $T/complete.err ]] || fail "completion of [$*] printed on stderr: $(cat -- "$T/complete.err")"
}
expect() { # expect "EXPECTED WORDS" WORD...
  local expected
  expected=$(printf '%s\n' $1 | sort)
  shift
  assert_eq "$expected" "$(complete "$@")" "completion of [$*]"
}
offers() { # offers WORD... ::: CANDIDATE... : each candidate is offered
  local -a line=()
  while [[ $1 != ::: ]]; do line+=("$1"); shift; done
  shift
  local got c
  got=$(complete "${line[@]}")
  for c in "$@"; do
    grep -qxF -- "$c" <<<"$got" || fail "completion of [${line[*]}] lacks [$c]; got: $(echo $got)"
  done
}

expect "run lead schedule status release acquire renew history doctor" simba ''
expect "run release renew" simba r
expect "schedule status" simba s

# Every option each subcommand's --help lists.
for sub in run lead schedule status release acquire renew history doctor; do
  mapfile -t opts < <("$SIMBA" "$sub" --help | grep -o -- '--[a-z][a-z-]*' | sort -u)
  offers simba "$sub" -- ::: "${opts[@]}"
  offers simba "$sub" --mutex m -- ::: "${opts[@]}"
done
expect "--no-wait" simba run --no
expect "--force" simba release --f

# Values.
expect "sqlite: sqlite:/// redis:// rediss:// redis+unix:// redis+sentinel:// rediss+sentinel:// redis+cluster:// rediss+cluster:// postgres://" simba run --backend ''
expect "redis:// rediss:// redis+unix:// redis+sentinel:// rediss+sentinel:// redis+cluster:// rediss+cluster://" simba lead --backend red
expect "TERM INT HUP QUIT KILL USR1 USR2" simba run --kill-signal ''
expect "never on-failure always" simba lead --restart ''
expect "fixed-rate fixed-delay" simba schedule --strategy ''
expect "text json" simba schedule --log-format ''
offers simba run --ttl '' ::: 10s 1m
# A sqlite URI completes the file after the scheme.
touch -- "$T/locks.db"
offers simba run --backend "sqlite:$T/lo" ::: "$T/locks.db"

# Mutex names from `simba status --json` on SIMBA_BACKEND...
"$SIMBA" run --mutex alpha -- true
"$SIMBA" run --mutex ci/deploy@prod -- true
expect "alpha ci/deploy@prod" simba run --mutex ''
expect "ci/deploy@prod" simba status --json --mutex c
expect "alpha" simba release --force --mutex al
# ...or on the --backend typed before it.
"$SIMBA" run --backend "sqlite:$T/other.db" --mutex gamma -- true
expect "gamma" simba lead --backend "sqlite:$T/other.db" --mutex ''
expect "gamma" simba lead --backend="sqlite:$T/other.db" --mutex ''
# A backend that does not answer: nothing, silently, and quickly; a database
# that does not exist is not created by a completion.
expect "" simba run --backend "sqlite:$T/none.db" --mutex ''
[[ ! -e $T/none.db ]] || fail "the completion created $T/none.db"
start=$(now_ms)
expect "" simba run --backend redis://127.0.0.1:1 --mutex ''
(($(now_ms) - start < 5000)) || fail "the completion took $(($(now_ms) - start)) ms on a dead backend"

# Readline splits `redis:` at the colon (COMP_WORDBREAKS) and replaces only
# what follows it: the replies must start after the colon.
got=$(bash --norc --noprofile -c '
  source "$1"
  COMP_LINE="simba run --backend redis:"; COMP_POINT=${#COMP_LINE}
  COMP_WORDS=(simba run --backend redis :); COMP_CWORD=4
  _simba; printf "%s\n" "${COMPREPLY[@]}"' bash "$file")
assert_eq "//" "$got" "completion after 'redis:' split by readline"

# After `--`: a command, then its arguments.
offers simba run --mutex m -- ech ::: echo
offers simba lead -- ech ::: echo
