"""Scripts a review ran under real bash to their end that a read of the launcher lint failed
(each run with real bash here, as test_launcher_lint_runs_to_the_end does): a trap judged at a
`kill` after a here-document, a `kill` the script shadows with a function, a trap on a signal
given by a number, a function called through a name the script builds after a prefix
(`OMP_NUM_THREADS="8" "$STAGE"`, `>>log "$STAGE"`, `se"tup"`), and an `ERR` trap set after
`then` under a `set -e` nothing turns off."""

from __future__ import annotations

import pytest
from support.bash_end import runs_to_the_end

REVIEWED = [
    pytest.param("""\
set -e
n=0
trap "[ -f nofile ] && ((n++))" USR1
kill -USR1 $$
echo done
""", id="review-handler-inline-and"),
    pytest.param("""\
set -e
n=0
f() { ((n++)); }
trap f USR1
kill() { echo "dry-run kill $*"; }
kill -USR1 $$
echo done
""", id="review-kill-function-named-kill"),
    pytest.param("""\
set -e
cat > cfg <<EOF
abcdefghijk
EOF
n=0
f() { echo handled; }
trap f USR1
n=5
kill -USR1 $$
((n++))
echo done
""", id="review-hd-eats-assignment"),
    pytest.param("""\
#SBATCH --job-name=llm
#SBATCH --nodes=1
set -euo pipefail
cat > "hostfile" <<EOF
localhost slots=8
EOF
step=0
on_usr1() {
  echo "checkpoint requested at step $step"
}
trap on_usr1 USR1
step=100
kill -USR1 $$
((step++))
echo "resuming from $step"
echo done
""", id="review-hd-realistic-hostfile"),
    pytest.param("""\
set -e
n=0
f() { [ -f nofile ] && ((n++)); echo x; }
trap f USR1
kill -USR1 $$
echo done
""", id="review-fn-and-mid"),
    pytest.param("""\
#SBATCH --job-name=ft
set -euo pipefail
GPUS=0,1
STAGE="${STAGE:-set}up"
step=0
setup() { step=$(cat last_step 2>/dev/null || echo 1000); echo "resuming at $step"; }
train() {
  ((step++))
  echo "training from $step"
}
OMP_NUM_THREADS="8" "$STAGE"
train
echo done
""", id="review-e01nb-form1"),
    pytest.param("""\
#SBATCH --job-name=ft
set -euo pipefail
GPUS=0,1
STAGE="${STAGE:-set}up"
step=0
setup() { step=$(cat last_step 2>/dev/null || echo 1000); echo "resuming at $step"; }
train() {
  ((step++))
  echo "training from $step"
}
CUDA_VISIBLE_DEVICES=$GPUS "$STAGE"
train
echo done
""", id="review-e01nb-form2"),
    pytest.param("""\
#SBATCH --job-name=ft
set -euo pipefail
GPUS=0,1
STAGE="${STAGE:-set}up"
step=0
setup() { step=$(cat last_step 2>/dev/null || echo 1000); echo "resuming at $step"; }
train() {
  ((step++))
  echo "training from $step"
}
time -p "$STAGE"
train
echo done
""", id="review-e01nb-form3"),
    pytest.param("""\
#SBATCH --job-name=ft
set -euo pipefail
GPUS=0,1
STAGE="${STAGE:-set}up"
step=0
setup() { step=$(cat last_step 2>/dev/null || echo 1000); echo "resuming at $step"; }
train() {
  ((step++))
  echo "training from $step"
}
>>stage.log "$STAGE"
train
echo done
""", id="review-e01nb-form4"),
    pytest.param("""\
#SBATCH --job-name=ft
set -euo pipefail
GPUS=0,1
STAGE="${STAGE:-set}up"
step=0
setup() { step=$(cat last_step 2>/dev/null || echo 1000); echo "resuming at $step"; }
train() {
  ((step++))
  echo "training from $step"
}
se"tup"
train
echo done
""", id="review-e01nb-form5"),
    pytest.param("""\
#SBATCH --job-name=ft
set -euo pipefail
GPUS=0,1
STAGE="${STAGE:-set}up"
step=0
setup() { step=$(cat last_step 2>/dev/null || echo 1000); echo "resuming at $step"; }
train() {
  ((step++))
  echo "training from $step"
}
set{up,}
train
echo done
""", id="review-e01nb-form6"),
    pytest.param("""\
#SBATCH --job-name=ft
set -euo pipefail
GPUS=0,1
STAGE="${STAGE:-set}up"
step=0
setup() { step=$(cat last_step 2>/dev/null || echo 1000); echo "resuming at $step"; }
train() {
  ((step++))
  echo "training from $step"
}
if OMP="1" "$STAGE"; then :; fi
train
echo done
""", id="review-e01nb-form7"),
    pytest.param("""\
#SBATCH --job-name=x
set -e
cat > hostfile <<EOF
node001 slots=8
node002 slots=8
EOF
n=${n:-1}
step=${step:-1}
n=0
h() { set +e; ((n++)); set -e; }
trap h USR1
n=$((n+0))
kill -USR1 $$
((n++))
((step++))
echo done
""", id="review-e-hd-plus-e-k1-cnt"),
    pytest.param("""\
#SBATCH --job-name=x
set -e
cat > hostfile <<EOF
node001 slots=8
node002 slots=8
EOF
n=${n:-1}
step=${step:-1}
n=0
h() { set +e; ((n++)); set -e; }
trap h USR1
n=$((n+0))
kill -s USR1 "$$"
((n++))
((step++))
echo done
""", id="review-e-hd-plus-e-k2-cnt"),
    pytest.param("""\
#SBATCH --job-name=x
set -e
cat > hostfile <<EOF
node001 slots=8
node002 slots=8
EOF
n=${n:-1}
step=${step:-1}
n=0
h() { set +e; ((n++)); set -e; }
trap h USR1
n=$((n+0))
kill -SIGUSR1 $$
((n++))
((step++))
echo done
""", id="review-e-hd-plus-e-k3-cnt"),
    pytest.param("""\
#SBATCH --job-name=x
set -e
cat > hostfile <<EOF
node001 slots=8
node002 slots=8
EOF
n=${n:-1}
step=${step:-1}
n=0
h() { set +e; ((n++)); set -e; }
trap h USR1
n=$((n+0))
kill -10 $$
((n++))
((step++))
echo done
""", id="review-e-hd-plus-e-k4-cnt"),
    pytest.param("""\
#SBATCH --job-name=x
set -e
cat > hostfile <<EOF
node001 slots=8
node002 slots=8
EOF
n=${n:-1}
step=${step:-1}
n=0
h() { set +e; ((n++)); set -e; }
trap h USR1
n=$((n+0))
kill -n 10 ${$}
((n++))
((step++))
echo done
""", id="review-e-hd-plus-e-k5-cnt"),
    pytest.param("""\
#SBATCH --job-name=x
set -euo pipefail
cat > hostfile <<EOF
node001 slots=8
node002 slots=8
EOF
n=${n:-1}
step=${step:-1}
n=0
h() { set +e; ((n++)); set -e; }
trap h USR1
n=$((n+0))
kill -USR1 $$
((n++))
((step++))
echo done
""", id="review-euo-hd-plus-e-k1-cnt"),
    pytest.param("""\
#SBATCH --job-name=x
set -euo pipefail
cat > hostfile <<EOF
node001 slots=8
node002 slots=8
EOF
n=${n:-1}
step=${step:-1}
n=0
h() { set +e; ((n++)); set -e; }
trap h USR1
n=$((n+0))
kill -s USR1 "$$"
((n++))
((step++))
echo done
""", id="review-euo-hd-plus-e-k2-cnt"),
    pytest.param("""\
#SBATCH --job-name=x
set -euo pipefail
cat > hostfile <<EOF
node001 slots=8
node002 slots=8
EOF
n=${n:-1}
step=${step:-1}
n=0
h() { set +e; ((n++)); set -e; }
trap h USR1
n=$((n+0))
kill -SIGUSR1 $$
((n++))
((step++))
echo done
""", id="review-euo-hd-plus-e-k3-cnt"),
    pytest.param("""\
#SBATCH --job-name=x
set -euo pipefail
cat > hostfile <<EOF
node001 slots=8
node002 slots=8
EOF
n=${n:-1}
step=${step:-1}
n=0
h() { set +e; ((n++)); set -e; }
trap h USR1
n=$((n+0))
kill -10 $$
((n++))
((step++))
echo done
""", id="review-euo-hd-plus-e-k4-cnt"),
    pytest.param("""\
#SBATCH --job-name=x
set -euo pipefail
cat > hostfile <<EOF
node001 slots=8
node002 slots=8
EOF
n=${n:-1}
step=${step:-1}
n=0
h() { set +e; ((n++)); set -e; }
trap h USR1
n=$((n+0))
kill -n 10 ${$}
((n++))
((step++))
echo done
""", id="review-euo-hd-plus-e-k5-cnt"),
    pytest.param("""\
#SBATCH --job-name=x
set -o errexit
cat > hostfile <<EOF
node001 slots=8
node002 slots=8
EOF
n=${n:-1}
step=${step:-1}
n=0
h() { set +e; ((n++)); set -e; }
trap h USR1
n=$((n+0))
kill -USR1 $$
((n++))
((step++))
echo done
""", id="review-o-hd-plus-e-k1-cnt"),
    pytest.param("""\
#SBATCH --job-name=x
set -o errexit
cat > hostfile <<EOF
node001 slots=8
node002 slots=8
EOF
n=${n:-1}
step=${step:-1}
n=0
h() { set +e; ((n++)); set -e; }
trap h USR1
n=$((n+0))
kill -s USR1 "$$"
((n++))
((step++))
echo done
""", id="review-o-hd-plus-e-k2-cnt"),
    pytest.param("""\
#SBATCH --job-name=x
set -o errexit
cat > hostfile <<EOF
node001 slots=8
node002 slots=8
EOF
n=${n:-1}
step=${step:-1}
n=0
h() { set +e; ((n++)); set -e; }
trap h USR1
n=$((n+0))
kill -SIGUSR1 $$
((n++))
((step++))
echo done
""", id="review-o-hd-plus-e-k3-cnt"),
    pytest.param("""\
#SBATCH --job-name=x
set -o errexit
cat > hostfile <<EOF
node001 slots=8
node002 slots=8
EOF
n=${n:-1}
step=${step:-1}
n=0
h() { set +e; ((n++)); set -e; }
trap h USR1
n=$((n+0))
kill -10 $$
((n++))
((step++))
echo done
""", id="review-o-hd-plus-e-k4-cnt"),
    pytest.param("""\
#SBATCH --job-name=x
set -o errexit
cat > hostfile <<EOF
node001 slots=8
node002 slots=8
EOF
n=${n:-1}
step=${step:-1}
n=0
h() { set +e; ((n++)); set -e; }
trap h USR1
n=$((n+0))
kill -n 10 ${$}
((n++))
((step++))
echo done
""", id="review-o-hd-plus-e-k5-cnt"),
    pytest.param("""\
#SBATCH --job-name=dry
set -euo pipefail
n=0
kill() { echo "[dry-run] kill $*"; }
on_term() { ((n++)); echo "would checkpoint"; }
trap on_term TERM
kill -TERM $$
echo done
""", id="review-r-kill-shadow-dryrun"),
    pytest.param("""\
set -e
n=0
h() { ((n++)); }
trap h XCPU
trap "" 24
kill -XCPU $$
echo done
""", id="review-num-unmapped-ignore"),
    pytest.param("""\
set -euo pipefail
T=8
STAGE="${STAGE:-resume}_from_ckpt"
step=0
resume_from_ckpt() { step=1000; echo resumed; }
train() {
  if [ -n "${WARMUP:-}" ]; then step=3; fi
  ((step++))
  echo "training from $step"
}
OMP_NUM_THREADS="8" "$STAGE"
train
echo done
""", id="review-e01-form1"),
    pytest.param("""\
set -euo pipefail
T=8
STAGE="${STAGE:-resume}_from_ckpt"
step=0
resume_from_ckpt() { step=1000; echo resumed; }
train() {
  if [ -n "${WARMUP:-}" ]; then step=3; fi
  ((step++))
  echo "training from $step"
}
OMP_NUM_THREADS=$T "$STAGE"
train
echo done
""", id="review-e01-form2"),
    pytest.param("""\
set -euo pipefail
T=8
STAGE="${STAGE:-resume}_from_ckpt"
step=0
resume_from_ckpt() { step=1000; echo resumed; }
train() {
  if [ -n "${WARMUP:-}" ]; then step=3; fi
  ((step++))
  echo "training from $step"
}
OMP_NUM_THREADS=${T:-8} $STAGE
train
echo done
""", id="review-e01-form3"),
    pytest.param("""\
set -euo pipefail
T=8
STAGE="${STAGE:-resume}_from_ckpt"
step=0
resume_from_ckpt() { step=1000; echo resumed; }
train() {
  if [ -n "${WARMUP:-}" ]; then step=3; fi
  ((step++))
  echo "training from $step"
}
time -p "$STAGE"
train
echo done
""", id="review-e01-form4"),
    pytest.param("""\
set -euo pipefail
T=8
STAGE="${STAGE:-resume}_from_ckpt"
step=0
resume_from_ckpt() { step=1000; echo resumed; }
train() {
  if [ -n "${WARMUP:-}" ]; then step=3; fi
  ((step++))
  echo "training from $step"
}
>>stage.log "$STAGE"
train
echo done
""", id="review-e01-form5"),
    pytest.param("""\
set -euo pipefail
T=8
STAGE="${STAGE:-resume}_from_ckpt"
step=0
resume_from_ckpt() { step=1000; echo resumed; }
train() {
  if [ -n "${WARMUP:-}" ]; then step=3; fi
  ((step++))
  echo "training from $step"
}
2>&1 "$STAGE"
train
echo done
""", id="review-e01-form6"),
    pytest.param("""\
set -euo pipefail
T=8
STAGE="${STAGE:-resume}_from_ckpt"
step=0
resume_from_ckpt() { step=1000; echo resumed; }
train() {
  if [ -n "${WARMUP:-}" ]; then step=3; fi
  ((step++))
  echo "training from $step"
}
X='a' $STAGE
train
echo done
""", id="review-e01-form7"),
    pytest.param("""\
set -euo pipefail
T=8
STAGE="${STAGE:-resume}_from_ckpt"
step=0
resume_from_ckpt() { step=1000; echo resumed; }
train() {
  if [ -n "${WARMUP:-}" ]; then step=3; fi
  ((step++))
  echo "training from $step"
}
if OMP="1" "$STAGE"; then :; fi
train
echo done
""", id="review-e01-form9"),
    pytest.param("""\
set -euo pipefail
step=0
setup() { step=1000; echo "resumed $1"; }
train() {
  if [ -n "${WARMUP:-}" ]; then step=3; fi
  ((step++))
  echo "training from $step"
}
set{up,}
train
echo done
""", id="review-e01-brace"),
    pytest.param("""\
set -euo pipefail
step=0
setup() { step=1000; echo resumed; }
train() {
  if [ -n "${WARMUP:-}" ]; then step=3; fi
  ((step++))
  echo "training from $step"
}
se"tup"
train
echo done
""", id="review-e01-sefrom"),
    pytest.param("""\
set -euo pipefail
tries=1
on_err() { tries=0; }
if [[ -n "${SLURM_JOB_ID:-1}" ]]; then trap on_err ERR; fi
if ! grep -q x /dev/null; then echo "no x"; fi
((tries++))
echo done
""", id="review-err-then-sete-only"),
    pytest.param("""\
set -e
failures=1
on_err() { failures=0; }
if true; then trap on_err ERR; fi
((failures++))
echo done
""", id="review-r-err-then-safe"),
]


@pytest.mark.parametrize("body", REVIEWED)
def test_a_reviewed_script_bash_runs_to_its_end_is_not_failed(tmp_path, body):
    runs_to_the_end(tmp_path, body)
