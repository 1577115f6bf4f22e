import { Counter, Gauge, Registry, collectDefaultMetrics, type CounterConfiguration } from 'prom-client';
import type { KeysInForce } from '../access/keys-feed.js';
import type { Clock } from '../core/clock.js';
import type { StoreFeed } from '../snapshot/snapshot-feed.js';
import { storesHeld } from '../store/store.js';
import type { BodySources } from '../bodies/sources.js';
import type { Selector } from '../query/selection.js';
import type { Turns } from './turns.js';
import type { ResponseCache } from '../bodies/response-cache.js';
import type { Sender } from './sender.js';
import type { Lifecycle } from './lifecycle.js';
import type { Waiters } from './waiters.js';
import type { Repeats } from './repeats.js';
import { SOCKET_PHASES, type LingerEnd, type SocketPhase } from './engine.js';

export type LimitKind = 'subnet' | 'frequency' | 'daily';

const LATENCY_BUCKETS = [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1];

/** One route's responses by status, and its latency histogram (per bucket, not cumulative). */
class RouteStats {
  readonly statuses = new Map<string, number>();
  readonly buckets = new Float64Array(LATENCY_BUCKETS.length + 1);
  sum = 0;
  count = 0;
}

/**
 * The Prometheus series of docs/operations.md, through prom-client, except the two
 * that every response updates: prom-client hashes a child's labels on each
 * update (microseconds a request, over 10% of the throughput of small
 * answers), so request counts and latencies are plain numbers here, written
 * out in the exposition format when /metrics is scraped. Everything about
 * snapshots, keys and the cache is read at scrape time too.
 */
export class Metrics {
  readonly registry = new Registry();
  private readonly rejections: Counter<'limit'>;
  private readonly lingerings: Counter<'end'>;
  private readonly socketErrors: Counter<'phase'>;
  private readonly routes = new Map<string, RouteStats>();

