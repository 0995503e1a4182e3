#!/usr/bin/env bash
# allreduce_bench across the emulated cluster of scripts/cluster: 4 nodes x 2
# host-backend ranks over TCP, with one fault at a time. Each case checks
# that the output names the faulty node (or, for a link, both its ends) and
# no other, and that a healthy cluster names nothing.
#
#   tests/cluster_test.sh CASE ALLREDUCE_BENCH
#
# Exit: 0 passed, 1 failed, 77 where the cluster cannot be made (no root, no
# namespaces) or a fault cannot be emulated here (no netem for delay).
set -uo pipefail
case_name=${1:?case}
bench=${2:?allreduce_bench}
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/redline-cluster-test.XXXXXX")
trap 'rm -rf "$work"' EXIT

fail() { echo "FAIL ($case_name): $1" >&2; echo "--- output:" >&2; cat "$work/out" >&2; exit 1; }
expect() { grep -qF -- "$1" "$work/out" || fail "expected: $1"; }
refuse() { if grep -qF -- "$1" "$work/out"; then fail "not expected: $1"; fi; }

# Small enough to run in seconds on 2 cores; the faults are 10-100x, the
# noise of 8 ranks sharing 2 CPUs up to 3x either way, so a group counts as
# slow only below half its reference.
sizes=(-b 64K -e 1M -f 4 -n 5 -w 2)
# Runs the bench on 8 ranks of the cluster with the given faults (--fault ...)
# and bench flags; the exit status is the bench's, or the cluster's 77.
on_cluster() {
  local faults=()
  while [ "${1:-}" = --fault ]; do faults+=("$1" "$2"); shift 2; done
  timeout 300 "$here/scripts/cluster" --nodes 4 --ranks-per-node 2 ${faults[@]+"${faults[@]}"} -- \
    mpirun -np 8 --mca mpi_yield_when_idle 1 "$bench" --backend host "$@" >"$work/out" 2>&1
}
skip_if_cannot_run() {
  if [ "$1" -eq 77 ]; then grep "cannot run here" "$work/out" >&2; exit 77; fi
}
# The diagnosis of one fault: exit 1, one NAMED line, naming `what`. Each
# operation has 60 s, or op_timeout.
diagnosed() {
  local what=$1; shift
  on_cluster "$@" "${sizes[@]}" --timeout "${op_timeout:-60}" --split auto --outlier 50
  local status=$?
  skip_if_cannot_run "$status"
  [ "$status" -eq 1 ] || fail "exit status $status, not 1 (a finding)"
  [ "$(grep -c '^# NAMED: ' "$work/out")" -eq 1 ] || fail "not exactly one NAMED line"
  expect "# NAMED: $what"
  grep '^# NAMED: ' "$work/out" | sed 's/ Evidence:.*//' | grep -qE "n[1-4]" || fail "no node named"
  for node in n1 n2 n3 n4; do
    case "$what" in *"$node"*) continue ;; esac
    if grep '^# NAMED: ' "$work/out" | sed 's/ Evidence:.*//' | grep -qw "$node"; then fail "$node named too"; fi
  done
}

case "$case_name" in
  launch)
    on_cluster "${sizes[@]}" --timeout 60
    status=$?
    skip_if_cannot_run "$status"
    [ "$status" -eq 0 ] || fail "exit status $status"
    expect "# hosts: n1: ranks 0-1; n2: ranks 2-3; n3: ranks 4-5; n4: ranks 6-7"
    expect "# Out of bounds values : 0 OK"
    ;;
  healthy)  # three runs in a row name nothing
    for run in 1 2 3; do
      on_cluster "${sizes[@]}" --timeout 60 --split auto --outlier 50
      status=$?
      skip_if_cannot_run "$status"
      [ "$status" -eq 0 ] || fail "run $run: exit status $status"
      refuse "# NAMED"
      expect "# --split auto: nothing named after"
    done
    ;;
  # A node fault must name its node; whether inside or over the network rests
  # on one more comparison of groups alone, which a loaded machine can tip
  # (docs/validation.md gives how each fault was classed).
  slow-nic) diagnosed "node n3, " --fault slow-nic:n3:40mbit ;;
  slow-link) diagnosed "the link between n3 and n4" --fault slow-link:n3:n4:40mbit ;;
  delay) diagnosed "node n3, " --fault delay:n3:5 ;;
  # 10% each way: 5% escaped the rounds alone (the best of five tries) in 3 of
  # 3 runs. A retransmission or its ack is lost too about one time in five, and
  # TCP doubles its wait each time, so a run of such losses can stall one
  # operation past 60 s, as one did in CI (2026-12-03): this case allows 180 s.
  loss) op_timeout=180 diagnosed "node n3, " --fault loss:n3:10 ;;
  straggler) diagnosed "node n3, " --fault straggler:n3:10 ;;
  cut)  # n4's link cut mid-run: its two ranks named unreachable, what was measured saved
    # The cut comes 8 s in. The first size (1K) is measured within a moment of
    # start-up, even a slow one on a loaded machine; the 16 sizes up to 2M,
    # each a few seconds, keep a quiet machine's run going well past the cut.
    on_cluster --fault cut:n4:8 -b 1K -e 2M -i 128K -n 200 -w 2 --timeout 10 --csv "$work/cut.csv"
    status=$?
    skip_if_cannot_run "$status"
    [ "$status" -ne 0 ] || fail "a cut link ended the run with exit 0"
    expect "allreduce_bench: rank 0: ranks 6 (n4), 7 (n4) unreachable during "
    expect "the side channel's connection timed out"
    refuse "died or lost its connection"
    for rank in "1 (n1)" "2 (n2)" "3 (n2)" "4 (n3)" "5 (n3)"; do refuse "$rank unreachable"; done
    grep -q ',error,"ranks 6 (n4), 7 (n4) unreachable' "$work/cut.csv" || fail "no error row in the CSV"
    grep -q ',ok,' "$work/cut.csv" || fail "the sizes measured before the cut were not saved"
    ;;
  rank0-unreachable)  # ranks that cannot reach rank 0 end the run, not rank 0's 120 s wait
    start=$(date +%s)
    REDLINE_WATCHDOG_ADDR=no-such-node.invalid on_cluster "${sizes[@]}" --timeout 30
    status=$?
    elapsed=$(($(date +%s) - start))
    skip_if_cannot_run "$status"
    [ "$status" -ne 0 ] || fail "exit 0"
    expect "error: watchdog: cannot connect to rank 0 at no-such-node.invalid"
    echo "the run ended ${elapsed} s after it started"
    # Bounded by rank 0's registration wait, not tuned to a speed.
    [ "$elapsed" -lt 100 ] || fail "the run ended only after ${elapsed} s: rank 0 waited for its limit"
    ;;
  *) echo "unknown case $case_name" >&2; exit 2 ;;
esac
echo "PASS ($case_name)"
