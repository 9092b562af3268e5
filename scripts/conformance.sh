#!/usr/bin/env bash
# Runs the official MCP conformance suite (pinned in test/conformance) against
# a running streamable-HTTP MCP endpoint.
#
#   scripts/conformance.sh URL [ERA | ERA:SCENARIO ...]   e.g. http://127.0.0.1:8080/mcp 2026-07-28
#   scripts/conformance.sh --list                   the default ERA:SCENARIO list
#
# Without scenarios it runs the default list: every server scenario the suite
# lists for the legacy era (2025-11-25) and for the stateless era
# (2026-07-28); most need the suite's fixtures, which the conformance plugin
# serves (mcpkit serve --http ADDR --plugins conformance). It exits non-zero
# if any check of any scenario fails, and then prints that scenario's full
# suite output. Checks the suite marks untestable (the server lacks one of
# the suite's diagnostic fixture tools) are reported and fail only with
# CONFORMANCE_STRICT=1.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dir=$root/test/conformance
suite=$dir/node_modules/@modelcontextprotocol/conformance/dist/index.js
if [[ ! -f $suite ]]; then
	npm ci --prefix "$dir" --ignore-scripts --no-audit --no-fund >&2
fi
run_suite() { node --import "$dir/node20-shim.mjs" "$suite" "$@"; }

# The default list is every server scenario the pinned suite lists for each
# protocol era (the [extension] scenarios are not part of either era).
eras=(2025-11-25 2026-07-28)
default_scenarios() {
	local era
	for era in "${eras[@]}"; do
		run_suite list --server --spec-version "$era" | sed -n "s/^  - \([a-z0-9-]*\) \[.*/$era:\1/p"
	done
}

if [[ ${1:-} == --list ]]; then
	default_scenarios
	exit 0
fi
if [[ $# -lt 1 || $1 == -* ]]; then
	echo "usage: $0 URL [ERA | ERA:SCENARIO ...] | --list" >&2
	exit 2
fi
url=$1
shift
scenarios=("$@")

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

status=0
# report evaluates the checks the suite wrote under $1 (label $2) and, on a
# failure, prints the suite's output $3. The suite's own exit status also
# counts untestable checks; evaluate.mjs decides from the checks.
report() {
	if ! node "$dir/evaluate.mjs" "$1" "$2"; then
		status=1
		echo "--- suite output for $2 ---"
		sed 's/\x1b\[[0-9;]*m//g' "$3"
		echo "--- end of suite output ---"
	fi
}

if [[ ${#scenarios[@]} -eq 0 ]]; then
	scenarios=("${eras[@]}")
fi

for item in "${scenarios[@]}"; do
	if [[ $item =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}$ ]]; then
		# A whole era: one suite run (the suite runs an era's scenarios in
		# one process, far faster than one process each); every scenario's
		# checks are evaluated apart.
		run_suite server --url "$url" --spec-version "$item" --suite all \
			-o "$out/$item" >"$out/$item.log" 2>&1 || true
		report "$out/$item" "$item" "$out/$item.log"
		continue
	fi
	era=${item%%:*}
	scenario=${item#*:}
	if [[ $era == "$item" || -z $era || -z $scenario ]]; then
		echo "bad scenario $item: want ERA:SCENARIO" >&2
		exit 2
	fi
	run=$out/$era-$scenario
	mkdir -p "$run"
	run_suite server \
		--url "$url" --scenario "$scenario" --spec-version "$era" \
		-o "$run/results" >"$run/log" 2>&1 || true
	report "$run/results" "$era" "$run/log" # the run directory names the scenario
done
exit $status
