// The query builder of GET /: the form becomes an /api URL and a curl line as
// it changes; Run sends that one request and shows its answer. The key stays
// in localStorage, never in the page's own address.

const KEY_STORE = 'proxylist.key';
/** Answers are shown up to this many records or lines: a whole list can hold hundreds of thousands. */
const SHOWN = 1000;

const form = document.getElementById('query');
const keyInput = document.getElementById('key');
const urlOut = document.getElementById('url');
const curlOut = document.getElementById('curl');
const runButton = document.getElementById('run');
const answer = document.getElementById('answer');
/** Runs finished, in the answer's data-runs: what a test waits for (two answers may look the same). */
let runs = 0;

keyInput.value = localStorage.getItem(KEY_STORE) ?? '';

/** The query string of the form: lists joined by commas, empty fields left out. */
function queryOf() {
  const params = new URLSearchParams();
  params.set('key', keyInput.value.trim() || 'KEY');
  const lists = new Map();
  for (const el of form.elements) {
    if (!el.name || el.disabled) continue;
    if (el.type === 'checkbox') {
      if (!el.checked) continue;
      if (['type', 'anon', 'service', 'fields'].includes(el.name)) lists.set(el.name, [...(lists.get(el.name) ?? []), el.value]);
      else params.set(el.name, el.value);
    } else if (el.value.trim() !== '') params.set(el.name, el.value.trim());
  }
  for (const [name, values] of lists) params.set(name, values.join(','));
  return params;
}

