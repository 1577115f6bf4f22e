'use strict';
/**
 * The Node.js lines the service runs on (docs/operations.md, Where it runs), as
 * package.json's engines.node says: `proxylist` and `npm start` stop at
 * once, with one line, on any other. Plain JavaScript, run before anything
 * is built.
 */
const SUPPORTED = [20, 22, 24, 26];

/** The line to stop with on Node.js `version`, or null where it runs. */
function unsupported(version) {
  const major = Number(String(version).replace(/^v/, '').split('.')[0]);
  if (SUPPORTED.includes(major)) return null;
  return `proxylist: Node.js ${version} is not supported; use Node.js ${SUPPORTED.slice(0, -1).join(', ')} or ${SUPPORTED[SUPPORTED.length - 1]}`;
}

module.exports = { SUPPORTED, unsupported };

if (require.main === module) {
  const line = unsupported(process.versions.node);
  if (line) {
    process.stderr.write(line + '\n');
    process.exit(1);
  }
}
