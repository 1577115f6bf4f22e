import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { civilFromDays, formatIsoOffset, formatTimecheck, msUntilNextServiceMidnight, serviceDay } from '../../src/core/service-time.js';

/** The fixed UTC+02:00 of the service, against Date's own UTC arithmetic shifted by two hours. */
const test = suite('service time (UTC+02:00)');
const viaDate = (unixS: number) => new Date((unixS + 7200) * 1000).toISOString().slice(0, 19).replace('T', ' ');

test('timecheck agrees with Date over 200 years, leap days and second boundaries included', () => {
  for (let s = -2208988800; s < 4102444800; s += 86400 * 37 + 3607) assert.is(formatTimecheck(s), viaDate(s), String(s));
  for (const s of [0, 951782399, 951782400, 951868799, 1709164800, 1795867199, 1795867200]) assert.is(formatTimecheck(s), viaDate(s), String(s));
});

test('civilFromDays: 1970-01-01, 2000-02-29, 1969-12-31', () => {
  assert.equal(civilFromDays(0), { y: 1970, m: 1, d: 1 });
  assert.equal(civilFromDays(11016), { y: 2000, m: 2, d: 29 });
  assert.equal(civilFromDays(-1), { y: 1969, m: 12, d: 31 });
});

test('the day turns at 00:00 UTC+02:00, which is 22:00 UTC', () => {
  const lastSecond = Date.parse('2026-11-28T21:59:59.999Z');
  assert.is(serviceDay(lastSecond + 1), serviceDay(lastSecond) + 1);
  assert.is(msUntilNextServiceMidnight(lastSecond), 1);
  assert.is(msUntilNextServiceMidnight(lastSecond + 1), 86_400_000);
  assert.is(formatIsoOffset(lastSecond + 1), '2026-11-29T00:00:00+02:00');
});

test.run();
