# trainbot: read many files from their offsets in one command (bot/cluster/tail.py).
# POSIX sh + coreutils only. stdin: one `r PATH OFFSET BACK BUDGET SIZE MTIME INODE` line
# of sh words per file (bot.core.tail.encode_requests). stdout: one frame per file, in order
# (bot.core.tail.parse_frames): `F<k> <status> <size> <mtime> <inode> <start> <len>`, <len>
# bytes (data, then space padding if the file shrank meanwhile), `E<k> <data bytes> <dd exit>`.
# One stat process for every file; one dd per file that changed; unchanged files cost nothing.
LC_ALL=C
export LC_ALL
n=0
args=
r() {
  n=$((n + 1))
  eval "p$n=\$1 o$n=\$2 b$n=\$3 g$n=\$4 s$n=\$5 m$n=\$6 q$n=\$7"
  args="$args \"\$p$n\" \"\$t\""
}
t=$(mktemp) || exit 90
trap 'rm -f "$t"' EXIT
trap 'exit 91' HUP INT TERM
# The temporary file separates stat's answers: after each path comes its line, so a path
# stat cannot answer for (missing) is one whose line is the separator's.
sid=$(stat -L -c %d:%i -- "$t") || exit 90
eval "$(cat)"
[ "$n" -gt 0 ] || exit 0
eval "set -- $args"
sb=
if command -v stdbuf >/dev/null 2>&1; then sb='stdbuf -oL'; fi
# Line-buffered, so a path that hangs (a dead NFS server) is the first one not answered.
$sb stat -L -c '%d:%i %s %Y' -- "$@" 2>/dev/null | {
  k=0
  while [ "$k" -lt "$n" ]; do
    k=$((k + 1))
    eval "p=\$p$k o=\$o$k b=\$b$k g=\$g$k s=\$s$k m=\$m$k q=\$q$k"
    IFS=' ' read -r id sz mt || exit 92
    if [ "$id" = "$sid" ]; then
      printf 'F%s missing 0 0 0 0 0\nE%s 0 0\n' "$k" "$k"
      continue
    fi
    IFS=' ' read -r sep rest || exit 92
    [ "$sep" = "$sid" ] || exit 92
    ino=${id#*:}
    if { [ -n "$q" ] && [ "$ino" != "$q" ]; } || [ "$sz" -lt "$o" ]; then
      st=new start=0 len=$sz
      if [ "$len" -gt "$g" ]; then len=$g; fi
    elif [ "$sz" = "$s" ] && [ "$mt" = "$m" ]; then
      printf 'F%s same %s %s %s 0 0\nE%s 0 0\n' "$k" "$sz" "$mt" "$ino" "$k"
      continue
    else
      st=read start=$((o - b)) len=$((sz - o))
      if [ "$len" -gt "$g" ]; then len=$g; fi
      len=$((len + b))
    fi
    printf 'F%s %s %s %s %s %s %s\n' "$k" "$st" "$sz" "$mt" "$ino" "$start" "$len"
    c=0 rc=0
    if [ "$len" -gt 0 ]; then
      # dd reads its stdin, so its messages never hold the path; its count line says how
      # many bytes it wrote (a failed redirection leaves rc != 0: the frame is then FAILED).
      dd bs=65536 iflag=skip_bytes,count_bytes skip="$start" count="$len" 2>"$t" <"$p"
      rc=$?
      while IFS=' ' read -r w1 w2 rest; do
        case "$w1:$w2" in [0-9]*:byte|[0-9]*:bytes) c=$w1 ;; esac
      done <"$t"
      case "$c" in *[!0-9]*) c=0 rc=93 ;; esac
      if [ "$c" -gt "$len" ]; then c=0 rc=93; fi
    fi
    if [ "$c" -lt "$len" ]; then printf "%$((len - c))s" ''; fi
    printf 'E%s %s %s\n' "$k" "$c" "$rc"
  done
}
