// Module resolution hook registered by node20-shim.mjs: imports of "fs" or
// "node:fs" resolve to node20-fs.mjs (fs plus a globSync polyfill), except
// from node20-fs.mjs itself.
const shimURL = new URL('./node20-fs.mjs', import.meta.url).href;

export async function resolve(specifier, context, nextResolve) {
  if ((specifier === 'fs' || specifier === 'node:fs') && context.parentURL !== shimURL) {
    return { url: shimURL, shortCircuit: true };
  }
  return nextResolve(specifier, context);
}
