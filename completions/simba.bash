# bash completion for simba(1)                             -*- shell-script -*-
#
# Installed as share/bash-completion/completions/simba (loaded on demand by
# bash-completion), or sourced by hand: `source completions/simba.bash`.
# Completes subcommands, each subcommand's options, the values of --backend
# (URI schemes, then files for sqlite:), --kill-signal, --restart,
# --strategy, --log-format, durations, --env-file (files) and --lease
# ($SIMBA_LEASE), mutex names for --mutex (from
# `simba status --all --json`, on the backend already typed with --backend, else
# SIMBA_BACKEND, else the default database), and CMD after `--`.

_simba_value_options='--mutex --backend --ttl --transition --contender-id --kill-signal
  --kill-after --log-format --timeout --conflict-exit-code --min-hold --once-per --offset
  --restart --restart-delay --max-restarts --every --strategy --initial-delay --max-runs --token
  --lease --env-file --slots'

# _simba_options SUBCOMMAND: the options it accepts.
_simba_options() {
  local backend='--backend -q --quiet -v --verbose -h --help'
  local supervise="--mutex $backend --ttl --transition --contender-id --kill-signal
    --kill-after --log-format"
  case $1 in
  run) echo "$supervise --timeout --no-wait --conflict-exit-code --min-hold --once-per --offset
    --retry-failed --lease --slots" ;;
  lead) echo "$supervise --restart --restart-delay --max-restarts --slots" ;;
  schedule) echo "$supervise --every --strategy --initial-delay --max-runs --align --slots" ;;
  status) echo "--mutex --all --wide $backend --json --format" ;;
  release) echo "--mutex $backend --force --token --lease" ;;
  acquire) echo "--mutex $backend --ttl --transition --contender-id --timeout --no-wait --env-file
    --slots" ;;
  renew) echo "--lease --ttl $backend" ;;
  history) echo "--mutex --since $backend --json" ;;
  doctor) echo "--backend --ttl --transition --json --init --sql -h --help" ;;
  esac
}

# _simba_sqlite_file URI: the database file a sqlite URI (or the default,
# for an empty URI) names.
_simba_sqlite_file() {
  case $1 in
  '')
    if [[ -n ${SIMBA_HOME-} ]]; then
      echo "$SIMBA_HOME/simba.db"
    else
      echo "${XDG_STATE_HOME:-$HOME/.local/state}/simba/simba.db"
    fi
    ;;
  [sS][qQ][lL][iI][tT][eE]://*) echo "${1#*://}" ;;
  [sS][qQ][lL][iI][tT][eE]:*) echo "${1#*:}" ;;
  esac
}

# _simba_mutexes BACKEND: the mutex names the backend knows; nothing if it
# does not answer within 2 s. A SQLite database that does not exist yet is
# not created just for a completion.
_simba_mutexes() {
  local backend=${1:-${SIMBA_BACKEND-}} db json
  db=$(_simba_sqlite_file "$backend")
  [[ -n $db && ! -e $db ]] && return 0
  local -a cmd=(simba status --all --json)
  [[ -n $backend ]] && cmd+=(--backend "$backend")
  command -v timeout >/dev/null 2>&1 && cmd=(timeout 2 "${cmd[@]}")
  json=$("${cmd[@]}" 2>/dev/null </dev/null) || return 0
  # {"mutexes":[{...,"mutex":"NAME",...}]}: names are [A-Za-z0-9._:/@-] only
  printf '%s\n' "$json" | grep -o '"mutex":"[^"]*"' | sed 's/^"mutex":"//; s/"$//'
}

