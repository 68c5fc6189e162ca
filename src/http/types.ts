// The one HTTP client shape every collector and signal transport uses. Only src/http/ makes requests; everything else
// depends on this interface, so tests and callers never see Node's http.

export interface HttpRequest {
  url: string;
  method?: 'GET' | 'HEAD' | 'POST' | 'PUT' | 'DELETE';
  headers?: Record<string, string>;
  body?: string | Uint8Array;
  /**
   * Seconds one attempt may take in all: connect, TLS, headers and the whole body (upstream `timeout` options). Each
   * retry gets its own deadline.
   */
  timeoutSeconds?: number;
  /** Retries after a network error or 5xx (never after a 4xx). */
  retries?: number;
  /** Response body cap in bytes; larger answers fail with ERR_HTTP_TOO_LARGE. */
  maxBytes?: number;
  /** PEM CA bundle file to verify TLS with (upstream ca_certificate / ca_file). */
  caFile?: string;
  /** Skip TLS verification (zaqar's upstream default). */
  insecure?: boolean;
  signal?: AbortSignal;
}

export interface HttpResponse {
  statusCode: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
  /** Final URL, redacted for logging. */
  redactedUrl: string;
}

export interface HttpClient {
  /** Resolves for every HTTP status (the caller decides what a 304 or 404 means); rejects on transport failure. */
  request(req: HttpRequest): Promise<HttpResponse>;
}

/** A download's answer: its body went to the file named in the call. */
export interface HttpDownload {
  statusCode: number;
  headers: Record<string, string | string[] | undefined>;
  /** Bytes written to the file (the whole body of the last attempt). */
  bytes: number;
  /** Final URL, redacted for logging. */
  redactedUrl: string;
}

/** The client itself, which can also write a body to a file as it arrives (archives, large files). */
export interface DownloadingHttpClient extends HttpClient {
  /**
   * The body of `req` written to `file` as it arrives, never held in memory, with the timeout, retries and size cap of
   * request(). `file` is created 0600 and must not exist (a file or link already there is an error); each attempt
   * writes it from the start. Resolves for every status, whose body is then what the file holds; rejects on
   * transport failure. The caller removes the file when it is not wanted.
   */
  download(req: HttpRequest, file: string): Promise<HttpDownload>;
}
