import { sharedProductions } from '../helpers/shared-productions.js';

/**
 * One production per body when the budgets fall between the defaults and
 * none (test/http/bodies.test.ts has those): a cache too small for the body,
 * and no room for whole bodies past the cache.
 */
sharedProductions([
  { name: 'cache too small for the body: kept whole while read', options: { cacheBytes: 8 * 1024 * 1024 } },
  { name: 'cache on, no room for whole bodies past the cache: a ring of chunks', options: { cacheBytes: 8 * 1024 * 1024, wholeBodiesBytes: 0 } },
]);
