#!/usr/bin/env bash
# Runs the official MCP conformance suite (pinned in test/conformance) against
# a running streamable-HTTP MCP endpoint.
#
#   scripts/conformance.sh URL [ERA:SCENARIO ...]   e.g. http://127.0.0.1:8080/mcp
#   scripts/conformance.sh --list                   the default ERA:SCENARIO list
#
# Without scenarios it runs the default list: the legacy era (2025-11-25) and
# the stateless era (2026-07-28). It exits non-zero if any check of any
# scenario fails, and then prints that scenario's full suite output. Checks
# the suite marks untestable (the server lacks one of the suite's diagnostic
# fixture tools) are reported and fail only with CONFORMANCE_STRICT=1.
set -euo pipefail

# The scenarios that need none of the suite's fixture tools (those of the
# SDKs' "everything" servers): lifecycle, transport and list behaviour.
scenarios_default=(
	2025-11-25:server-initialize
	2025-11-25:ping
	2025-11-25:server-session-lifecycle
	2025-11-25:dns-rebinding-protection
	2025-11-25:server-sse-multiple-streams
	2025-11-25:logging-set-level
	2025-11-25:tools-list
	2025-11-25:resources-list
	2026-07-28:server-stateless
	2026-07-28:http-header-validation
	2026-07-28:dns-rebinding-protection
	2026-07-28:server-sse-multiple-streams
	2026-07-28:caching
	2026-07-28:tools-list
	2026-07-28:prompts-list
	2026-07-28:sep-2164-resource-not-found
)

if [[ ${1:-} == --list ]]; then
	printf '%s\n' "${scenarios_default[@]}"
	exit 0
fi
if [[ $# -lt 1 || $1 == -* ]]; then
	echo "usage: $0 URL [ERA:SCENARIO ...] | --list" >&2
	exit 2
fi
url=$1
shift
scenarios=("$@")
if [[ ${#scenarios[@]} -eq 0 ]]; then
	scenarios=("${scenarios_default[@]}")
fi

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dir=$root/test/conformance
suite=$dir/node_modules/@modelcontextprotocol/conformance/dist/index.js
if [[ ! -f $suite ]]; then
	npm ci --prefix "$dir" --ignore-scripts --no-audit --no-fund >&2
fi

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

status=0
for item in "${scenarios[@]}"; do
	era=${item%%:*}
	scenario=${item#*:}
	if [[ $era == "$item" || -z $era || -z $scenario ]]; then
		echo "bad scenario $item: want ERA:SCENARIO" >&2
		exit 2
	fi
	run=$out/$era-$scenario
	mkdir -p "$run"
	# The suite's own exit status also counts untestable checks; evaluate.mjs
	# decides from the checks it wrote.
	node --import "$dir/node20-shim.mjs" "$suite" server \
		--url "$url" --scenario "$scenario" --spec-version "$era" \
		-o "$run/results" >"$run/log" 2>&1 || true
	if ! node "$dir/evaluate.mjs" "$run/results" "$scenario ($era)"; then
		status=1
		echo "--- suite output for $scenario ($era) ---"
		sed 's/\x1b\[[0-9;]*m//g' "$run/log"
		echo "--- end of suite output ---"
	fi
done
exit $status
