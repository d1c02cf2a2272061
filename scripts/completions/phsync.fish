# fish completion for phsync: every command and option of `phsync CMD --help`
# (tests/integration/test_cli.py checks it against them).

function __phsync_hosts
    test -r ~/.ssh/config; and awk 'tolower($1) == "host" { for (i = 2; i <= NF; i++) if ($i !~ /[*?!]/) print $i ":" }' ~/.ssh/config
end

set -l cmds pull push sync status daemon pair doctor backup restore verify delta serve
set -l top "not __fish_seen_subcommand_from $cmds"
complete -c phsync -f
complete -c phsync -n $top -a pull -d 'copy from the phone'
complete -c phsync -n $top -a push -d 'copy to the phone'
complete -c phsync -n $top -a sync -d 'two-way sync'
complete -c phsync -n $top -a status -d 'pairs and what a sync would do'
complete -c phsync -n $top -a daemon -d 'keep the pairs of a config in step'
complete -c phsync -n $top -a pair -d 'set up a phone'
complete -c phsync -n $top -a doctor -d 'check a pair'
complete -c phsync -n $top -a backup -d 'a folder into a tar archive'
complete -c phsync -n $top -a restore -d 'archives into a folder'
complete -c phsync -n $top -a verify -d 'check archives'
complete -c phsync -n $top -a delta -d 'delta plumbing'
complete -c phsync -n $top -a serve -d 'the helper phsync runs on the remote'
complete -c phsync -s h -l help -d help
complete -c phsync -n "$top; or __fish_seen_subcommand_from pull push sync" -s V -l version -d version

# pull and push; status with a pair takes the same options.
set -l sync "__fish_seen_subcommand_from pull push sync status"
complete -c phsync -n $sync -a '(__phsync_hosts)' -d host
complete -c phsync -n $sync -F
complete -c phsync -n "__fish_seen_subcommand_from pull push sync status pair doctor backup" -s F -r -F -d 'ssh config file'
complete -c phsync -n $sync -s n -l dry-run -d 'show what would be done'
complete -c phsync -n "__fish_seen_subcommand_from pull push sync status backup restore verify" -s v -l verbose -d 'one line per file'
complete -c phsync -n "__fish_seen_subcommand_from pull push sync status backup restore verify" -s q -l quiet -d 'print only errors'
complete -c phsync -n "__fish_seen_subcommand_from pull push sync status doctor backup restore verify" -l json -d 'JSON lines'
complete -c phsync -n "__fish_seen_subcommand_from pull push sync status backup restore verify" -l progress -d 'always show progress'
complete -c phsync -n "__fish_seen_subcommand_from pull push sync status backup restore verify" -l no-progress -d 'never show progress'
complete -c phsync -n "__fish_seen_subcommand_from pull push sync status backup" -l exclude -x -d 'skip paths matching'
complete -c phsync -n "__fish_seen_subcommand_from pull push sync status backup" -l include -x -d 'keep paths matching'
complete -c phsync -n "__fish_seen_subcommand_from pull push sync status backup" -l no-default-excludes -d 'also copy gallery leftovers'
complete -c phsync -n "__fish_seen_subcommand_from pull push sync status backup restore" -l no-fsync -d 'no fsync before rename'
complete -c phsync -n "__fish_seen_subcommand_from pull push sync status pair doctor backup" -l timeout -x -d 'seconds of silence'
complete -c phsync -n $sync -l modify-window -x -d 'seconds'
complete -c phsync -n $sync -l min-age -x -d 'seconds'
complete -c phsync -n $sync -l overwrite -d 'the source wins'
complete -c phsync -n $sync -l delete -d 'delete what the source deleted'
complete -c phsync -n $sync -l max-delete -x -d 'count'
complete -c phsync -n $sync -l trash -r -F -d 'move deleted files there'
complete -c phsync -n $sync -l remove-source-files -d 'pull only: free the phone'
complete -c phsync -n "__fish_seen_subcommand_from pull push sync status backup" -l state-dir -r -F -d 'sync state folder'
complete -c phsync -n $sync -l reset-state -d "forget the pair's state"
complete -c phsync -n $sync -l helper -x -a 'auto never always' -d 'use a phsync helper on the remote'
complete -c phsync -n $sync -l helper-path -x -d 'the phsync program on the remote'
complete -c phsync -n $sync -l watch -d 'keep syncing as the source changes'
complete -c phsync -n $sync -l interval -x -d 'with --watch: poll every SEC'
complete -c phsync -n "__fish_seen_subcommand_from sync" -l prefer -x -a 'local remote newer' -d 'who wins a conflict'
complete -c phsync -n "__fish_seen_subcommand_from sync" -l max-delete-percent -x -d 'percent'

complete -c phsync -n "__fish_seen_subcommand_from daemon" -s c -l config -r -F -d 'config file'
complete -c phsync -n "__fish_seen_subcommand_from daemon" -s v -l verbose -d 'also changes and retries'
complete -c phsync -n "__fish_seen_subcommand_from daemon" -s q -l quiet -d 'only problems'

complete -c phsync -n "__fish_seen_subcommand_from pair doctor" -s v -l verbose -d 'libssh debug'
complete -c phsync -n "__fish_seen_subcommand_from pair" -l key -r -F -d 'private key'
complete -c phsync -n "__fish_seen_subcommand_from pair" -l authorized-keys -x -d 'path on the phone'
complete -c phsync -n "__fish_seen_subcommand_from doctor" -a '(__phsync_hosts)' -d host

complete -c phsync -n "__fish_seen_subcommand_from backup" -l incremental -d 'only what changed'
complete -c phsync -n "__fish_seen_subcommand_from backup" -l full -d 'every file'
complete -c phsync -n "__fish_seen_subcommand_from backup" -l keep -x -d 'chains to keep'
complete -c phsync -n "__fish_seen_subcommand_from backup" -a '(__phsync_hosts)' -d host
complete -c phsync -n "__fish_seen_subcommand_from backup restore verify" -F

complete -c phsync -n "__fish_seen_subcommand_from delta; and not __fish_seen_subcommand_from signature diff patch" -a 'signature diff patch'
complete -c phsync -n "__fish_seen_subcommand_from delta" -s b -x -d 'block length'
complete -c phsync -n "__fish_seen_subcommand_from delta" -F
