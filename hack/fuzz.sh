#!/usr/bin/env bash
# Runs every fuzz target of the project, one after the other, for FUZZTIME each, and
# prints one summary line per target. The list below is the one place targets are
# named: TestFuzzTargetsListed (test/webhooktest) fails when a func Fuzz
# exists in the repository but not here.
#
#   hack/fuzz.sh                 every target, FUZZTIME (default 10m) each
#   hack/fuzz.sh FuzzParseVersion  only the named targets
#   FUZZTIME=5s hack/fuzz.sh     the bounded run of `make test`
#
# The fuzzer runs at low priority with one worker (-parallel, FUZZ_PARALLEL) so that
# it shares the machine. A finding fails the run; the failing input is left in the
# package's testdata/fuzz/<target>/ for `go test` to replay: minimize it, keep it as a
# seed once fixed. A run whose only failure is Go's own -fuzztime deadline race (see
# verdict below) is not a finding and counts as ok, with a note in its summary line.
# Logs are in FUZZ_LOG_DIR (default a temporary directory).
set -euo pipefail
cd "$(dirname "$0")/.."

# package target
TARGETS=(
	"./internal/k3s FuzzParseVersion"
	"./internal/cloudinit FuzzRenderRoundTrip"
	"./internal/cloudinit FuzzCloudConfigFragment"
	"./internal/webhooks/bootstrap FuzzKThreesConfigWebhook"
	"./internal/webhooks/bootstrap FuzzKThreesConfigTemplateWebhook"
	"./internal/webhooks/controlplane FuzzKThreesControlPlaneWebhook"
	"./internal/webhooks/controlplane FuzzKThreesControlPlaneTemplateWebhook"
	"./internal/webhooks/controlplane FuzzScaleWebhook"
	"./internal/controlplane FuzzUpToDate"
	"./internal/inplace FuzzHandlers"
	"./internal/machinenaming FuzzCheck"
)

# verdict TARGET LOG: how a `go test -fuzz` run that exited non-zero ended.
#   finding  an input failed the target (kept in testdata/fuzz/, or a seed failed)
#   race     Go's fuzzing coordinator reported its own -fuzztime deadline as the
#            failure: the bare "context deadline exceeded", no input written, no panic.
#            A race in internal/fuzz (go.dev/issue/75804, still in Go 1.26): when the
#            deadline fires, the coordinator can see the parent context done before
#            the workers' child context is, and then fails to recognise the deadline
#            as the normal end. Nothing failed, and nothing could be replayed.
#   failed   anything else (a build error, a TestMain failure, a crash): a failure.
verdict() {
	local target="$1" log="$2"
	if grep -qE 'Failing input written to|failure while testing seed corpus entry' "$log"; then
		echo finding
	elif [[ "$(grep -c -- '--- FAIL' "$log")" == 1 ]] &&
		grep -A1 -- "^--- FAIL: ${target} (" "$log" | tail -1 | grep -qx '[[:space:]]*context deadline exceeded' &&
		! grep -qE '^panic:|fuzzing process hung or terminated unexpectedly' "$log"; then
		echo race
	else
		echo failed
	fi
}

case "${1:-}" in
--list)
	printf '%s\n' "${TARGETS[@]}"
	exit 0
	;;
--verdict)
	verdict "$2" "$3"
	exit 0
	;;
esac

FUZZTIME="${FUZZTIME:-10m}"
FUZZ_PARALLEL="${FUZZ_PARALLEL:-1}"
# The fuzzer minimizes every new interesting input (by default for up to a minute),
# during which it tries nothing new: with inputs that are objects of a few kilobytes,
# even 5 s each left a 10-minute run of the template webhook at about 1,100 executions.
# So no minimizing by default; a finding is kept whole in testdata/fuzz/, and
# FUZZ_MINIMIZE=60s hack/fuzz.sh TARGET shrinks it.
FUZZ_MINIMIZE="${FUZZ_MINIMIZE:-0s}"
FUZZ_LOG_DIR="${FUZZ_LOG_DIR:-$(mktemp -d /tmp/capk3s-fuzz.XXXXXX)}"
mkdir -p "$FUZZ_LOG_DIR"

selected=()
for t in "${TARGETS[@]}"; do
	if [[ $# -eq 0 ]] || [[ " $* " == *" ${t#* } "* ]]; then
		selected+=("$t")
	fi
done

summary=()
failed=0
for t in "${selected[@]}"; do
	pkg="${t% *}" target="${t#* }"
	log="$FUZZ_LOG_DIR/$target.log"
	start=$SECONDS
	note=""
	# -vet=off: vet is `make vet`'s job, and on a fuzz build it re-analyses every
	# instrumented dependency.
	if nice -n 19 go test -vet=off -run '^$' -fuzz "^${target}\$" -fuzztime "$FUZZTIME" -fuzzminimizetime "$FUZZ_MINIMIZE" -parallel "$FUZZ_PARALLEL" "$pkg" >"$log" 2>&1; then
		result=ok
	elif [[ "$(verdict "$target" "$log")" == race ]]; then
		result=ok
		note="fuzztime ended in Go's coordinator race (go.dev/issue/75804): no input failed; "
	else
		result=FAIL
		failed=1
	fi
	# The fuzzer's last progress line: "fuzz: elapsed: 10s, execs: 1234 (123/sec), new interesting: 2 (total: 14)".
	last="$(grep -E '^fuzz: elapsed: .*execs:' "$log" | tail -1 | sed -E 's/^fuzz: //' || true)"
	summary+=("$(printf '%-4s %-40s %4ds  %s' "$result" "$target" $((SECONDS - start)) "$note${last:-only the baseline coverage of the corpus was gathered, see $log}")")
	if [[ "$result" == FAIL ]]; then
		grep -E -- '--- FAIL|Failing input|fuzz_test.go|panic' "$log" | head -20 || true
	fi
done

echo "fuzz summary (FUZZTIME=$FUZZTIME per target; logs in $FUZZ_LOG_DIR):"
printf '  %s\n' "${summary[@]}"
exit "$failed"
