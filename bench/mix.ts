/**
 * The fixed query mix of the HTTP benchmark: realistic queries as clients send
 * them (the key is added by the harness). It is not to be tuned: every
 * contender answers exactly these, in rotation.
 */
export const QUERY_MIX: readonly string[] = [
  'type=http&count=100',
  'type=socks5&anon=elite&country=us,de&count=50&get=json',
  'country=ru,ua&cm=except&time=300',
  'service=telegram&works=80',
  'city=%D0%9C%D0%BE%D1%81%D0%BA%D0%B2%D0%B0', // city=Москва
  'lang=en&city=Moscow',
  'get=json&fields=ip,port,type&split_ip=1&pretty=0',
  'format=object&wrap=1&get=json&count=100',
  '', // the full txt dump of the default window
  'get=json', // the full JSON dump of the default window
  'type=https&country=zz', // no match: unknown country
  'ping=1&get=json', // no match: nothing that fast
  'type=socks4,socks5&count=20&type_prefix=1',
  'anon=anonymous,elite&ping=300&count=200',
  'country=us&count=500&get=txt.file',
  'service=google,smtp&get=json&pretty=0&count=50',
  'country=de,nl,fr&cm=include&type=http,https&works=50',
  'time=60&get=json&fields=ip,ping,timecheck',
  'ip=1.2.3.4&get=json', // no match: an address not in the list
  'country_mode=except&country=cn,ru&count=1000&get=json&pretty=0',
  'works=95&time=120&count=10',
  'get=json.file&service=avito&count=300&lang=en',
];

/**
 * Small answers only, so that the per-request work is what is measured: the
 * mix's queries but its two full dumps, each with a `count` of at most 1,000
 * (100 where it had none), and four more. Not to be tuned either.
 */
export const SMALL_MIX: readonly string[] = [
  ...QUERY_MIX.filter((q) => q !== '' && q !== 'get=json').map((q) => (/(^|&)count=/.test(q) ? q : `${q}&count=100`)),
  'count=1000',
  'get=json&count=20',
  'type=http&anon=transparent&country=br&count=5',
  'get=json&wrap=1&pretty=0&type=socks5&count=10',
];

/**
 * The mix a real client population sends, in three classes (none to be
 * tuned): counted small answers; uncounted medium answers, whose window
 * (`time`, from 300 to 7200 s) moves every second, so that their bodies
 * change every second (60–340 KB each at 100,000 records); and empty
 * answers. A third of it is uncounted.
 */
export const COUNTED_SMALL: readonly string[] = SMALL_MIX.slice(0, 12);
export const UNCOUNTED_MEDIUM: readonly string[] = [
  'time=300',
  'time=600&type=socks5',
  'time=300&type=http&anon=elite&get=json&pretty=0',
  'time=1800&type=socks4&anon=elite',
  'time=300&country=us&get=json&pretty=0',
  'time=7200&type=https&works=90',
  'time=600&works=90&get=json&fields=ip,port,type',
  'time=300&ping=100&type=socks5&get=json&pretty=0',
];
export const EMPTY_ANSWERS: readonly string[] = [
  'type=https&country=zz',
  'ping=1&get=json',
  'ip=1.2.3.4&get=json',
  'time=300&country=zz&get=json',
];
export const REAL_MIX: readonly string[] = [...COUNTED_SMALL, ...UNCOUNTED_MEDIUM, ...EMPTY_ANSWERS];

/**
 * The latency mix: what latency-sensitive clients take, answers of 0 bytes
 * to about 1.2 MB on 100,000 records: the mix without its pretty JSON dump,
 * a list of a longer window, and a compact JSON list of one type (not to be
 * tuned either).
 */
export const LATENCY_MIX: readonly string[] = [...QUERY_MIX.filter((q) => q !== 'get=json'), 'time=1800&type=http', 'get=json&pretty=0&type=http'];

/**
 * Small answers with a few big ones among them: the small answers and three
 * whole lists of 0.36 to 0.9 MB at 100,000 records, a city's JSON over 2
 * hours and two types' lists over 30 minutes and 2 hours, none counted (not
 * to be tuned either).
 */
export const SMALL_WITH_BIG_MIX: readonly string[] = [...SMALL_MIX, 'lang=en&city=Moscow&time=7200&get=json', 'time=1800&type=http', 'time=7200&type=https'];
