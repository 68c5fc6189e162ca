import { readFile } from 'node:fs/promises';
import type { IncomingMessage } from 'node:http';
import type { RawData, WebSocket } from 'ws';
import { AgentError } from '../errors.js';
import { redactUrl } from '../log/redact.js';
import { isJsonObject, type JsonObject } from '../util/json-merge.js';
import { pythonJsonDumps } from '../util/python-json.js';

// One connection to Zaqar's websocket API (the `messaging-websocket` catalog service), shared by the zaqar collector
// and the ZAQAR_SIGNAL transport. The protocol, as python-zaqarclient's websocket transport and Zaqar's server speak
// it: every request is a JSON text frame {"action", "headers", "body"}; the first is `authenticate` with the Keystone
// token; every answer is {"request": {...}, "headers": {"status": N}, "body": ...}, in request order. Frames without a
// "request" are notifications Zaqar pushes for a subscription (the posted message, "Message_Type": "Notification").
//
// One request is in flight at a time, so an answer always belongs to the request before it. Every request carries
// Client-ID, X-Project-ID and the token (Zaqar checks the token at `authenticate` only; sending it each time costs
// nothing and keeps every frame self-describing). A 401, or Zaqar's 403 "Not authentified.", gets one fresh token and
// one more try. `ws` is loaded on the first connection only: agents without websockets never load it.

export type ZaqarSocketFailure = 'connect' | 'refused' | 'timeout' | 'closed' | 'malformed';

export class ZaqarSocketError extends AgentError {
  override name = 'ZaqarSocketError';
  /** Zaqar's status, for 'refused' (authenticate answered other than 200). */
  readonly status: number | undefined;
  constructor(
    readonly failure: ZaqarSocketFailure,
    message: string,
    options?: { cause?: unknown; status?: number },
  ) {
    super(failure === 'malformed' ? 'ERR_SOURCE_INVALID_DATA' : 'ERR_HTTP', message, options);
    this.status = options?.status;
  }
}

export interface ZaqarReply {
  readonly status: number;
  readonly body: unknown;
}

export interface ZaqarSocketOptions {
  readonly url: string;
  readonly projectId: string;
  /** A UUID naming this client to Zaqar (its Client-ID header). */
  readonly clientId: string;
  /** The Keystone token to use; `fresh` asks for a new one after Zaqar refused the last. */
  readonly token: (fresh: boolean) => Promise<string>;
  /** Bound on the opening handshake and on each answer. */
  readonly timeoutMs: number;
  /** Largest frame accepted; a bigger one closes the connection. */
  readonly maxBytes: number;
  readonly caFile?: string;
  readonly insecure?: boolean;
  /** Aborting closes the connection (shutdown). */
  readonly signal?: AbortSignal;
  readonly onNotification?: (message: JsonObject) => void;
  /**
   * Called once when the connection ends, whoever ended it. `reported`: a request in flight failed with it, so its
   * caller already knows.
   */
  readonly onClose?: (reason: string, reported: boolean) => void;
}

interface Waiting {
  readonly action: string;
  readonly resolve: (reply: ZaqarReply) => void;
  readonly reject: (err: ZaqarSocketError) => void;
  readonly timer: NodeJS.Timeout;
}

const AUTH_EXPIRED = 4003;
const TOO_BIG = 1009;

/** Open a connection and authenticate on it. Rejects with ZaqarSocketError (or the token callback's error). */
export async function openZaqarSocket(options: ZaqarSocketOptions): Promise<ZaqarSocket> {
  const where = redactUrl(options.url);
  let protocol: string;
  try {
    protocol = new URL(options.url).protocol;
  } catch {
    throw new ZaqarSocketError(
      'connect',
      `the Zaqar websocket endpoint ${where} is not a URL; check the messaging-websocket entry of the Keystone catalog`,
    );
  }
  if (!['ws:', 'wss:', 'http:', 'https:'].includes(protocol)) {
    throw new ZaqarSocketError(
      'connect',
      `the Zaqar websocket endpoint ${where} uses ${protocol}; only ws: and wss: are supported`,
    );
  }
  const { WebSocket } = await import('ws');
  const ca = options.caFile && !options.insecure ? await readFile(options.caFile) : undefined;
  let ws: WebSocket;
  try {
    ws = new WebSocket(options.url, {
      handshakeTimeout: options.timeoutMs,
      maxPayload: options.maxBytes,
      perMessageDeflate: false,
      followRedirects: false,
      ...(ca ? { ca } : {}),
      ...(options.insecure ? { rejectUnauthorized: false } : {}),
    });
  } catch (err) {
    // ws refuses some URLs up front (a fragment, for one).
    throw new ZaqarSocketError(
      'connect',
      `the Zaqar websocket endpoint ${where} cannot be used: ${err instanceof Error ? err.message : String(err)}`,
      { cause: err },
    );
  }
  const socket = new ZaqarSocket(ws, options, where);
  await socket.opened;
  const auth = await socket.request('authenticate');
  if (auth.status !== 200) {
    socket.close();
    throw new ZaqarSocketError(
      'refused',
      `Zaqar at ${where} refused the Keystone token (${auth.status}${errorText(auth.body)}); check the credentials`,
      { status: auth.status },
    );
  }
  return socket;
}

