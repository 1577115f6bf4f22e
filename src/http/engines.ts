import { CodedError } from '../core/errors.js';
import { ENGINE_CHOICES, type Engine, type EngineChoice } from './engine.js';
import { nodeEngine } from './node/node-engine.js';
import { uwsEngine } from './uws/uws-engine.js';
import { pinUws, uwsBuild, uwsRefused, uwsUnavailable } from './uws/load.js';

/** The engine chosen at start, and why the other was passed over (the `engine_selected` log line). */
export interface EngineSelection {
  engine: Engine;
  passedOver: string[];
  /** The builds of uWebSockets.js refused, unloaded, for their file's SHA-256 (`--uws-sha256`), and why. */
  refused: readonly string[];
}

/** `auto`, `uws` or `node` from the command line or PROXYLIST_ENGINE; anything else is refused. */
export function engineChoice(value: string | undefined): EngineChoice {
  if (value === undefined || value === '') return 'auto';
  if ((ENGINE_CHOICES as readonly string[]).includes(value)) return value as EngineChoice;
  throw new CodedError('E_USAGE', `--engine must be one of ${ENGINE_CHOICES.join(', ')}, not ${JSON.stringify(value)}`);
}

/**
 * The HTTP engine (docs/operations.md, Where it runs): `uws` where a native
 * build of uWebSockets.js loads, else `node`, unless the operator chose one.
 * `uws` where no build loads stops the start with what was tried. With
 * `uwsSha256`, a build whose `.node` file has another digest is passed
 * over unloaded.
 */
export function selectEngine(choice: EngineChoice, uwsSha256: readonly string[] = []): EngineSelection {
  pinUws(uwsSha256);
  if (choice === 'node') return { engine: nodeEngine(), passedOver: ['uws: not chosen (--engine node)'], refused: [] };
  const missing = uwsUnavailable();
  if (missing === null) return { engine: uwsEngine(), passedOver: uwsBuild().passedOver, refused: uwsRefused() };
  if (choice === 'uws') throw new CodedError('E_UWS_FALLBACK', missing.message);
  return { engine: nodeEngine(), passedOver: missing.passedOver.map((reason) => `uws (${reason})`), refused: uwsRefused() };
}