  /** `thread`: this serving thread's number (0 for the main one), for the responses each thread answered. */
  constructor(feed: StoreFeed, keys: KeysInForce, cache: ResponseCache, bodies: BodySources, selector: Selector, turns: Turns, sender: Sender, waiters: Waiters, repeats: Repeats, life: Lifecycle, clock: Clock, private readonly thread = 0) {
    const registers = [this.registry];
    // Event-loop delay sampled every millisecond: at the default 10 ms, every reading carries up to 10 ms of the sampling interval.
    collectDefaultMetrics({ register: this.registry, prefix: 'proxylist_', eventLoopMonitoringPrecision: 1 });
    this.rejections = new Counter({ name: 'proxylist_limit_rejections_total', help: 'Requests refused by a usage limit', labelNames: ['limit'], registers });
    this.lingerings = new Counter({ name: 'proxylist_lingering_closes_total', help: 'Connections closed after a refusal once what the client still sent was read and dropped, by how that ended: client (it closed), time or bytes (the bound ran out)', labelNames: ['end'], registers });
    this.socketErrors = new Counter({ name: 'proxylist_socket_errors_total', help: 'Client connections closed by an error on their socket (a reset, a broken pipe), by what the connection was doing: head (reading a request or idle), answer, held, linger, tunnel (CONNECT), handshake (TLS)', labelNames: ['phase'], registers });
    const gauge = (name: string, help: string, read: () => number) =>
      new Gauge({ name, help, registers, collect() { this.set(read()); } });
    // Totals kept elsewhere, exposed as counters: read when scraped.
    const counterFrom = (config: CounterConfiguration<string>, read: () => number) =>
      new Counter({ ...config, registers, collect() { this.reset(); this.inc(read()); } });
    // With --tls-cert only: a series that is absent says plain HTTP.
    if (life.tls) {
      const tls = life.tls;
      gauge('proxylist_tls_certificate_expiry_seconds', 'Seconds until the certificate in force expires (negative once it has)', () => tls.secondsLeft());
      counterFrom({ name: 'proxylist_tls_renewals_total', help: 'Certificates put in force after the one at start' }, () => tls.renewals);
      counterFrom({ name: 'proxylist_tls_renewal_failures_total', help: 'Changed certificate files that did not make a pair (the one in force stayed)' }, () => tls.failures);
    }
    gauge('proxylist_snapshot_records', 'Records in the snapshot being served', () => feed.current?.rows ?? 0);
    gauge('proxylist_snapshot_skipped_records', 'Records of the served snapshot that were skipped as invalid', () => feed.current?.meta.skipped ?? 0);
    gauge('proxylist_snapshot_age_seconds', 'Seconds since the served snapshot was generated', () =>
      feed.current ? clock.nowMs() / 1000 - feed.current.meta.generatedAt : -1);
    counterFrom({ name: 'proxylist_snapshot_reloads_ok_total', help: 'Snapshot versions loaded' }, () => feed.reloadsOk);
    counterFrom({ name: 'proxylist_snapshot_reloads_failed_total', help: 'Snapshot versions rejected' }, () => feed.reloadsFailed);
    counterFrom({ name: 'proxylist_response_cache_hits_total', help: 'Bodies answered from the response cache' }, () => bodies.cacheHits);
    counterFrom({ name: 'proxylist_response_cache_misses_total', help: 'Requests whose body was not in the response cache' }, () => bodies.cacheMisses);
    gauge('proxylist_response_cache_bytes', 'Bytes held by the response cache', () => cache.bytes);
    gauge('proxylist_responses_streaming', 'Responses whose bodies wait for slow clients to read', () => sender.pendingCount);
    counterFrom({ name: 'proxylist_body_productions_total', help: 'Bodies rendered (each shared by the requests that need it while it is produced)' }, () => bodies.productions);
    counterFrom({ name: 'proxylist_body_compressions_total', help: 'Bodies compressed (each shared likewise)' }, () => bodies.compressions);
    counterFrom({ name: 'proxylist_body_joins_total', help: 'Requests that joined a production or compression under way' }, () => bodies.joins);
    gauge('proxylist_body_productions_in_flight', 'Productions and compressions under way', () => bodies.inFlight);
    gauge('proxylist_body_budget_bytes', 'Bytes of the budget of bodies in flight (--bodies-mb) taken now', () => bodies.memory.budget.used);
    gauge('proxylist_body_budget_peak_bytes', 'The most bytes of that budget ever taken at once', () => bodies.memory.budget.peak);
    counterFrom({ name: 'proxylist_body_budget_refusals_total', help: 'Bodies or chunks not kept, and compressions sent plain, for want of room in the budget' }, () => bodies.memory.budget.refusals);
    gauge('proxylist_compressions_waiting', 'Compressions waiting for their turn (a few run at once)', () => bodies.slots.waiting);
    counterFrom({ name: 'proxylist_repeated_answers_total', help: 'Answers given as the one before to the same query in the same second: the key checked, the limiter asked, the remembered bytes written' }, () => repeats.hits);
    counterFrom({ name: 'proxylist_change_sets_total', help: 'Change sets worked out (since=), each shared by the held requests of one cursor and selection' }, () => selector.changeSets);
    gauge('proxylist_stores_held', 'Stores in memory, in every thread: the one served, and those swapped out until a collection lets go of them', storesHeld);
    gauge('proxylist_snapshot_history_snapshots', 'Snapshots the change sets still start from (--history-s)', () => feed.current?.history.snapshots.length ?? 0);
    gauge('proxylist_snapshot_history_bytes', 'Bytes of the history: 4 per record, 8 per key that left, and the versions', () => (feed.current ? feed.current.history.bytes : 0));
    gauge('proxylist_snapshot_history_versions', 'Versions of records that changed or left, kept for exact change sets (44 bytes each)', () => (feed.current ? feed.current.history.versionCount : 0));
    gauge('proxylist_requests_waiting_turn', 'Requests whose selection scans much of the store, waiting for their turn of the event loop', () => turns.waiting);
    counterFrom({ name: 'proxylist_request_turns_total', help: 'Requests answered in a turn of their own, their selection scanning much of the store' }, () => turns.ran);
    gauge('proxylist_requests_held', 'Requests with wait held until their answer changes', () => waiters.count);
    counterFrom({ name: 'proxylist_requests_held_total', help: 'Requests with wait that were held (their answer had not changed)' }, () => waiters.heldTotal);
    counterFrom({ name: 'proxylist_held_overflow_total', help: 'Requests with wait answered at once, as if without wait, because the process held --max-held requests already' }, () => waiters.overflowed);
    counterFrom({ name: 'proxylist_held_passes_total', help: 'Passes over the held requests after a swap or a second turning, each worked a slice per turn of the event loop' }, () => waiters.passes);
    counterFrom({ name: 'proxylist_held_pass_slices_total', help: 'Turns of the event loop those passes took' }, () => waiters.passSlices);
    gauge('proxylist_limiter_up', '1 while the usage limiter answers (always, in memory; with Redis, while Redis does)', () => (life.limiter === null || life.limiter.up ? 1 : 0));
    counterFrom({ name: 'proxylist_limiter_redirections_total', help: 'MOVED and ASK redirections a Redis Cluster answered and the limiter followed' }, () => life.limiter?.redirections ?? 0);
    counterFrom({ name: 'proxylist_limiter_map_refreshes_total', help: 'Slot maps of a Redis Cluster read' }, () => life.limiter?.mapRefreshes ?? 0);
    counterFrom({ name: 'proxylist_limiter_switches_total', help: 'Failovers the Sentinels announced and the limiter followed' }, () => life.limiter?.switches ?? 0);
    counterFrom({ name: 'proxylist_limiter_undone_total', help: 'Requests Redis accepted after this instance had answered them 503, taken back' }, () => life.limiter?.undone ?? 0);
    counterFrom({ name: 'proxylist_limiter_fallback_total', help: 'Admissions decided in memory while the Redis limiter was down (--limiter-fallback memory)' }, () => life.limiter?.fallbacks ?? 0);
    gauge('proxylist_accept_paused', '1 while new connections are refused for want of file descriptors', () => (life.listener?.paused ? 1 : 0));
    counterFrom({ name: 'proxylist_accept_pauses_total', help: 'Times accepting stopped for want of file descriptors' }, () => life.listener?.pauses ?? 0);
    gauge('proxylist_draining', '1 from SIGTERM until the instance stops', () => (life.draining ? 1 : 0));
    new Gauge({
      name: 'proxylist_engine_info', help: 'The HTTP engine that serves (uws or node) and its build: 1', labelNames: ['engine', 'build'], registers,
      collect() {
        this.set({ engine: life.engine.name, build: life.engine.build }, 1);
      },
    });
    gauge('proxylist_keys_loaded', 'Keys in force', () => keys.table.size);
    const origins = { snapshot: () => life.origin, keys: () => life.keysOrigin };
    new Gauge({
      name: 'proxylist_origin_failing', help: '1 while the last poll of the http(s) origin of the snapshot or the keys failed (what is in force stays); 0 otherwise, or without an origin', labelNames: ['what'], registers,
      collect() {
        for (const [what, origin] of Object.entries(origins)) this.set({ what }, (origin()?.lastError ?? null) === null ? 0 : 1);
      },
    });
    gauge('proxylist_keys_file_rejected', '1 while the keys file is missing or its last version was rejected (the keys in force stay)', () => (keys.lastError === null ? 0 : 1));
    for (const limit of ['subnet', 'frequency', 'daily'] as const) this.rejections.labels(limit).inc(0);
    for (const end of ['client', 'time', 'bytes'] as const) this.lingerings.labels(end).inc(0);
    for (const phase of SOCKET_PHASES) this.socketErrors.labels(phase).inc(0);
  }

