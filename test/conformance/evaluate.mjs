// Evaluates conformance runs from the checks.json files the suite wrote.
// Usage: node evaluate.mjs DIR LABEL
//
// DIR is either one scenario's -o directory (LABEL names it), or a whole
// era's -o directory holding one server-<scenario>-<timestamp> directory per
// scenario (LABEL is the era): each scenario is then evaluated and reported
// apart, as "<scenario> (<era>)".
//
// A FAILURE fails the scenario, except a check the suite marks untestable
// (details.untestable: the server does not list one of the suite's own
// diagnostic fixture tools, such as test_missing_capability); those are
// reported, and fail only with CONFORMANCE_STRICT=1. WARNING (a SHOULD) and
// SKIPPED are reported and do not fail, as in the suite's own exit status.
// The exit status is 1 when any scenario failed.
import fs from 'node:fs';
import path from 'node:path';

const [dir, label] = process.argv.slice(2);
const strict = process.env.CONFORMANCE_STRICT === '1';

function find(d) {
  for (const e of fs.readdirSync(d, { withFileTypes: true })) {
    const p = path.join(d, e.name);
    if (e.isDirectory()) {
      const r = find(p);
      if (r) return r;
    } else if (e.name === 'checks.json') {
      return p;
    }
  }
  return null;
}

// evaluate prints one scenario's line (and its notes) and says whether it
// passed.
function evaluate(scenarioDir, name) {
  const file = fs.existsSync(scenarioDir) ? find(scenarioDir) : null;
  if (!file) {
    console.log(`FAIL ${name}: the suite wrote no checks.json (it did not run)`);
    return false;
  }
  const checks = JSON.parse(fs.readFileSync(file, 'utf8'));
  const count = { SUCCESS: 0, FAILURE: 0, WARNING: 0, SKIPPED: 0, INFO: 0, UNTESTABLE: 0 };
  const notes = [];
  for (const c of checks) {
    let status = c.status;
    if (status === 'FAILURE' && c.details && c.details.untestable === true && !strict) {
      status = 'UNTESTABLE';
    }
    count[status] = (count[status] ?? 0) + 1;
    if (status !== 'SUCCESS' && status !== 'INFO') {
      notes.push(`  ${status} ${c.id}: ${c.errorMessage ?? c.description ?? ''}`);
    }
  }
  const failed = count.FAILURE > 0 || checks.length === 0;
  console.log(
    `${failed ? 'FAIL' : 'PASS'} ${name}: ${count.SUCCESS} passed, ${count.FAILURE} failed, ` +
      `${count.WARNING} warnings, ${count.UNTESTABLE} untestable, ${count.SKIPPED} skipped`,
  );
  for (const n of notes) console.log(n);
  return !failed;
}

const runDir = /^server-(.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$/;
const runs = fs.existsSync(dir)
  ? fs.readdirSync(dir, { withFileTypes: true }).filter((e) => e.isDirectory() && runDir.test(e.name))
  : [];
let ok = true;
if (runs.length === 0) {
  ok = evaluate(dir, label);
} else {
  for (const e of runs.sort((a, b) => a.name.localeCompare(b.name))) {
    ok = evaluate(path.join(dir, e.name), `${e.name.match(runDir)[1]} (${label})`) && ok;
  }
}
process.exit(ok ? 0 : 1);
