# fish completion for simba(1). Installed as
# share/fish/vendor_completions.d/simba.fish; by hand: `source simba.fish`.
#
# Subcommands, each subcommand's options, the values of --backend (URI
# schemes, files for sqlite:), --kill-signal, --restart, --strategy,
# --log-format and durations, mutex names for --mutex (from `simba status --all
# --json`, on the backend already typed with --backend, else SIMBA_BACKEND,
# else the default database), and CMD after `--`.

set -l simba_commands run lead schedule status release acquire renew history doctor

# The backend typed on the command line so far, else SIMBA_BACKEND.
function __simba_backend
    set -l tokens (commandline -opc)
    set -l backend
    for i in (seq 2 (count $tokens))
        switch $tokens[$i]
            case --
                break
            case --backend
                set -l next (math $i + 1)
                if test $next -le (count $tokens)
                    set backend $tokens[$next]
                end
            case '--backend=*'
                set backend (string replace -- --backend= '' $tokens[$i])
        end
    end
    if test -z "$backend"; and set -q SIMBA_BACKEND
        set backend $SIMBA_BACKEND
    end
    echo -- $backend
end

# The mutex names the backend knows; nothing if it does not answer within
# 2 s. A SQLite database that does not exist yet is not created for a
# completion.
function __simba_mutexes
    set -l backend (__simba_backend)
    set -l db
    if test -z "$backend"
        if set -q SIMBA_HOME; and test -n "$SIMBA_HOME"
            set db $SIMBA_HOME/simba.db
        else if set -q XDG_STATE_HOME; and test -n "$XDG_STATE_HOME"
            set db $XDG_STATE_HOME/simba/simba.db
        else
            set db $HOME/.local/state/simba/simba.db
        end
    else if string match -qri '^sqlite://' -- $backend
        set db (string replace -r '^[^:]*://' '' -- $backend)
    else if string match -qri '^sqlite:' -- $backend
        set db (string replace -r '^[^:]*:' '' -- $backend)
    end
    if test -n "$db"; and not test -e "$db"
        return 0
    end
    set -l cmd simba status --all --json
    test -n "$backend"; and set cmd $cmd --backend $backend
    command -sq timeout; and set cmd timeout 2 $cmd
    # {"mutexes":[{...,"mutex":"NAME",...}]}: names are [A-Za-z0-9._:/@-] only
    $cmd 2>/dev/null </dev/null | grep -o '"mutex":"[^"]*"' | sed 's/^"mutex":"//; s/"$//'
end

# URI schemes, then database files once a sqlite: scheme is typed.
function __simba_backends
    set -l cur (commandline -ct)
    if string match -qri '^sqlite://' -- $cur
        set -l scheme (string replace -r '(://).*' '$1' -- $cur)
        for f in (__fish_complete_path (string replace -r '^[^:]*://' '' -- $cur))
            echo $scheme$f
        end
    else if string match -qri '^sqlite:' -- $cur
        set -l scheme (string replace -r '(:).*' '$1' -- $cur)
        for f in (__fish_complete_path (string replace -r '^[^:]*:' '' -- $cur))
            echo $scheme$f
        end
        echo -e $scheme'///\tSQLite database, absolute path'
    else
        echo -e 'sqlite:\tSQLite database, relative path'
        echo -e 'sqlite:///\tSQLite database, absolute path'
        echo -e 'redis://\tRedis: [[user]:password@]host[:port][/db][?prefix=..&timeout=..]'
        echo -e 'rediss://\tRedis over TLS: [user@]host[:port][/db][?cacert=..&cert=..&key=..]'
        echo -e 'redis+unix://\tRedis over a Unix socket: redis+unix:///path.sock[?db=N]'
        echo -e 'redis+sentinel://\tthe master Redis Sentinel names: host[:port][,host[:port]...]/master[/db]'
        echo -e 'rediss+sentinel://\tthe same over TLS: host[:port][,...]/master[/db][?cacert=..]'
        echo -e 'redis+cluster://\ta Redis Cluster through seed nodes: host[:port][,host[:port]...][/0]'
        echo -e 'rediss+cluster://\tthe same over TLS: host[:port][,...][/0][?cacert=..]'
        echo -e 'postgres://\tPostgreSQL: [user@]host[:port][,host2...]/db[?schema=..&prefix=..]'
    end
