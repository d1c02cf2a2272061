# fish completion for phsync

function __phsync_hosts
    test -r ~/.ssh/config; and awk 'tolower($1) == "host" { for (i = 2; i <= NF; i++) if ($i !~ /[*?!]/) print $i ":" }' ~/.ssh/config
end

set -l cmds pull push status pair doctor delta
complete -c phsync -f
complete -c phsync -n "not __fish_seen_subcommand_from $cmds" -a pull -d 'copy from the phone'
complete -c phsync -n "not __fish_seen_subcommand_from $cmds" -a push -d 'copy to the phone'
complete -c phsync -n "not __fish_seen_subcommand_from $cmds" -a status -d 'pairs and what a sync would do'
complete -c phsync -n "not __fish_seen_subcommand_from $cmds" -a pair -d 'set up a phone'
complete -c phsync -n "not __fish_seen_subcommand_from $cmds" -a doctor -d 'check a pair'
complete -c phsync -n "not __fish_seen_subcommand_from $cmds" -a delta -d 'delta plumbing'
complete -c phsync -s h -l help -d help
complete -c phsync -s V -l version -n "not __fish_seen_subcommand_from $cmds" -d version

set -l sync "__fish_seen_subcommand_from pull push status"
complete -c phsync -n $sync -a '(__phsync_hosts)' -d host
complete -c phsync -n $sync -F
complete -c phsync -n "__fish_seen_subcommand_from pull push status pair doctor" -s F -r -F -d 'ssh config file'
complete -c phsync -n $sync -s n -l dry-run -d 'show what would be done'
complete -c phsync -n $sync -s v -l verbose -d 'one line per file'
complete -c phsync -n $sync -s q -l quiet -d 'print only errors'
complete -c phsync -n "__fish_seen_subcommand_from pull push status doctor" -l json -d 'JSON lines'
complete -c phsync -n $sync -l progress -d 'always show progress'
complete -c phsync -n $sync -l no-progress -d 'never show progress'
complete -c phsync -n $sync -l exclude -x -d 'skip paths matching'
complete -c phsync -n $sync -l include -x -d 'keep paths matching'
complete -c phsync -n $sync -l no-default-excludes -d 'also copy gallery leftovers'
complete -c phsync -n $sync -l no-fsync -d 'no fsync before rename'
complete -c phsync -n "__fish_seen_subcommand_from pull push status pair doctor" -l timeout -x -d 'seconds of silence'
complete -c phsync -n $sync -l modify-window -x -d 'seconds'
complete -c phsync -n $sync -l min-age -x -d 'seconds'
complete -c phsync -n $sync -l overwrite -d 'the source wins'
complete -c phsync -n $sync -l delete -d 'delete what the source deleted'
complete -c phsync -n $sync -l max-delete -x -d 'count'
complete -c phsync -n $sync -l trash -r -F -d 'move deleted files there'
complete -c phsync -n $sync -l remove-source-files -d 'pull only: free the phone'
complete -c phsync -n $sync -l state-dir -r -F -d 'sync state folder'
complete -c phsync -n $sync -l reset-state -d "forget the pair's state"
complete -c phsync -n "__fish_seen_subcommand_from pair" -l key -r -F -d 'private key'
complete -c phsync -n "__fish_seen_subcommand_from pair" -l authorized-keys -x -d 'path on the phone'
complete -c phsync -n "__fish_seen_subcommand_from doctor" -a '(__phsync_hosts)' -d host
complete -c phsync -n "__fish_seen_subcommand_from delta" -a 'signature diff patch'