export class ZaqarSocket {
  readonly opened: Promise<void>;
  private waiting: Waiting | undefined;
  private chain: Promise<unknown> = Promise.resolve();
  private ended: string | undefined;
  private lastError: Error | undefined;
  private readonly onAbort = () => this.close('the agent is shutting down');
  private handshakeTimedOut = false;

  constructor(
    private readonly ws: WebSocket,
    private readonly options: ZaqarSocketOptions,
    private readonly where: string,
  ) {
    // The connection must not keep a one-shot command alive; the daemon has its own timers.
    ws.on('upgrade', (res: IncomingMessage) => res.socket.unref());
    ws.on('message', (data: RawData, isBinary: boolean) => this.onFrame(data, isBinary));
    ws.on('error', (err: Error) => {
      this.lastError = err;
    });
    // ws's handshakeTimeout is an idle timeout: a server sending a header line now and then resets it forever. The
    // whole opening handshake gets the timeout instead.
    const deadline = setTimeout(() => {
      this.handshakeTimedOut = true;
      ws.terminate();
    }, options.timeoutMs);
    this.opened = new Promise<void>((resolve, reject) => {
      ws.once('open', () => {
        clearTimeout(deadline);
        resolve();
      });
      ws.on('close', (code: number, reason: Buffer) => {
        clearTimeout(deadline);
        const why = this.closeReason(code, reason.toString('utf8'));
        reject(
          new ZaqarSocketError('connect', `could not open the Zaqar websocket at ${where}: ${why}`, {
            cause: this.lastError,
          }),
        );
        this.finish(why, false);
      });
    });
    // Callers await `opened`; this keeps an early failure from being an unhandled rejection meanwhile.
    this.opened.catch(() => undefined);
    if (options.signal?.aborted) this.onAbort();
    else options.signal?.addEventListener('abort', this.onAbort, { once: true });
  }

  get isOpen(): boolean {
    return this.ended === undefined;
  }

  /** Send one request and wait for its answer; requests are queued so one is in flight at a time. */
  request(action: string, body?: JsonObject): Promise<ZaqarReply> {
    const run = this.chain.then(() => this.withRenewal(action, body));
    this.chain = run.catch(() => undefined);
    return run;
  }

  /** End the connection; a request in flight fails as closed. */
  close(reason = 'closed by the agent'): void {
    this.end(reason, false);
  }

  private end(reason: string, reported: boolean): void {
    if (this.ended !== undefined) return;
    this.finish(reason, reported);
    this.ws.terminate();
  }

  private async withRenewal(action: string, body: JsonObject | undefined): Promise<ZaqarReply> {
    const reply = await this.exchange(action, body, await this.options.token(false));
    if (!refusesToken(reply)) return reply;
    const fresh = await this.options.token(true);
    if (action !== 'authenticate') {
      const auth = await this.exchange('authenticate', undefined, fresh);
      if (auth.status !== 200) return auth;
    }
    return this.exchange(action, body, fresh);
  }

  private exchange(action: string, body: JsonObject | undefined, token: string): Promise<ZaqarReply> {
    if (this.ended !== undefined) return Promise.reject(this.closedError(action));
    const headers = {
      'Client-ID': this.options.clientId,
      'X-Project-ID': this.options.projectId,
      'X-Auth-Token': token,
    };
    // Python's json format: a signal body keeps its exact numbers, NaN and Infinity (Zaqar reads them as heat-config wrote them).
    const frame = pythonJsonDumps(body === undefined ? { action, headers } : { action, headers, body });
    return new Promise<ZaqarReply>((resolve, reject) => {
      const timer = setTimeout(() => {
        const seconds = Math.round(this.options.timeoutMs / 100) / 10;
        this.fail(
          new ZaqarSocketError('timeout', `Zaqar at ${this.where} did not answer ${action} within ${seconds} s`),
        );
      }, this.options.timeoutMs);
      this.waiting = { action, resolve, reject, timer };
      this.ws.send(frame, (err) => {
        if (err)
          this.fail(
            new ZaqarSocketError('closed', `could not send ${action} to Zaqar at ${this.where}: ${err.message}`, {
              cause: err,
            }),
          );
      });
    });
  }

