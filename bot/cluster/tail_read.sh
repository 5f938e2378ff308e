# trainbot: read many files from their offsets in one command (bot/cluster/tail.py).
# POSIX sh + coreutils only. stdin (bot.core.tail_frames.encode_requests), two lines of sh:
#   set -- 'PATH1' "$t" 'PATH2' "$t" ...        every path, single-quoted, each followed by $t
#   nums='OFFSET BACK BUDGET SIZE MTIME INODE EXACT ...'   seven numbers per file (x: unknown)
# stdout (bot.core.tail_frames.parse_frames), in this order:
#   per file, in order: `F<k> <status> <size> <mtime> <inode> <start> <len>`, <len> bytes
#     (data, then space padding if the file shrank meanwhile), `E<k> <data bytes> <dd exit>`;
#     or, for a file whose bytes to read end at its end, `G<k> ... <len> <bucket>`: its bytes
#     come in its bucket;
#   per bucket B (a size): `B<B> <files> <bytes> <mark>`, the last B bytes of each of its
#     files (the whole file if shorter) in order, each followed by the mark (one tail, head and
#     dd for all of them), padding, `D<B> <bytes copied> <exit>`;
#   `S<sep> <len>`, then stat's answers again for the bucketed files (each followed by the
#     separator's line): a file that changed while it was read is read again exactly.
# One stat process for every file, one tail per bucket (sizes 128 B x 1.25^n: at most 25 %
# more bytes than asked), one dd per file that cannot go in a bucket (more new bytes than its
# budget, EXACT=1); unchanged files cost no process. Paths stay in "$@" and the
# numbers in one string: thousands of shell variables would make dash's variable table
# quadratic.
LC_ALL=C
export LC_ALL
set -f
t=$(mktemp) || exit 90
mk=
trap 'rm -f "$t" ${mk:+"$mk"}' EXIT
trap 'exit 91' HUP INT TERM
# A bucket's files are each followed by the mark file: its bytes (its own random name) say
# where each file's bytes end, so an answer cut inside a bucket names the file being sent and
# how many of its bytes came.
mk=$(mktemp) || exit 90
mark=${mk##*/}
printf '%s' "$mark" >"$mk" || exit 90
# The temporary file separates stat's answers: after each path comes its line, so a path
# stat cannot answer for (missing) is one whose line is the separator's.
sid=$(stat -L -c %d:%i -- "$t") || exit 90
# dd's messages are appended to it and read back through fd 5, which stays where the last
# read ended (truncating the file for each dd would cost a flush on ext4).
exec 5<"$t"
# After a dd whose messages went to "$t": c = the bytes its count line says it copied ($2
# without one); rc = 93 if that is not a number or is more than the $1 bytes announced;
# the output padded with spaces to those $1 bytes.
copied() {
  c=$2
  while IFS=' ' read -r w1 w2 rest <&5; do
    case "$w1:$w2" in [0-9]*:byte|[0-9]*:bytes) c=$w1 ;; esac
  done
  case "$c" in *[!0-9]*) c=0 rc=93 ;; esac
  if [ "$c" -gt "$1" ]; then c=0 rc=93; fi
  if [ "$c" -lt "$1" ]; then printf "%$(($1 - c))s" ''; fi
}
set --
nums=
eval "$(cat)"
[ "$#" -gt 0 ] || exit 0
sb= sb0=
if command -v stdbuf >/dev/null 2>&1; then sb='stdbuf -oL' sb0='stdbuf -o0'; fi
# Line-buffered, so a path that hangs (a dead NFS server) is the first one not answered.
$sb stat -L -c '%d:%i %s %Y' -- "$@" 2>/dev/null | {
  k=0 i=0 buckets= all=
  for v in $nums; do
    i=$((i + 1))
    case $i in
      1) o=$v; continue ;; 2) b=$v; continue ;; 3) g=$v; continue ;;
      4) s=$v; continue ;; 5) m=$v; continue ;; 6) q=$v; continue ;; *) x=$v; i=0 ;;
    esac
    k=$((k + 1))
    pos=$((2 * k - 1))
    eval "p=\${$pos}"
    IFS=' ' read -r id sz mt || exit 92
    if [ "$id" = "$sid" ]; then
      printf 'F%s missing 0 0 0 0 0\nE%s 0 0\n' "$k" "$k"
      continue
    fi
    IFS=' ' read -r sep rest || exit 92
    [ "$sep" = "$sid" ] || exit 92
    ino=${id#*:}
    whole=1
    if { [ "$q" != x ] && [ "$ino" != "$q" ]; } || [ "$sz" -lt "$o" ]; then
      st=new start=0 len=$sz
      if [ "$len" -gt "$g" ]; then len=$g whole=0; fi
    elif [ "$sz" = "$s" ] && [ "$mt" = "$m" ]; then
      printf 'F%s same %s %s %s 0 0\nE%s 0 0\n' "$k" "$sz" "$mt" "$ino" "$k"
      continue
    else
      st=read start=$((o - b)) len=$((sz - o))
      if [ "$len" -gt "$g" ]; then len=$g whole=0; fi
      len=$((len + b))
    fi
    if [ "$x" = 0 ] && [ "$whole" = 1 ] && [ "$len" -gt 0 ]; then
      kb=128
      while [ "$kb" -lt "$len" ]; do kb=$((kb * 5 / 4)); done
      share=$kb
      if [ "$sz" -lt "$kb" ]; then share=$sz; fi
      printf 'G%s %s %s %s %s %s %s %s\n' "$k" "$st" "$sz" "$mt" "$ino" "$start" "$len" "$kb"
      case " $buckets " in *" $kb "*) ;; *) buckets="$buckets $kb"; eval "n$kb=0 z$kb=0 r$kb=" ;; esac
      eval "n$kb=\$((n$kb + 1)) z$kb=\$((z$kb + share + ${#mark})) r$kb=\"\${r$kb} \\\"\\\${$pos}\\\" \\\"\\\$mk\\\"\""
      all="$all \"\${$pos}\" \"\$t\""
      continue
    fi
    printf 'F%s %s %s %s %s %s %s\n' "$k" "$st" "$sz" "$mt" "$ino" "$start" "$len"
    c=0 rc=0
    if [ "$len" -gt 0 ]; then
      # dd reads its stdin, so its messages never hold the path; its count line says how
      # many bytes it wrote (a failed redirection leaves rc != 0: the frame is then FAILED).
      dd bs=65536 iflag=skip_bytes,count_bytes skip="$start" count="$len" 2>>"$t" <"$p"
      rc=$?
      copied "$len" 0
    fi
    printf 'E%s %s %s\n' "$k" "$c" "$rc"
  done
  for kb in $buckets; do
    eval "cnt=\$n$kb total=\$z$kb refs=\$r$kb"
    printf 'B%s %s %s %s\n' "$kb" "$cnt" "$total" "$mark"
    # tail gives the last $kb bytes of each file, more of one that grows meanwhile: head
    # lets no more than the bytes announced through (the check afterwards finds that file and
    # sets it and the files after it in the bucket aside: see parse_frames), unbuffered so a
    # file that hangs is found by the bytes that came; dd counts them.
    eval "tail -q -c $kb -- $refs" 2>/dev/null | $sb0 head -c "$total" | dd bs=65536 2>>"$t"
    rc=$?
    copied "$total" x
    printf 'D%s %s %s\n' "$kb" "$c" "$rc"
  done
  if [ -n "$all" ]; then
    post=$(eval "stat -L -c '%d:%i %s %Y' -- $all" 2>/dev/null)
    printf 'S%s %s\n%s\n' "$sid" "${#post}" "$post"
  fi
}
