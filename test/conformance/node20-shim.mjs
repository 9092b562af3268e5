// Preload for Node 20: the conformance suite (0.2.x) imports `globSync` from
// "fs", which Node added in 22. Run node with `--import ./node20-shim.mjs`.
// On a Node that has fs.globSync this file does nothing.
import fs from 'node:fs';
import { register } from 'node:module';

if (typeof fs.globSync !== 'function') {
  register('./node20-shim-hooks.mjs', import.meta.url);
}
