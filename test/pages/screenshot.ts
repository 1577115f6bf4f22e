/**
 * The README's picture of the query builder (docs/query-builder.png): a
 * server on a generated snapshot, the form filled as a person would, one
 * run, in Debian's chromium.
 * Run: npm run screenshot
 */
import { rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { encodeSnapshot, generateRecords } from '../../src/snapshot/generate.js';
import { TEST_KEY, TEST_NOW_S, startTestServer } from '../helpers/server.js';
import { CHROMIUM } from '../helpers/browser.js';

const out = fileURLToPath(new URL('../../../docs/query-builder.png', import.meta.url));
const t = await startTestServer({ snapshot: encodeSnapshot(generateRecords({ records: 20_000, seed: 1, now: TEST_NOW_S }), TEST_NOW_S) });
const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
try {
  const page = await browser.newPage({ viewport: { width: 1100, height: 1250 } });
  await page.goto(`${t.base}/`);
  await page.fill('#key', TEST_KEY);
  await page.check('input[name=type][value=socks5]');
  await page.check('input[name=anon][value=elite]');
  await page.fill('input[name=country]', 'US,DE');
  await page.selectOption('select[name=get]', 'json');
  for (const field of ['ip', 'type', 'anon', 'ping', 'country', 'city']) await page.check(`input[name=fields][value=${field}]`);
  await page.fill('input[name=count]', '8');
  await page.click('#run');
  await page.locator('table.records').waitFor();
  rmSync(out, { force: true });
  await page.screenshot({ path: out });
  process.stdout.write(`${out}\n`);
} finally {
  await browser.close();
  await t.close();
}
