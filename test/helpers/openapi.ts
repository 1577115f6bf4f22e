import { readFileSync } from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';
import * as assert from 'uvu/assert';

/** The repository's OpenAPI document (openapi.json). */
export const OPENAPI_PATH = new URL('../../../openapi.json', import.meta.url);
export const openapi = JSON.parse(readFileSync(OPENAPI_PATH, 'utf8')) as {
  paths: Record<string, Record<string, { parameters?: Array<{ $ref: string }>; responses: Record<string, { headers?: Record<string, { $ref?: string; schema?: unknown }> }> }>>;
  components: { parameters: Record<string, { name: string; in: string; schema: { enum?: string[]; items?: { enum?: string[] } } }>; headers: Record<string, { schema: unknown }>; schemas: Record<string, unknown> };
};

// The document is added whole, so its own $refs resolve; OpenAPI's keywords around the schemas are not JSON Schema's.
const ajv = new Ajv2020({ strict: false, allErrors: false, formats: { 'date-time': true } });
ajv.addSchema(openapi as object, 'openapi');
const schema = (pointer: string) => {
  const v = ajv.getSchema(`openapi#${pointer}`);
  if (!v) throw new Error(`no schema at ${pointer}`);
  return v;
};
const bodySchemas = Object.fromEntries(['TextList', 'ChangeLines', 'CsvList', 'CsvChanges', 'RecordArray', 'RecordMap', 'Envelope', 'ChangeSet', 'Stats', 'Error'].map((n) => [n, schema(`/components/schemas/${n}`)]));
const headerSchemas = Object.fromEntries(Object.keys(openapi.components.headers).map((n) => [n.toLowerCase(), schema(`/components/headers/${n}/schema`)]));

/** Fails unless a /usage 200 body is what the OpenAPI document says. */
export function assertUsageDocumented(body: unknown): void {
  const validate = schema('/components/schemas/Usage');
  assert.ok(validate(body), `/usage body: ${ajv.errorsText(validate.errors)}`);
}

/** Which of the document's body schemas an /api 200 for `query` must match. */
function bodySchemaOf(query: string): string {
  const p = new URLSearchParams(query);
  const one = (name: string) => p.getAll(name).find((v) => v !== '')?.toLowerCase();
  const get = one('get') ?? 'txt';
  if (get === 'stats') return 'Stats';
  if (get.startsWith('csv')) return one('since') !== undefined ? 'CsvChanges' : 'CsvList';
  if (one('since') !== undefined) return get.startsWith('txt') ? 'ChangeLines' : 'ChangeSet';
  if (get.startsWith('txt')) return 'TextList';
  if (one('wrap') === '1') return 'Envelope';
  return one('format') === 'object' ? 'RecordMap' : 'RecordArray';
}

/** Fails unless an /api answer to `query` (status, headers, body) is what the OpenAPI document says. */
export function assertDocumented(query: string, res: Response, body: string): void {
  const documented = openapi.paths['/api'].get.responses[String(res.status)];
  assert.ok(documented, `status ${res.status} of ?${query} is documented`);
  const name = res.status === 200 ? bodySchemaOf(query) : res.status === 304 ? null : 'Error';
  if (name) {
    const value = ['TextList', 'ChangeLines', 'CsvList', 'CsvChanges', 'Error'].includes(name) ? body : JSON.parse(body);
    const validate = bodySchemas[name];
    assert.ok(validate(value), `body of ?${query} against ${name}: ${ajv.errorsText(validate.errors)}`);
  }
  for (const [header, validate] of Object.entries(headerSchemas)) {
    const value = res.headers.get(header);
    if (value === null) continue;
    assert.ok(validate(value), `${header}: ${value} of ?${query}: ${ajv.errorsText(validate.errors)}`);
  }
  if (res.status === 200 || res.status === 304) assert.ok(res.headers.get('etag') && res.headers.get('snapshot-generated-at'), `validators of ?${query}`);
}
