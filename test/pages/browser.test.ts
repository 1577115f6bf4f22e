/// <reference lib="dom" />
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type ConsoleMessage, type Page } from 'playwright-core';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { encodeSnapshot, generateRecords } from '../../src/snapshot/generate.js';
import { CHROMIUM } from '../helpers/browser.js';
import { TEST_KEY, TEST_NOW_S, UNLIMITED, eventually, startTestServer, type TestServer } from '../helpers/server.js';

/**
 * The pages for people (docs/pages.md) in a real browser: Debian's chromium,
 * driven by playwright-core. Every test fails on an error in the page's
 * console or a request to another host; its screenshots go to a temporary
 * folder, removed when it passes and named in the message when it fails.
 */
const LIMITED = 'limited-key-of-the-browser-test';
const STATUS_TEXT: Record<number, string> = { 401: 'Unauthorized', 429: 'Too Many Requests' };
const snapshot = encodeSnapshot(generateRecords({ records: 3000, seed: 17, now: TEST_NOW_S }), TEST_NOW_S);

interface Ctx { t: TestServer; browser: Browser }
const test = suite<Ctx>('the pages in a browser');
test.before(async (ctx) => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: npm run setup installs it (Debian package chromium; docs/testing.md)`);
  ctx.t = await startTestServer({ snapshot, keys: { keys: [{ key: TEST_KEY, name: 'test', limits: UNLIMITED }, { key: LIMITED, name: 'limited' }] } });
  ctx.browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
});
test.after(async (ctx) => {
  await ctx.browser.close();
  await ctx.t.close();
});

/**
 * Runs `body` on a fresh page that records console errors and requests to
 * other hosts; fails with the screenshots' folder. `refused`: statuses of
 * /api answers the test asks for on purpose, which chromium logs to the
 * console as resources that failed to load; no other error is let through.
 */
async function onPage(ctx: Ctx, name: string, body: (page: Page, shot: (what: string) => Promise<void>) => Promise<void>, refused: number[] = []): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'proxylist-screens-'));
  const page = await ctx.browser.newPage({ viewport: { width: 1200, height: 900 } });
  const problems: string[] = [];
  const origin = new URL(ctx.t.base).host;
  const expected = (m: ConsoleMessage): boolean =>
    new URL(m.location().url || 'about:blank', ctx.t.base).pathname === '/api' && refused.some((status) => m.text() === `Failed to load resource: the server responded with a status of ${status} (${STATUS_TEXT[status]})`);
  page.on('console', (m) => void (m.type() === 'error' && !expected(m) && problems.push(`console error: ${m.text()}`)));
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('request', (r) => void (!/^(data|blob):/.test(r.url()) && new URL(r.url()).host !== origin && problems.push(`request to another host: ${r.url()}`)));
  const shot = async (what: string) => void (await page.screenshot({ path: join(dir, `${name}-${what}.png`), fullPage: true }));
  try {
    await body(page, shot);
    await shot('end');
    assert.equal(problems, [], 'no console error, no request to another host');
    rmSync(dir, { recursive: true, force: true });
  } catch (err) {
    await shot('failed').catch(() => undefined);
    (err as Error).message += `\n    screenshots: ${dir}${problems.length ? `\n    ${problems.join('\n    ')}` : ''}`;
    throw err;
  } finally {
    await page.close();
  }
}

/** Clicks Run and waits until that run is over (the page counts finished runs in #answer's data-runs). */
async function run(page: Page): Promise<void> {
  const before = Number(await page.locator('#answer').getAttribute('data-runs') ?? 0);
  await page.click('#run');
  await page.waitForFunction((n) => Number(document.querySelector<HTMLElement>('#answer')!.dataset.runs ?? 0) > n, before);
}

test('/ builds the query, and its table holds exactly the records the same URL answers', async (ctx) => {
  await onPage(ctx, 'builder', async (page, shot) => {
    await page.goto(`${ctx.t.base}/`);
    assert.match(await page.locator('header').innerText(), /proxy servers/);
    await page.fill('#key', TEST_KEY);
    await page.check('input[name=type][value=socks5]');
    await page.fill('input[name=country]', 'US,DE');
    await page.fill('input[name=count]', '5');
    await page.selectOption('select[name=get]', 'json');
    const url = await page.locator('#url').innerText();
    for (const part of ['type=socks5', 'country=US%2CDE', 'count=5', 'get=json', `key=${TEST_KEY}`]) assert.ok(url.includes(part), `${part} in ${url}`);
    assert.is(await page.locator('#curl').innerText(), `curl '${url}'`);
    // The family of the entry address: left out unless one is chosen.
    assert.not.ok(url.includes('ipv='));
    await page.selectOption('select[name=ipv]', '6');
    assert.ok((await page.locator('#url').innerText()).includes('ipv=6'));
    await page.selectOption('select[name=ipv]', '');
    // Who runs the exit: left out unless given.
    for (const name of ['asn=', 'hosting=', 'mobile=']) assert.not.ok(url.includes(name), `${name} in ${url}`);
    await page.fill('input[name=asn]', 'AS24940,16276');
    await page.selectOption('select[name=hosting]', '1');
    await page.selectOption('select[name=mobile]', '0');
    const networkUrl = await page.locator('#url').innerText();
    for (const part of ['asn=AS24940%2C16276', 'hosting=1', 'mobile=0']) assert.ok(networkUrl.includes(part), `${part} in ${networkUrl}`);
    await page.fill('input[name=asn]', '');
    await page.selectOption('select[name=hosting]', '');
    await page.selectOption('select[name=mobile]', '');
    assert.is(await page.locator('#url').innerText(), url);
    // The key is kept in the browser, not in the page's address.
    assert.is(await page.evaluate(() => localStorage.getItem('proxylist.key')), TEST_KEY);
    assert.not.ok(page.url().includes(TEST_KEY));
    await shot('form');
    await run(page);

    const records = await (await fetch(url)).json() as Array<Record<string, unknown>>;
    assert.is(records.length, 5);
    const columns = await page.locator('table.records th').allInnerTexts();
    assert.equal(columns, Object.keys(records[0]));
    const cells = await page.locator('table.records tbody tr').evaluateAll((rows) => rows.map((r) => [...r.querySelectorAll('td')].map((td) => td.textContent)));
    assert.equal(cells, records.map((r) => columns.map((c) => String(r[c]))));
    assert.match(await page.locator('.status').innerText(), /^200 · .* · 5 records$/);

    // The exit's network, only when asked for: its columns then show what the URL answers.
    for (const field of ['ip', 'asn', 'org', 'hosting']) await page.check(`input[name=fields][value=${field}]`);
    const fieldsUrl = await page.locator('#url').innerText();
    assert.ok(fieldsUrl.includes('fields=ip%2Casn%2Corg%2Chosting'), fieldsUrl);
    await run(page);
    const named = await (await fetch(fieldsUrl)).json() as Array<Record<string, unknown>>;
    assert.equal(await page.locator('table.records th').allInnerTexts(), ['ip', 'asn', 'org', 'hosting']);
    const namedCells = await page.locator('table.records tbody tr').evaluateAll((rows) => rows.map((r) => [...r.querySelectorAll('td')].map((td) => td.textContent)));
    assert.equal(namedCells, named.map((r) => ['ip', 'asn', 'org', 'hosting'].map((c) => String(r[c]))));

    // CSV takes the same fields, not JSON's layout; its table is the same records, an unknown value empty.
    await page.selectOption('select[name=get]', 'csv');
    assert.ok(await page.locator('input[name=fields][value=asn]').isVisible(), 'fields apply to CSV');
    assert.not.ok(await page.locator('input[name=wrap]').isVisible(), 'wrap does not');
    const csvUrl = await page.locator('#url').innerText();
    assert.ok(csvUrl.includes('get=csv') && csvUrl.includes('fields=ip%2Casn%2Corg%2Chosting') && !csvUrl.includes('wrap='), csvUrl);
    await run(page);
    assert.equal(await page.locator('table.records th').allInnerTexts(), ['ip', 'asn', 'org', 'hosting']);
    const csvCells = await page.locator('table.records tbody tr').evaluateAll((rows) => rows.map((r) => [...r.querySelectorAll('td')].map((td) => td.textContent)));
    assert.equal(csvCells, named.map((r) => ['ip', 'asn', 'org', 'hosting'].map((c) => (r[c] === null ? '' : String(r[c])))));
    assert.match(await page.locator('.status').innerText(), /^200 · .* · 5 rows$/);
  });
});

test('get=stats draws bars with the counts the same URL answers', async (ctx) => {
  await onPage(ctx, 'stats', async (page) => {
    await page.goto(`${ctx.t.base}/`);
    await page.fill('#key', TEST_KEY);
    await page.fill('input[name=time]', '3600');
    await page.selectOption('select[name=get]', 'stats');
    await run(page);
    const stats = await (await fetch(await page.locator('#url').innerText())).json() as Record<string, Record<string, number>>;
    const shown = await page.locator('.bars').evaluateAll((groups) => groups.map((g) => [g.querySelector('h3')!.textContent, [...g.querySelectorAll('.bar')].map((b) => [b.querySelector('.label')!.textContent, Number(b.querySelector('.count')!.textContent)])]));
    assert.equal(shown.slice(0, 3), ['type', 'anon', 'country'].map((group) => [group, Object.entries(stats[group])]));
    // The largest autonomous systems, each with its organisation.
    const asns = stats.asn as unknown as Array<{ asn: number; org: string; count: number }>;
    assert.ok(asns.length > 0);
    assert.equal(shown[3], ['asn', asns.map((a) => [`AS${a.asn} ${a.org}`.trim(), a.count])]);
    // The longest bar is the largest count.
    const widths = await page.locator('.bars').first().locator('.fill').evaluateAll((fills) => fills.map((f) => f.getBoundingClientRect().width));
    const counts = Object.values(stats.type);
    assert.is(widths.indexOf(Math.max(...widths)), counts.indexOf(Math.max(...counts)));
  });
});

test('a limited key: each press is one request, and the third within 5 s says 429 and when to retry', async (ctx) => {
  await onPage(ctx, 'limited', async (page) => {
    let requests = 0;
    page.on('request', (r) => void (new URL(r.url()).pathname === '/api' && requests++));
    await page.goto(`${ctx.t.base}/`);
    await page.fill('#key', LIMITED);
    await page.fill('input[name=count]', '1');
    for (let i = 0; i < 2; i++) {
      await run(page);
      assert.match(await page.locator('.status').innerText(), /^200 /);
    }
    await run(page);
    assert.match(await page.locator('#answer .error').innerText(), /^429: Request rate limit exceeded.*\. Retry in [1-5] s\.$/);
    assert.is(requests, 3);
    await page.fill('#key', 'not-a-key');
    await run(page);
    assert.match(await page.locator('#answer .error').innerText(), /^401: Invalid access key\. Check the key above\.$/);
  }, [429, 401]);
});

test('/docs renders the OpenAPI document: the /api operation and its parameters; Try it out asks the instance that served it', async (ctx) => {
  await onPage(ctx, 'docs', async (page) => {
    const asked: string[] = [];
    page.on('request', (r) => void (new URL(r.url()).pathname === '/api' && asked.push(r.url())));
    await page.goto(`${ctx.t.base}/docs`);
    const operation = page.locator('.opblock-summary-path', { hasText: /^\/api$/ }).first();
    await operation.waitFor({ timeout: 20_000 });
    await operation.click();
    await page.locator('.parameters .parameter__name').first().waitFor();
    const names = (await page.locator('.parameters .parameter__name').allInnerTexts()).map((n) => n.split(/\s/)[0].replace('*', ''));
    for (const name of ['type', 'country', 'count', 'get', 'since', 'wait']) assert.ok(names.includes(name), `parameter ${name} among ${names.join(', ')}`);
    // No key given: the instance answers 401, and it is this instance that answers.
    await page.locator('.try-out__btn').first().click();
    await page.locator('.execute').first().click();
    await page.locator('.live-responses-table tbody .response-col_status').first().waitFor({ timeout: 20_000 });
    const status = await page.locator('.live-responses-table tbody .response-col_status').first().innerText();
    assert.match(status, /401/, `status ${status}; asked ${asked.join(', ')}`);
    assert.ok(asked.length > 0 && asked.every((url) => url.startsWith(`${ctx.t.base}/api`)), `asked ${asked.join(', ')}`);
  }, [401]);
});

test('a page of another origin cannot frame them: the browser refuses, and the frame never shows the form', async (ctx) => {
  // Another origin: the same host, another port.
  const other = createServer((_req, res) => res.end(`<!doctype html><title>framer</title><iframe src="${ctx.t.base}/"></iframe><iframe src="${ctx.t.base}/docs"></iframe>`));
  await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve));
  const page = await ctx.browser.newPage();
  const console: string[] = [];
  page.on('console', (m) => void console.push(m.text()));
  try {
    await page.goto(`http://127.0.0.1:${(other.address() as AddressInfo).port}/`);
    await page.waitForFunction(() => document.querySelectorAll('iframe').length === 2);
    // The refusal is the browser's, in the framing page's console, once per frame.
    await eventually(() => console.filter((text) => text.includes("frame-ancestors 'none'")).length === 2, 10_000, 'both frames refused');
    for (const frame of page.frames().filter((f) => f !== page.mainFrame())) {
      const form = await frame.evaluate(() => document.querySelector('#query, #reference') !== null).catch(() => false);
      assert.is(form, false, `${frame.url()} shows nothing of the service`);
    }
  } finally {
    await page.close();
    await new Promise((resolve) => other.close(resolve));
  }
});

test.run();
