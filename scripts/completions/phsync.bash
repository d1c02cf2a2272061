# bash completion for phsync (installed as share/bash-completion/completions/phsync)
# Every command and option of `phsync CMD --help`; tests/integration/test_cli.py checks
# that this file, _phsync and phsync.fish offer exactly those.

# Host names from the ssh config (Host lines without patterns).
_phsync_hosts()
{
    local f cfg=~/.ssh/config
    for ((f = 1; f < ${#COMP_WORDS[@]} - 1; f++)); do
        [[ ${COMP_WORDS[f]} == -F ]] && cfg=${COMP_WORDS[f + 1]}
    done
    [[ -r $cfg ]] && awk 'tolower($1) == "host" { for (i = 2; i <= NF; i++) if ($i !~ /[*?!]/) print $i }' "$cfg" 2>/dev/null
}

_phsync()
{
    local cur prev cmd opts sync_opts
    COMPREPLY=()
    cur=${COMP_WORDS[COMP_CWORD]}
    prev=${COMP_WORDS[COMP_CWORD - 1]}
    cmd=${COMP_WORDS[1]}
    if ((COMP_CWORD == 1)); then
        COMPREPLY=($(compgen -W "pull push sync status daemon pair doctor backup restore verify
                                 delta serve -h --help -V --version" -- "$cur"))
        return
    fi
    case $prev in
        -F | --key | --trash | --state-dir | -c | --config)
            COMPREPLY=($(compgen -f -- "$cur"))
            return ;;
        --helper)
            COMPREPLY=($(compgen -W "auto never always" -- "$cur"))
            return ;;
        --prefer)
            COMPREPLY=($(compgen -W "local remote newer" -- "$cur"))
            return ;;
        --timeout | --min-age | --modify-window | --max-delete | --exclude | --include | \
        --authorized-keys | --interval | --keep | --helper-path | -b | --max-delete-percent)
            return ;;
    esac
    sync_opts="-F -n --dry-run -v --verbose -q --quiet --json --progress --no-progress
               --exclude --include --no-default-excludes --no-fsync --timeout --modify-window
               --min-age --overwrite --delete --max-delete --trash --remove-source-files
               --state-dir --reset-state --helper --helper-path --watch --interval
               -h --help -V --version"
    case $cmd in
        pull | push) opts=$sync_opts ;;
        sync) opts="$sync_opts --prefer --max-delete-percent" ;;
        status) opts="--json --state-dir -h --help" ;;
        daemon) opts="-c --config -v --verbose -q --quiet -h --help" ;;
        pair) opts="-F --key --authorized-keys --timeout -v --verbose -h --help" ;;
        doctor) opts="-F --json --timeout -v --verbose -h --help" ;;
        backup) opts="--incremental --full --keep -F -v --verbose -q --quiet --json --progress
                      --no-progress --exclude --include --no-default-excludes --no-fsync
                      --timeout --state-dir -h --help" ;;
        restore) opts="-v --verbose -q --quiet --json --progress --no-progress --no-fsync -h --help" ;;
        verify) opts="-v --verbose -q --quiet --json --progress --no-progress -h --help" ;;
        delta) opts="-b -h --help" ;;
        serve) opts="-h --help" ;;
    esac
    if [[ $cur == -* ]]; then
        # status with a pair takes pull's and push's options too.
        [[ $cmd == status ]] && opts="$opts $sync_opts"
        COMPREPLY=($(compgen -W "$opts" -- "$cur"))
        [[ $cmd == status ]] && COMPREPLY=($(printf '%s\n' "${COMPREPLY[@]}" | sort -u))
    elif [[ $cmd == pair || $cmd == daemon || $cmd == serve ]]; then
        return
    elif [[ $cmd == delta ]] && ((COMP_CWORD == 2)); then
        COMPREPLY=($(compgen -W "signature diff patch" -- "$cur"))
    elif [[ $cur != */* && $cur != *:* && $cmd != delta && $cmd != restore && $cmd != verify ]]; then
        COMPREPLY=($(compgen -W "$(_phsync_hosts | sed 's/$/:/')" -- "$cur") $(compgen -d -- "$cur"))
        compopt -o nospace 2>/dev/null
    else
        COMPREPLY=($(compgen -f -- "$cur"))
    fi
}
complete -F _phsync phsync