const apiUrl = () => `${location.origin}/api?${queryOf().toString()}`;
const shellQuote = (s) => `'${s.replace(/'/g, `'\\''`)}'`;

/** Which parts of the form apply to the chosen output. */
function showOutputParts() {
  const get = form.elements.get.value || 'txt';
  const json = get.startsWith('json');
  // JSON and CSV take the fields and split_ip; the layout is JSON's alone.
  const fielded = json || get.startsWith('csv');
  for (const el of form.querySelectorAll('.fielded')) el.hidden = !fielded;
  for (const el of form.querySelectorAll('.fielded input')) el.disabled = !fielded;
  for (const el of form.querySelectorAll('.json')) el.hidden = !json;
  for (const el of form.querySelectorAll('.txt')) el.hidden = get !== 'txt' && get !== 'txt.file';
  for (const el of form.querySelectorAll('.json input, .json select')) el.disabled = !json;
  for (const el of form.querySelectorAll('.txt input')) el.disabled = !(get === 'txt' || get === 'txt.file');
}

function update() {
  showOutputParts();
  const url = apiUrl();
  urlOut.textContent = url;
  curlOut.textContent = `curl ${shellQuote(url)}`;
}

async function copy(text, button) {
  try {
    await navigator.clipboard.writeText(text);
    button.textContent = 'Copied';
  } catch {
    // No clipboard (an insecure origin): the text is selected for Ctrl+C instead.
    const range = document.createRange();
    range.selectNodeContents(button.previousElementSibling);
    getSelection().removeAllRanges();
    getSelection().addRange(range);
    button.textContent = 'Selected: press Ctrl+C';
  }
  setTimeout(() => (button.textContent = button.id === 'copy-url' ? 'Copy URL' : 'Copy curl'), 1500);
}

const el = (tag, props = {}, ...children) => {
  const node = Object.assign(document.createElement(tag), props);
  node.append(...children);
  return node;
};

function showMessage(kind, text) {
  answer.replaceChildren(el('p', { className: kind }, text));
}

/** The records of a JSON answer, whatever its shape: an array, an object by address, the envelope, or a change set. */
function recordsOf(value) {
  if (Array.isArray(value)) return value;
  if (value && typeof value === 'object') {
    if ('upsert' in value && 'cursor' in value) return Object.entries(value.upsert).map(([key, r]) => ({ key, ...r }));
    if ('data' in value && 'status' in value) return recordsOf(value.data);
    return Object.values(value);
  }
  return [];
}

/** CSV's rows as records keyed by its header row (RFC 4180: quoted fields may hold commas, quotes and line breaks). */
function csvRecords(text) {
  const rows = [];
  let row = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c !== '"') field += c;
      else if (text[i + 1] === '"') field += text[i++];
      else quoted = false;
    } else if (c === '"') quoted = true;
    else if (c === ',') {
      row.push(field);
      field = '';
    } else if (c === '\r' && text[i + 1] === '\n') {
      row.push(field);
      rows.push(row);
      row = [];
      field = '';
      i++;
    } else field += c;
  }
  const [header = [], ...records] = rows;
  return { header, records: records.map((r) => Object.fromEntries(header.map((name, k) => [name, r[k]]))) };
}

function table(records, columns = [...new Set(records.slice(0, SHOWN).flatMap((r) => Object.keys(r)))]) {
  const head = el('tr', {}, ...columns.map((c) => el('th', { textContent: c })));
  const rows = records.slice(0, SHOWN).map((r) => el('tr', {}, ...columns.map((c) => el('td', { textContent: r[c] === undefined ? '' : String(r[c]) }))));
  return el('table', { className: 'records' }, el('thead', {}, head), el('tbody', {}, ...rows));
}

/** Bars of counts: each as long as its share of the largest. */
function bars(title, counts) {
  const entries = Object.entries(counts);
  const max = Math.max(1, ...entries.map(([, n]) => n));
  return el('div', { className: 'bars' }, el('h3', { textContent: title }),
    ...entries.map(([name, n]) => el('div', { className: 'bar' },
      el('span', { className: 'label', textContent: name }),
      el('span', { className: 'fill', style: `width: ${(n / max) * 100}%` }),
      el('span', { className: 'count', textContent: String(n) }))));
}

const more = (total) => (total > SHOWN ? [el('p', { className: 'note', textContent: `The first ${SHOWN} of ${total} are shown.` })] : []);

async function run() {
  const params = queryOf();
  if (params.get('key') === 'KEY') {
    showMessage('error', 'Type your access key first.');
    keyInput.focus();
    answer.dataset.runs = String(++runs);
    return;
  }
  runButton.disabled = true;
  const started = performance.now();
  try {
    // One request per press: a person on a limited key does not burn quota.
    const res = await fetch(`/api?${params}`);
    const text = await res.text();
    const ms = Math.round(performance.now() - started);
    if (!res.ok) {
      const retry = res.headers.get('retry-after');
      const wait = res.status === 429 && retry ? ` Retry in ${retry} s.` : '';
      // The seconds come from Retry-After, said once.
      const reason = text.split('\n')[0].replace(/^Error: /, '').replace(wait ? /;? *retry in \d+ s\.?$/i : /$^/, '');
      const hint = res.status === 401 ? ' Check the key above.' : '';
      showMessage('error', `${res.status}: ${reason}.${wait}${hint}`);
      return;
    }
    const status = el('p', { className: 'status', textContent: `${res.status} · ${text.length.toLocaleString()} bytes · ${ms} ms` });
    const type = res.headers.get('content-type') ?? '';
    const cursor = res.headers.get('list-cursor');
    const extra = cursor ? [el('p', { className: 'note' }, 'List-Cursor: ', el('code', { textContent: cursor }))] : [];
    if (type.startsWith('text/csv')) {
      const { header, records } = csvRecords(text);
      status.textContent += ` · ${records.length} rows`;
      answer.replaceChildren(status, ...extra, table(records, header), ...more(records.length));
      return;
    }
    if (!type.startsWith('application/json')) {
      const lines = text.split('\n').filter((l) => l !== '');
      status.textContent += ` · ${lines.length} lines`;
      answer.replaceChildren(status, ...extra, el('pre', { className: 'lines', textContent: lines.slice(0, SHOWN).join('\n') }), ...more(lines.length));
      return;
    }
    const value = JSON.parse(text);
    if (params.get('get') === 'stats') {
      status.textContent += ` · ${value.count} records`;
      const asns = Object.fromEntries((value.asn ?? []).map((a) => [`AS${a.asn} ${a.org}`.trim(), a.count]));
      answer.replaceChildren(status, el('div', { className: 'stats' }, bars('type', value.type), bars('anon', value.anon), bars('country', value.country), bars('asn', asns)));
      return;
    }
    const records = recordsOf(value);
    status.textContent += ` · ${records.length} records`;
    const removes = Array.isArray(value.remove) && value.remove.length > 0 ? [el('p', { className: 'note', textContent: `remove: ${value.remove.slice(0, SHOWN).join(' ')}` })] : [];
    answer.replaceChildren(status, ...extra, table(records), ...more(records.length), ...removes);
  } catch (err) {
    showMessage('error', `The request failed: ${err.message}`);
  } finally {
    runButton.disabled = false;
    answer.dataset.runs = String(++runs);
  }
}

form.addEventListener('input', update);
form.addEventListener('change', update);
form.addEventListener('submit', (e) => {
  e.preventDefault();
  void run();
});
keyInput.addEventListener('input', () => localStorage.setItem(KEY_STORE, keyInput.value.trim()));
document.getElementById('copy-url').addEventListener('click', (e) => copy(apiUrl(), e.currentTarget));
document.getElementById('copy-curl').addEventListener('click', (e) => copy(`curl ${shellQuote(apiUrl())}`, e.currentTarget));
runButton.addEventListener('click', () => void run());
update();