  private onFrame(data: RawData, isBinary: boolean): void {
    let frame: unknown;
    try {
      if (isBinary) throw new Error('binary frame');
      frame = JSON.parse(rawText(data));
    } catch {
      return this.fail(new ZaqarSocketError('malformed', `Zaqar at ${this.where} sent a frame that is not JSON text`));
    }
    if (!isJsonObject(frame))
      return this.fail(
        new ZaqarSocketError('malformed', `Zaqar at ${this.where} sent a frame that is not a JSON object`),
      );
    if (!('request' in frame)) {
      this.options.onNotification?.(frame);
      return;
    }
    const status = isJsonObject(frame.headers) ? Number(frame.headers.status) : NaN;
    if (!Number.isInteger(status))
      return this.fail(new ZaqarSocketError('malformed', `Zaqar at ${this.where} sent an answer without a status`));
    const waiting = this.waiting;
    // An answer nobody waits for (after a timeout closed the exchange) cannot be matched: ignore it.
    if (!waiting) return;
    this.waiting = undefined;
    clearTimeout(waiting.timer);
    waiting.resolve({ status, body: frame.body });
  }

  /** A failure of the connection itself: what is in flight fails, and the connection is not trusted again. */
  private fail(err: ZaqarSocketError): void {
    const waiting = this.waiting;
    this.waiting = undefined;
    if (waiting) {
      clearTimeout(waiting.timer);
      waiting.reject(err);
    }
    this.end(err.message, waiting !== undefined);
  }

  private finish(reason: string, reported: boolean): void {
    if (this.ended !== undefined) return;
    this.ended = reason;
    this.options.signal?.removeEventListener('abort', this.onAbort);
    const waiting = this.waiting;
    this.waiting = undefined;
    if (waiting) {
      clearTimeout(waiting.timer);
      waiting.reject(this.closedError(waiting.action));
    }
    this.options.onClose?.(reason, reported || waiting !== undefined);
  }

  private closedError(action: string): ZaqarSocketError {
    return new ZaqarSocketError(
      'closed',
      `the Zaqar websocket at ${this.where} closed before the answer to ${action}: ${this.ended ?? 'closed'}`,
      { cause: this.lastError },
    );
  }

  private closeReason(code: number, reason: string): string {
    if (this.handshakeTimedOut)
      return `the opening handshake did not finish within ${Math.round(this.options.timeoutMs / 100) / 10} s`;
    if (code === AUTH_EXPIRED) return 'Zaqar ended the session: the token expired';
    if (code === TOO_BIG || errorCodeOf(this.lastError) === 'WS_ERR_UNSUPPORTED_MESSAGE_LENGTH')
      return 'a frame was larger than the limit ([agent] max_source_bytes)';
    if (this.lastError) return this.lastError.message;
    const text = reason.replace(/\s+/g, ' ').trim().slice(0, 200);
    return `closed by the server (code ${code}${text ? `, ${text}` : ''})`;
  }
}

/** Zaqar's answer to a missing or rejected token: 401 from authenticate, 403 "Not authentified." otherwise. */
function refusesToken(reply: ZaqarReply): boolean {
  if (reply.status === 401) return true;
  return reply.status === 403 && isJsonObject(reply.body) && reply.body.error === 'Not authentified.';
}

/** Zaqar's error text from an answer body, for a message: " (text)" or "". */
export function errorText(body: unknown): string {
  if (!isJsonObject(body)) return '';
  const text = [body.error, body.exception].filter((v): v is string => typeof v === 'string' && v !== '').join(': ');
  return text ? ` (${text.replace(/\s+/g, ' ').slice(0, 200)})` : '';
}

function errorCodeOf(err: Error | undefined): unknown {
  return err && 'code' in err ? err.code : undefined;
}

function rawText(data: RawData): string {
  if (Array.isArray(data)) return Buffer.concat(data).toString('utf8');
  if (data instanceof ArrayBuffer) return Buffer.from(data).toString('utf8');
  return data.toString('utf8');
}