_simba() {
  local -a words
  local cur prev i sub='' backend='' dashdash=-1
  # The words up to the cursor, split on blanks only: COMP_WORDS splits
  # sqlite:x and redis://h at the colon.
  if [[ -n ${COMP_LINE-} ]]; then
    local line=${COMP_LINE:0:${COMP_POINT:-${#COMP_LINE}}}
    read -ra words <<<"$line"
    [[ -z $line || $line == *[[:blank:]] ]] && words+=('')
  else
    words=("${COMP_WORDS[@]:0:COMP_CWORD+1}")
  fi
  cur=${words[${#words[@]} - 1]}
  prev=''
  ((${#words[@]} > 1)) && prev=${words[${#words[@]} - 2]}
  COMPREPLY=()

  for ((i = 1; i < ${#words[@]} - 1; i++)); do
    case ${words[i]} in
    --) dashdash=$i; break ;;
    --backend) backend=${words[i + 1]} ;;
    --backend=*) backend=${words[i]#--backend=} ;;
    -*) ;;
    *)
      # a value of the option before it, or the subcommand
      if [[ -z $sub && " $_simba_value_options " != *[[:space:]]"${words[i - 1]}"[[:space:]]* ]]; then
        sub=${words[i]}
      fi
      ;;
    esac
  done

  # After `--`: CMD and its arguments.
  if ((dashdash >= 0)); then
    local j
    for ((j = 1; j < ${#COMP_WORDS[@]}; j++)); do
      [[ ${COMP_WORDS[j]} == -- ]] && break
    done
    if declare -F _command_offset >/dev/null && ((j < COMP_CWORD)); then
      _command_offset $((j + 1))
    elif ((dashdash == ${#words[@]} - 2)); then
      mapfile -t COMPREPLY < <(compgen -c -- "$cur")
    else
      mapfile -t COMPREPLY < <(compgen -f -- "$cur")
    fi
    return 0
  fi

  local -a values=()
  case $prev in
  --mutex)
    mapfile -t values < <(_simba_mutexes "$backend")
    ;;
  --backend)
    case $cur in
    [sS][qQ][lL][iI][tT][eE]://*)
      mapfile -t values < <(compgen -f -- "${cur#*://}")
      values=("${values[@]/#/${cur%%://*}://}")
      ;;
    [sS][qQ][lL][iI][tT][eE]:*)
      local rest=${cur#*:}
      mapfile -t values < <(compgen -f -- "$rest")
      values=("${values[@]/#/${cur%%:*}:}")
      [[ // == "$rest"* ]] && values+=("${cur%%:*}:///")
      ;;
    *) values=(sqlite: sqlite:/// redis:// rediss:// redis+unix:// redis+sentinel:// rediss+sentinel:// redis+cluster:// rediss+cluster:// postgres://) ;;
    esac
    compopt -o nospace 2>/dev/null || true
    ;;
  --kill-signal) values=(TERM INT HUP QUIT KILL USR1 USR2) ;;
  --restart) values=(never on-failure always) ;;
  --strategy) values=(fixed-rate fixed-delay) ;;
  --log-format) values=(text json) ;;
  --format) values=(table json openmetrics prometheus) ;;
  --ttl | --transition | --kill-after | --timeout | --min-hold | --restart-delay | \
    --every | --initial-delay | --once-per | --offset | --since)
    values=(500ms 1s 2s 5s 10s 30s 1m 5m 10m 30m 1h 1d)
    ;;
  --contender-id | --conflict-exit-code | --max-runs | --max-restarts | --token | --slots) return 0 ;;
  --lease) [[ -n ${SIMBA_LEASE-} ]] && values=("$SIMBA_LEASE") ;;
  --env-file) mapfile -t values < <(compgen -f -- "$cur") ;;
  *)
    if [[ -z $sub ]]; then
      if [[ $cur == -* ]]; then
        values=(--help --version)
      else
        values=(run lead schedule status release acquire renew history doctor)
      fi
    elif [[ $cur == -* || -z $cur ]]; then
      # shellcheck disable=SC2207 # a list of words without blanks
      values=($(_simba_options "$sub"))
      case $sub in run | lead | schedule) values+=(--) ;; esac
    fi
    ;;
  esac
  local v
  for v in "${values[@]}"; do
    [[ $v == "$cur"* ]] && COMPREPLY+=("$v")
  done
  # Readline replaces only what follows the last colon of the word.
  if [[ $cur == *:* && ${COMP_WORDBREAKS-:} == *:* ]]; then
    local colon_prefix=${cur%"${cur##*:}"}
    for i in "${!COMPREPLY[@]}"; do
      COMPREPLY[i]=${COMPREPLY[i]#"$colon_prefix"}
    done
  fi
  return 0
}

complete -F _simba simba
