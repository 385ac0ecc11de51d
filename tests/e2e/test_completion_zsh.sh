#!/usr/bin/env bash
# completions/_simba in a real zsh: an interactive `zsh -f` in a pseudo
# terminal (zpty) with compinit, where a completion widget completes each
# test line through the normal completion system and records every match
# (compadd -O). Checks subcommands, every option of each subcommand's --help,
# values, mutex names from `simba status --json` on the --backend typed, and
# CMD after `--`.
source "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"

dir=$_e2e_root/completions
[[ -f $dir/_simba ]] || fail "no $dir/_simba"
needs zsh

mkdir -p -- "$T/bin"
ln -s -- "$SIMBA" "$T/bin/simba"
export PATH="$T/bin:$PATH"

# capture.zsh OUT LINE...: the matches for each LINE in OUT.<n>, one per line.
cat >"$T/capture.zsh" <<'ZSH'
zmodload zsh/zpty || exit 1
dir=$1 out=$2
shift 2
zpty z zsh -f -i || exit 1
zpty -w z "PS1='> '; bindkey -e; fpath=(${(q)dir} \$fpath); autoload -Uz compinit; compinit -u -D"
# compadd, while a completion runs: record the matches, then add them.
zpty -w z "_t_compadd() { local -a m; if (( ! \${argv[(I)-[OAD]*]} )); then builtin compadd -O m \"\$@\"; print -rl -- \$m >>\$_t_out.tmp; fi; builtin compadd \"\$@\"; }"
zpty -w z "_t_complete() { functions[compadd]=\$functions[_t_compadd]; _main_complete; unfunction compadd; compstate[insert]=''; compstate[list]=''; print -r -- '<<end>>' >>\$_t_out.tmp; mv \$_t_out.tmp \$_t_out; }"
zpty -w z "zle -C t-complete complete-word _t_complete; bindkey '^X' t-complete"
n=0
for line in "$@"; do
  (( n++ ))
  zpty -w z "_t_out=${(q)out}.$n"
  zpty -w -n z $'\C-u'"$line"$'\C-x'
  for i in {1..200}; do [[ -e $out.$n ]] && break; sleep 0.05; done
  zpty -w -n z $'\C-u'
done
zpty -d z
ZSH

lines=(
  'simba '
  'simba r'
  'simba run --backend '
  'simba run --kill-signal '
  'simba lead --restart '
  'simba schedule --strategy '
  'simba schedule --log-format '
  'simba run --mutex '
  "simba lead --backend sqlite:$T/other.db --mutex "
  "simba run --backend sqlite:$T/none.db --mutex "
  'simba status --mutex c'
  'simba run --mutex m -- ech'
  'simba run --ttl '
)
subs=(run lead schedule status release acquire renew history doctor)
for sub in "${subs[@]}"; do lines+=("simba $sub --"); done

"$SIMBA" run --mutex alpha -- true
"$SIMBA" run --mutex ci/deploy@prod -- true
"$SIMBA" run --backend "sqlite:$T/other.db" --mutex gamma -- true

timeout -k 5 60 zsh -f "$T/capture.zsh" "$dir" "$T/out" "${lines[@]}" ||
  fail "the zsh session failed"

# matches N: the matches of line N (from 1), sorted, without duplicates.
matches() {
  [[ -f $T/out.$1 ]] || fail "no completion result for [${lines[$1 - 1]}]"
  grep -qx '<<end>>' "$T/out.$1" || fail "incomplete result for [${lines[$1 - 1]}]"
  grep -vx -e '<<end>>' -e '' "$T/out.$1" | sort -u
}
expect() { # expect N "EXPECTED WORDS"
  assert_eq "$(printf '%s\n' $2 | sort -u)" "$(matches "$1")" "zsh completion of [${lines[$1 - 1]}]"
}
offers() { # offers N CANDIDATE...
  local n=$1 got c
  shift
  got=$(matches "$n")
  for c in "$@"; do
    grep -qxF -- "$c" <<<"$got" ||
      fail "zsh completion of [${lines[n - 1]}] lacks [$c]; got: $(echo $got)"
  done
}

expect 1 "run lead schedule status release acquire renew history doctor"
expect 2 "run release renew"
expect 3 "sqlite: sqlite:/// redis:// rediss:// redis+unix:// redis+sentinel:// rediss+sentinel:// redis+cluster:// rediss+cluster:// postgres://"
expect 4 "TERM INT HUP QUIT KILL USR1 USR2"
expect 5 "never on-failure always"
expect 6 "fixed-rate fixed-delay"
expect 7 "text json"
expect 8 "alpha ci/deploy@prod"
expect 9 "gamma"
expect 10 ""
[[ ! -e $T/none.db ]] || fail "the completion created $T/none.db"
expect 11 "ci/deploy@prod"
offers 12 echo
offers 13 10s 1m
i=14
for sub in "${subs[@]}"; do
  mapfile -t opts < <("$SIMBA" "$sub" --help | grep -o -- '--[a-z][a-z-]*' | sort -u)
  offers "$i" "${opts[@]}"
  i=$((i + 1))
done