end

# True while completing options of SUBCOMMAND(s), i.e. before `--`.
function __simba_in
    set -l tokens (commandline -opc)
    contains -- -- $tokens; and return 1
    for t in $tokens[2..-1]
        contains -- $t run lead schedule status release acquire renew history doctor; or continue
        contains -- $t $argv
        return
    end
    return 1
end

function __simba_after_dashdash
    contains -- -- (commandline -opc)
end

# After `--`, CMD is a command line of its own.
function __simba_complete_cmd
    set -l tokens (commandline -opc) (commandline -ct)
    set -l i (contains -i -- -- $tokens)
    complete -C (string join -- ' ' (string escape -- $tokens[(math $i + 1)..-1]))
end

set -l durations 500ms 1s 2s 5s 10s 30s 1m 5m 10m 30m 1h 1d

complete -c simba -f
complete -c simba -n __simba_after_dashdash -a '(__simba_complete_cmd)'

complete -c simba -n "not __fish_seen_subcommand_from $simba_commands" -a run -d 'Acquire the mutex, run CMD while owning it, release'
complete -c simba -n "not __fish_seen_subcommand_from $simba_commands" -a lead -d 'Contend forever; run CMD while leader'
complete -c simba -n "not __fish_seen_subcommand_from $simba_commands" -a schedule -d 'While leader, run CMD every D'
complete -c simba -n "not __fish_seen_subcommand_from $simba_commands" -a status -d 'Show who holds what, until when'
complete -c simba -n "not __fish_seen_subcommand_from $simba_commands" -a release -d 'Break a lock (admin), or end a lease of simba acquire'
complete -c simba -n "not __fish_seen_subcommand_from $simba_commands" -a acquire -d 'Take a lease that outlives simba (CI job steps)'
complete -c simba -n "not __fish_seen_subcommand_from $simba_commands" -a renew -d 'Extend a lease of simba acquire'
complete -c simba -n "not __fish_seen_subcommand_from $simba_commands" -a history -d 'Show what happened to the mutexes'
complete -c simba -n "not __fish_seen_subcommand_from $simba_commands" -a doctor -d 'Check that a backend is fit for simba'
complete -c simba -n "not __fish_seen_subcommand_from $simba_commands" -l version -d 'Show the version and the backends compiled in'
complete -c simba -s h -l help -d 'Show help'

# Every subcommand.
complete -c simba -n "__simba_in run lead schedule status release acquire history" -l mutex -x -a '(__simba_mutexes)' -d 'Name of the mutex'
complete -c simba -n "__simba_in $simba_commands" -l backend -x -a '(__simba_backends)' -d 'Backend URI'
complete -c simba -n "__simba_in run lead schedule status release acquire renew history" -s q -l quiet -d 'Print nothing but errors'
complete -c simba -n "__simba_in run lead schedule status release acquire renew history" -s v -l verbose -d 'Log every transition on stderr'

# run, lead, schedule (and acquire, renew: the lease's options).
set -l sup run lead schedule
complete -c simba -n "__simba_in $sup acquire renew doctor" -l ttl -x -a "$durations" -d 'Lease time to live (default 10s)'
complete -c simba -n "__simba_in $sup acquire doctor" -l transition -x -a "$durations" -d 'Buffer after the TTL (default 2s)'
complete -c simba -n "__simba_in $sup acquire" -l contender-id -x -d 'Label of this contender (default pid@host)'
complete -c simba -n "__simba_in $sup" -l kill-signal -x -a 'TERM INT HUP QUIT KILL USR1 USR2' -d 'Signal that stops CMD (default TERM)'
complete -c simba -n "__simba_in $sup" -l kill-after -x -a "$durations" -d 'SIGKILL this long after the kill signal'
complete -c simba -n "__simba_in $sup" -l log-format -x -a 'text json' -d 'Format of the log on stderr'

