# trainbot: read many files from their offsets in one command (bot/cluster/tail.py).
# POSIX sh + coreutils only. stdin (bot.core.tail.encode_requests), two lines of sh:
#   set -- 'PATH1' "$t" 'PATH2' "$t" ...        every path, single-quoted, each followed by $t
#   nums='OFFSET BACK BUDGET SIZE MTIME INODE ...'   six numbers per file (x: unknown)
# stdout: one frame per file, in order (bot.core.tail.parse_frames):
#   `F<k> <status> <size> <mtime> <inode> <start> <len>`, <len> bytes (data, then space
#   padding if the file shrank meanwhile), `E<k> <data bytes> <dd exit>`.
# One stat process for every file; one dd per file that changed; unchanged files cost no
# process. Paths live in "$@" and numbers in one string: thousands of shell variables would
# make dash's small variable table quadratic.
LC_ALL=C
export LC_ALL
set -f
t=$(mktemp) || exit 90
trap 'rm -f "$t"' EXIT
trap 'exit 91' HUP INT TERM
# The temporary file separates stat's answers: after each path comes its line, so a path
# stat cannot answer for (missing) is one whose line is the separator's.
sid=$(stat -L -c %d:%i -- "$t") || exit 90
# dd's messages are appended to it and read back through fd 5, which stays where the last
# read ended (truncating the file for each dd would cost a flush on ext4).
exec 5<"$t"
set --
nums=
eval "$(cat)"
[ "$#" -gt 0 ] || exit 0
sb=
if command -v stdbuf >/dev/null 2>&1; then sb='stdbuf -oL'; fi
# Line-buffered, so a path that hangs (a dead NFS server) is the first one not answered.
$sb stat -L -c '%d:%i %s %Y' -- "$@" 2>/dev/null | {
  k=0 i=0
  for v in $nums; do
    i=$((i + 1))
    case $i in
      1) o=$v; continue ;; 2) b=$v; continue ;; 3) g=$v; continue ;;
      4) s=$v; continue ;; 5) m=$v; continue ;; *) q=$v; i=0 ;;
    esac
    k=$((k + 1))
    p=$1
    shift 2
    IFS=' ' read -r id sz mt || exit 92
    if [ "$id" = "$sid" ]; then
      printf 'F%s missing 0 0 0 0 0\nE%s 0 0\n' "$k" "$k"
      continue
    fi
    IFS=' ' read -r sep rest || exit 92
    [ "$sep" = "$sid" ] || exit 92
    ino=${id#*:}
    if { [ "$q" != x ] && [ "$ino" != "$q" ]; } || [ "$sz" -lt "$o" ]; then
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
      dd bs=65536 iflag=skip_bytes,count_bytes skip="$start" count="$len" 2>>"$t" <"$p"
      rc=$?
      while IFS=' ' read -r w1 w2 rest <&5; do
        case "$w1:$w2" in [0-9]*:byte|[0-9]*:bytes) c=$w1 ;; esac
      done
      case "$c" in *[!0-9]*) c=0 rc=93 ;; esac
      if [ "$c" -gt "$len" ]; then c=0 rc=93; fi
    fi
    if [ "$c" -lt "$len" ]; then printf "%$((len - c))s" ''; fi
    printf 'E%s %s %s\n' "$k" "$c" "$rc"
  done
}
