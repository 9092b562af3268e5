// Evaluates one conformance scenario run from the checks.json the suite
// wrote under DIR (its -o directory). Usage: node evaluate.mjs DIR LABEL
//
// A FAILURE fails the run, except a check the suite marks untestable
// (details.untestable: the server does not list one of the suite's own
// diagnostic fixture tools, such as test_missing_capability); those are
// reported, and fail only with CONFORMANCE_STRICT=1. WARNING (a SHOULD) and
// SKIPPED are reported and do not fail, as in the suite's own exit status.
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

const file = fs.existsSync(dir) ? find(dir) : null;
if (!file) {
  console.log(`FAIL ${label}: the suite wrote no checks.json (it did not run)`);
  process.exit(1);
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
  `${failed ? 'FAIL' : 'PASS'} ${label}: ${count.SUCCESS} passed, ${count.FAILURE} failed, ` +
    `${count.WARNING} warnings, ${count.UNTESTABLE} untestable, ${count.SKIPPED} skipped`,
);
for (const n of notes) console.log(n);
process.exit(failed ? 1 : 0);