complete -c simba -n '__simba_in run acquire' -l timeout -x -a "$durations" -d 'Give up waiting after this long (exit 75)'
complete -c simba -n '__simba_in run acquire' -l no-wait -d 'Exit 75 at once if the mutex is held'
complete -c simba -n '__simba_in run' -l conflict-exit-code -x -d 'Exit code when not acquired (default 75)'
complete -c simba -n '__simba_in run' -l min-hold -x -a "$durations" -d 'Keep the lease until acquired_at + D'
complete -c simba -n '__simba_in run' -l once-per -x -a "$durations" -d 'Run CMD at most once per window of D'
complete -c simba -n '__simba_in run' -l offset -x -a "$durations" -d 'With --once-per: windows start D later'
complete -c simba -n '__simba_in run' -l retry-failed -d 'With --once-per: run again after a failed run'

complete -c simba -n '__simba_in lead' -l restart -x -a 'never\t"release and exit with its status" on-failure\t"restart unless it exited 0" always\t"restart whatever its status"' -d 'What a CMD exit does while leader'
complete -c simba -n '__simba_in lead' -l restart-delay -x -a "$durations" -d 'Wait before restarting CMD (default 1s)'
complete -c simba -n '__simba_in lead' -l max-restarts -x -d 'After N failed runs in a row, the next failure ends simba'
complete -c simba -n '__simba_in run lead acquire' -l slots -x -d 'At most N holders at once (default 1)'
complete -c simba -n '__simba_in schedule' -l slots -x -a 1 -d 'Only 1: each tick runs once, by the one leader'

complete -c simba -n '__simba_in schedule' -l every -x -a "$durations" -d 'Period of the runs'
complete -c simba -n '__simba_in schedule' -l strategy -x -a 'fixed-rate\t"ticks every D; a tick during a run is skipped" fixed-delay\t"D between the end of a run and the next start"' -d 'How runs are spaced'
complete -c simba -n '__simba_in schedule' -l initial-delay -x -a "$durations" -d 'Wait after becoming leader before the first run'
complete -c simba -n '__simba_in schedule' -l max-runs -x -d 'Release and exit after N runs'
complete -c simba -n '__simba_in schedule' -l align -d 'Ticks on multiples of --every (backend clock)'

complete -c simba -n '__simba_in status history doctor' -l json -d 'JSON for programs'
complete -c simba -n '__simba_in doctor' -l init -d 'Mark a new Redis database as new (no first quarantine)'
complete -c simba -n '__simba_in doctor' -l sql -x -a 'postgres mysql' -d 'Print the SQL of the tables and grants'
complete -c simba -n '__simba_in history' -l since -x -a "$durations" -d 'Only the events of the last D'
complete -c simba -n '__simba_in status' -l all -d 'Free mutexes too'
complete -c simba -n '__simba_in status' -l wide -d 'Fields whole on a terminal too'
complete -c simba -n '__simba_in status' -l format -x -a 'table json openmetrics prometheus' -d 'Output format'
complete -c simba -n '__simba_in release' -l force -d "Required: the owner's command is then stopped"
complete -c simba -n '__simba_in release' -l token -x -d 'Revoke only the lease with this fencing token'
complete -c simba -n '__simba_in run release renew' -l lease -x -a '(set -q SIMBA_LEASE; and echo $SIMBA_LEASE)' -d 'Handle of a lease of simba acquire ($SIMBA_LEASE)'
complete -c simba -n '__simba_in acquire' -l env-file -r -F -d 'Append the assignments to this file'