  /**
   * The recorder of one route's responses: (status line, start time from
   * performance.now()). Label children are bound once, not looked up per request.
   */
  forRoute(route: string): (status: string, startedMs: number) => void {
    let stats = this.routes.get(route);
    if (!stats) this.routes.set(route, (stats = new RouteStats()));
    const s = stats;
    return (status, startedMs) => {
      s.statuses.set(status, (s.statuses.get(status) ?? 0) + 1);
      const seconds = (performance.now() - startedMs) / 1000;
      s.sum += seconds;
      s.count++;
      let b = 0;
      while (b < LATENCY_BUCKETS.length && seconds > LATENCY_BUCKETS[b]) b++;
      s.buckets[b]++;
    };
  }

  /** The whole exposition: prom-client's series, then the request counts and latencies. */
  async text(): Promise<string> {
    const lines = [
      '# HELP proxylist_http_requests_total Responses by route and status',
      '# TYPE proxylist_http_requests_total counter',
    ];
    for (const [route, stats] of this.routes) {
      for (const [status, n] of stats.statuses) lines.push(`proxylist_http_requests_total{route="${route}",status="${status.slice(0, 3)}"} ${n}`);
    }
    lines.push(
      '# HELP proxylist_http_request_duration_seconds Time from request to the end of the handler (a large body may still be streaming)',
      '# TYPE proxylist_http_request_duration_seconds histogram',
    );
    for (const [route, stats] of this.routes) {
      let cumulative = 0;
      LATENCY_BUCKETS.forEach((le, b) => {
        cumulative += stats.buckets[b];
        lines.push(`proxylist_http_request_duration_seconds_bucket{le="${le}",route="${route}"} ${cumulative}`);
      });
      lines.push(`proxylist_http_request_duration_seconds_bucket{le="+Inf",route="${route}"} ${stats.count}`);
      lines.push(`proxylist_http_request_duration_seconds_sum{route="${route}"} ${stats.sum}`);
      lines.push(`proxylist_http_request_duration_seconds_count{route="${route}"} ${stats.count}`);
    }
    // Per thread, so that an operator sees how the kernel spreads connections over them (docs/threads.md).
    let answered = 0;
    for (const stats of this.routes.values()) answered += stats.count;
    lines.push(
      '# HELP proxylist_thread_responses_total Responses by serving thread',
      '# TYPE proxylist_thread_responses_total counter',
      `proxylist_thread_responses_total{thread="${this.thread}"} ${answered}`,
    );
    return (await this.registry.metrics()) + lines.join('\n') + '\n';
  }

  rejected(limit: LimitKind): void {
    this.rejections.labels(limit).inc();
  }

  lingered(end: LingerEnd): void {
    this.lingerings.labels(end).inc();
  }

  socketFailed(phase: SocketPhase): void {
    this.socketErrors.labels(phase).inc();
  }
}
