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
# seed once fixed. Logs are in FUZZ_LOG_DIR (default a temporary directory).
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

if [[ "${1:-}" == "--list" ]]; then
	printf '%s\n' "${TARGETS[@]}"
	exit 0
fi

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
	# -vet=off: vet is `make vet`'s job, and on a fuzz build it re-analyses every
	# instrumented dependency.
	if nice -n 19 go test -vet=off -run '^$' -fuzz "^${target}\$" -fuzztime "$FUZZTIME" -fuzzminimizetime "$FUZZ_MINIMIZE" -parallel "$FUZZ_PARALLEL" "$pkg" >"$log" 2>&1; then
		result=ok
	else
		result=FAIL
		failed=1
	fi
	# The fuzzer's last progress line: "fuzz: elapsed: 10s, execs: 1234 (123/sec), new interesting: 2 (total: 14)".
	last="$(grep -E '^fuzz: elapsed: .*execs:' "$log" | tail -1 | sed -E 's/^fuzz: //' || true)"
	summary+=("$(printf '%-4s %-40s %4ds  %s' "$result" "$target" $((SECONDS - start)) "${last:-only the baseline coverage of the corpus was gathered, see $log}")")
	if [[ "$result" == FAIL ]]; then
		grep -E -- '--- FAIL|Failing input|fuzz_test.go|panic' "$log" | head -20 || true
	fi
done

echo "fuzz summary (FUZZTIME=$FUZZTIME per target; logs in $FUZZ_LOG_DIR):"
printf '  %s\n' "${summary[@]}"
exit "$failed"
