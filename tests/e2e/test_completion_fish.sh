#!/usr/bin/env bash
# completions/simba.fish in a real fish (`complete -C`): subcommands, every
# option of each subcommand's --help, values, mutex names from `simba status
# --json` on the --backend typed, nothing when the backend does not answer,
# and CMD after `--`.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"

file=$_e2e_root/completions/simba.fish
[[ -f $file ]] || fail "no $file"
needs fish

mkdir -p -- "$T/bin"
ln -s -- "$SIMBA" "$T/bin/simba"
export PATH="$T/bin:$PATH"
# fish keeps its history and universal variables here
export XDG_CONFIG_HOME="$T/config" XDG_DATA_HOME="$T/data"

# complete LINE: the candidates (without descriptions), sorted.
complete() {
  timeout -k 5 30 fish --no-config -c 'source $argv[1]; complete -C $argv[2]' "$file" "$1" \
    2>"$T/complete.err" | cut -f1 | sort -u
  [[ ! -s $T/complete.err ]] || fail "completion of [$1] printed on stderr: $(cat -- "$T/complete.err")"
}
expect() { # expect LINE "EXPECTED WORDS"
  assert_eq "$(printf '%s\n' $2 | sort -u)" "$(complete "$1")" "fish completion of [$1]"
}
offers() { # offers LINE CANDIDATE...
  local line=$1 got c
  shift
  got=$(complete "$line")
  for c in "$@"; do
    grep -qxF -- "$c" <<<"$got" || fail "fish completion of [$line] lacks [$c]; got: $(echo $got)"
  done
}

expect 'simba ' "run lead schedule status release acquire renew history doctor"
expect 'simba ru' "run"
for sub in run lead schedule status release acquire renew history doctor; do
  mapfile -t opts < <("$SIMBA" "$sub" --help | grep -o -- '--[a-z][a-z-]*' | sort -u)
  offers "simba $sub --" "${opts[@]}"
  offers "simba $sub --mutex m --" "${opts[@]}"
done
expect 'simba release --f' "--force"
expect 'simba run --backend ' "sqlite: sqlite:/// redis:// rediss:// redis+unix:// redis+sentinel:// rediss+sentinel:// redis+cluster:// rediss+cluster:// postgres://"
touch -- "$T/locks.db"
offers "simba run --backend sqlite:$T/lo" "sqlite:$T/locks.db"
expect 'simba run --kill-signal ' "TERM INT HUP QUIT KILL USR1 USR2"
expect 'simba lead --restart ' "never on-failure always"
expect 'simba schedule --strategy ' "fixed-rate fixed-delay"
expect 'simba run --log-format ' "text json"
offers 'simba schedule --every ' 10s 5m

"$SIMBA" run --mutex alpha -- true
"$SIMBA" run --mutex ci/deploy@prod -- true
expect 'simba run --mutex ' "alpha ci/deploy@prod"
expect 'simba status --mutex c' "ci/deploy@prod"
"$SIMBA" run --backend "sqlite:$T/other.db" --mutex gamma -- true
expect "simba lead --backend sqlite:$T/other.db --mutex " "gamma"
expect "simba run --backend sqlite:$T/none.db --mutex " ""
[[ ! -e $T/none.db ]] || fail "the completion created $T/none.db"
expect "simba run --backend redis://127.0.0.1:1 --mutex " ""

offers 'simba run --mutex m -- ech' echo
