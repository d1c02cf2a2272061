# bash completion for phsync (installed as share/bash-completion/completions/phsync)

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
    local cur prev cmd opts
    COMPREPLY=()
    cur=${COMP_WORDS[COMP_CWORD]}
    prev=${COMP_WORDS[COMP_CWORD - 1]}
    cmd=${COMP_WORDS[1]}
    if ((COMP_CWORD == 1)); then
        COMPREPLY=($(compgen -W "pull push status pair doctor delta --help --version" -- "$cur"))
        return
    fi
    case $prev in
        -F | --key | --trash | --state-dir)
            COMPREPLY=($(compgen -f -- "$cur"))
            return ;;
        --timeout | --min-age | --modify-window | --max-delete | --exclude | --include | --authorized-keys)
            return ;;
    esac
    case $cmd in
        pull | push | status)
            opts="-F -n --dry-run -v --verbose -q --quiet --json --progress --no-progress
                  --exclude --include --no-default-excludes --no-fsync --timeout --modify-window
                  --min-age --overwrite --delete --max-delete --trash --remove-source-files
                  --state-dir --reset-state --help" ;;
        pair) opts="-F --key --authorized-keys --timeout -v --verbose --help" ;;
        doctor) opts="-F --json --timeout -v --verbose --help" ;;
        delta) opts="signature diff patch --help" ;;
    esac
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$opts" -- "$cur"))
    elif [[ $cmd == pair ]]; then
        return
    elif [[ $cur != */* && $cur != *:* && $cmd != delta ]]; then
        COMPREPLY=($(compgen -W "$(_phsync_hosts | sed 's/$/:/')" -- "$cur") $(compgen -d -- "$cur"))
        compopt -o nospace 2>/dev/null
    else
        COMPREPLY=($(compgen -f -- "$cur"))
    fi
}
complete -F _phsync phsync
